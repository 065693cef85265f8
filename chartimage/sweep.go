package chartimage

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// profilePrefix starts the name of a browser profile folder, followed by
// the pid of the server that made it: km-chart-<pid>-<random> (short: see
// maxTmpDirLen).
const profilePrefix = "km-chart-"

var swept sync.Map // temp dir -> struct{}: swept once per process

// sweepStaleProfiles removes, once per process and folder, the browser
// profiles of servers that no longer run: a server killed with SIGKILL
// takes its browser with it (Pdeathsig) but cannot remove its profile.
func sweepStaleProfiles(base string) {
	if _, done := swept.LoadOrStore(base, struct{}{}); done {
		return
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), profilePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processExists(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}
