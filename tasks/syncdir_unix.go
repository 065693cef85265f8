//go:build !windows

package tasks

import "os"

// syncDir fsyncs a folder, so that a file renamed into it stays there
// after a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
