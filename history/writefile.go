package history

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: it creates missing parent
// folders, writes a temporary file in the same folder, fsyncs it, renames
// it over path and fsyncs the folder. A reader sees either the old file or
// the new one, never a part. An error that matches ErrNotDurable means the
// new file is in place but the folder sync failed. The file is created with perm and the folders
// with 0777, both less the process's umask, as os.WriteFile and mkdir -p
// would; the mode of a file it replaces is not kept. Errors name the path.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := writeFileAtomic(path, data, perm, 0o777); err != nil {
		return fmt.Errorf("history: write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic is WriteFile with the folder mode as a parameter and an
// unwrapped error.
func writeFileAtomic(path string, data []byte, perm, dirPerm os.FileMode) error {
	return writeAtomic(hostFiles, path, data, perm, dirPerm)
}

// fileCalls are the calls an atomic write makes: on names of the host
// (hostFiles), or through an os.Root (rootFiles).
type fileCalls struct {
	mkdirAll func(dir string, perm os.FileMode) error
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)
	remove   func(name string) error
	rename   func(from, to string) error
	syncDir  func(dir string) error
}

var hostFiles = fileCalls{
	mkdirAll: os.MkdirAll,
	openFile: os.OpenFile,
	remove:   os.Remove,
	rename:   renameFile,
	syncDir:  func(dir string) error { return syncDir(dir) },
}

func rootFiles(root *os.Root) fileCalls {
	return fileCalls{
		mkdirAll: root.MkdirAll,
		openFile: root.OpenFile,
		remove:   root.Remove,
		rename:   root.Rename,
		syncDir:  func(dir string) error { return syncDirIn(root, dir) },
	}
}

// writeAtomic writes data to a temporary file beside path, syncs it and
// renames it onto path, then syncs the folder.
func writeAtomic(fc fileCalls, path string, data []byte, perm, dirPerm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := fc.mkdirAll(dir, dirPerm); err != nil {
		return err
	}
	f, tmp, err := createTemp(fc, dir, "."+filepath.Base(path)+".tmp-", perm)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			fc.remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fc.rename(tmp, path); err != nil {
		return err
	}
	// From here on the new content is the file, whatever else fails.
	ok = true
	return notDurable(fc.syncDir(dir))
}

// notDurable marks err, a failed folder fsync after a change that is
// already visible, with ErrNotDurable; nil stays nil.
func notDurable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("the change is in place, but its folder could not be synced, so it may not survive a crash (%w): %w", ErrNotDurable, err)
}

// syncDir is fsyncDir, or a fault a test puts in its place.
var syncDir = fsyncDir

// createTemp creates a new file dir/prefix<random> with mode perm less the
// umask, and returns it with its name. os.CreateTemp always uses 0600, and
// a Chmod afterwards would ignore the umask; reading the umask means
// changing it, for every thread.
func createTemp(fc fileCalls, dir, prefix string, perm os.FileMode) (*os.File, string, error) {
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := fc.openFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("no free temporary name in %s", dir)
}

// ErrNotDurable is wrapped by the errors of writes whose new content is in
// place but whose folder could not be fsynced: readers see the change, but
// it may not survive a crash.
var ErrNotDurable = errors.New("durability not confirmed")

// WriteFileIn is WriteFile for name, a path relative to root: the missing
// folders, the temporary file, the rename and the folder sync all go
// through root, so a symlink that leads out of it, whether there when the
// call starts or swapped in meanwhile, fails the write (os.Root's "path
// escapes from parent") instead of writing outside. Errors name name.
func WriteFileIn(root *os.Root, name string, data []byte, perm os.FileMode) error {
	if err := writeAtomic(rootFiles(root), name, data, perm, 0o777); err != nil {
		return fmt.Errorf("history: write %s: %w", name, err)
	}
	return nil
}

// syncDirIn is fsyncDirIn, or a fault a test puts in its place.
var syncDirIn = fsyncDirIn
