package history

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: it creates missing parent
// folders (0755), writes a temporary file in the same folder, fsyncs it,
// renames it over path and fsyncs the folder. A reader sees either the old
// file or the new one, never a part. Errors name the path.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := writeFileAtomic(path, data, perm, 0o755); err != nil {
		return fmt.Errorf("history: write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic is WriteFile with the folder mode as a parameter and an
// unwrapped error.
func writeFileAtomic(path string, data []byte, perm, dirPerm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}
