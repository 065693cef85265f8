//go:build unix

package kernel

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A connection file that is a FIFO is refused at once: reading it would
// block until someone writes to it, and a device such as /dev/zero would
// never end.
func TestReadConnectionFileRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "kernel.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		if _, err := ReadConnectionFile(p); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
			t.Errorf("ReadConnectionFile(%s): %v, want a refusal", p, err)
		}
	}
}
