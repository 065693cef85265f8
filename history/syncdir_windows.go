package history

// fsyncDir does nothing on Windows: a folder cannot be opened for fsync
// there. The rename that replaces a file is write-through instead
// (renameFile), and NTFS journals the creation and removal of files.
func fsyncDir(string) error { return nil }
