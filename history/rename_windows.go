package history

import (
	"os"

	"golang.org/x/sys/windows"
)

// renameFile renames oldpath over newpath with MoveFileEx and
// MOVEFILE_WRITE_THROUGH, which returns only once the rename is flushed to
// disk: Windows has no folder fsync (fsyncDir does nothing there), and
// os.Rename does not ask for write-through.
func renameFile(oldpath, newpath string) error {
	from, err := windows.UTF16PtrFromString(oldpath)
	if err != nil {
		return err
	}
	to, err := windows.UTF16PtrFromString(newpath)
	if err != nil {
		return err
	}
	if err := windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}
