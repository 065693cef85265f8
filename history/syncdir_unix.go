//go:build !windows

package history

import (
	"errors"
	"os"
	"syscall"
)

// fsyncDir fsyncs a folder so that a file created or renamed in it survives
// a crash. File systems that cannot sync a folder (EINVAL, ENOTSUP) are not
// an error: there is nothing more to do on them.
func fsyncDir(dir string) error {
	return fsyncOpened(os.Open(dir))
}

// fsyncDirIn is fsyncDir for a folder inside root, opened through it.
func fsyncDirIn(root *os.Root, dir string) error {
	return fsyncOpened(root.Open(dir))
}

func fsyncOpened(d *os.File, err error) error {
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
