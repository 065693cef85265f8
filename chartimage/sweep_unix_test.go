//go:build unix

package chartimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A killed server's browser profile is removed by the next renderer; a
// running server's, and folders of other names, are not.
func TestSweepStaleProfiles(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, profilePrefix+strconv.Itoa(dead.Process.Pid)+"-1")
	live := filepath.Join(base, profilePrefix+strconv.Itoa(os.Getppid())+"-2")
	other := filepath.Join(base, profilePrefix+"x-3")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "Default"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepStaleProfiles(base)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead server's profile is still there: %v", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
