// Package testdisk gives tests a small filesystem they can fill, to see
// what a full disk does to the code under test.
package testdisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a 1 MiB tmpfs for t and returns its folder and a function
// that fills it to the last byte with a file whose path it returns
// (removing the file frees the space). The tmpfs is unmounted when t ends.
// Mounting needs root: without it t is skipped, or fails under CI=true.
func Small(t *testing.T) (dir string, fill func() string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mounting a small tmpfs needs root")
		}
		t.Skip("mounting a small tmpfs needs root")
	}
	dir = filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	fill = func() string {
		t.Helper()
		f, err := os.CreateTemp(dir, "filler-")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := make([]byte, 4096)
		for len(chunk) > 0 {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				chunk = chunk[:len(chunk)/2]
			}
		}
		return f.Name()
	}
	return dir, fill
}
