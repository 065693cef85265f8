package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFileIn: a write through a root makes the missing folders and
// replaces the file inside it, follows a link that stays inside, and
// refuses one that leads out, leaving nothing behind on either side. A
// failed folder sync is ErrNotDurable, with the file in place.
func TestWriteFileIn(t *testing.T) {
	dir := t.TempDir()
	inside, outside := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	for _, d := range []string{filepath.Join(inside, "real"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(inside, "leads-out")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if err := os.Symlink("real", filepath.Join(inside, "stays-in")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(inside)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	for _, name := range []string{"a/b/new.txt", "a/b/new.txt", "stays-in/c.txt"} {
		if err := WriteFileIn(root, name, []byte("x"), 0o666); err != nil {
			t.Errorf("WriteFileIn(%s): %v", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(inside, "real", "c.txt")); string(b) != "x" {
		t.Errorf("through the link inside: %q, %v", b, err)
	}
	for _, name := range []string{"leads-out/x.txt", "leads-out/sub/x.txt", "../out/x.txt"} {
		err := WriteFileIn(root, name, []byte("LEAK"), 0o666)
		if err == nil || !strings.Contains(err.Error(), "escapes") {
			t.Errorf("WriteFileIn(%s) = %v, want a refusal", name, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the root: %v", ents)
	}
	for _, d := range []string{filepath.Join(inside, "a", "b"), filepath.Join(inside, "real")} {
		if ents, _ := os.ReadDir(d); len(ents) != 1 {
			t.Errorf("%s holds %v, want the one file", d, ents)
		}
	}

	failFolderSync(t)
	if err := WriteFileIn(root, "a/b/new.txt", []byte("y"), 0o666); !errors.Is(err, ErrNotDurable) {
		t.Errorf("with a failed folder sync: %v, want ErrNotDurable", err)
	}
	if b, _ := os.ReadFile(filepath.Join(inside, "a", "b", "new.txt")); string(b) != "y" {
		t.Errorf("after a failed folder sync the file holds %q", b)
	}
}
