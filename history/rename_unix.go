//go:build !windows

package history

import "os"

// renameFile renames oldpath over newpath; a folder fsync makes it durable.
func renameFile(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
