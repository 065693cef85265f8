package chartimage

import (
	"fmt"
	"os/exec"
	"strings"
)

// FindBrowser finds a Chrome, Chromium or Edge the way kaleido does: by its
// usual names on PATH, then in the places the platform installs it
// (browserLocations, in the platform's file).
func FindBrowser() (string, error) {
	locs := browserLocations()
	for _, p := range locs {
		if found, err := exec.LookPath(p); err == nil {
			return found, nil
		}
	}
	return "", fmt.Errorf("%w (looked for %s); install one, or name it with --browser", ErrNoBrowser, strings.Join(locs, ", "))
}
