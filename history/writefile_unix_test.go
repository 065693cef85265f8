//go:build unix

package history

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFileObeysUmask: the file and the folders WriteFile creates get
// their modes less the umask, as os.WriteFile and mkdir -p would give. Not
// parallel: the umask belongs to the whole process.
func TestWriteFileObeysUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "new", "out.txt")
	if err := WriteFile(path, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	// Replacing a file does not keep its mode either: the new file is new.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("y"), 0o666); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o640, filepath.Dir(path): 0o750} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v (0666/0777 less umask 027)", p, got, want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "y" {
		t.Errorf("content %q, want y", b)
	}
	if des, _ := os.ReadDir(filepath.Dir(path)); len(des) != 1 {
		t.Errorf("temporary files left behind: %v", des)
	}
}
