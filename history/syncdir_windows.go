package history

import "os"

// fsyncDir does nothing on Windows: a folder cannot be opened for fsync
// there. The rename that replaces a file is write-through instead
// (renameFile), and NTFS journals the creation and removal of files.
func fsyncDir(string) error { return nil }

// fsyncDirIn does nothing on Windows either (see fsyncDir).
func fsyncDirIn(*os.Root, string) error { return nil }
