package history

// syncDir does nothing on Windows: a folder cannot be opened for fsync there,
// and NTFS journals renames itself.
func syncDir(string) error { return nil }
