package chartimage

import (
	"os"
	"path/filepath"
)

func browserLocations() []string {
	var locs []string
	for _, env := range []string{"ProgramFiles", "ProgramFiles(x86)", "LocalAppData"} {
		if d := os.Getenv(env); d != "" {
			locs = append(locs,
				filepath.Join(d, `Google\Chrome\Application\chrome.exe`),
				filepath.Join(d, `Chromium\Application\chrome.exe`),
				filepath.Join(d, `Microsoft\Edge\Application\msedge.exe`))
		}
	}
	return append(locs, "chrome.exe", "msedge.exe")
}
