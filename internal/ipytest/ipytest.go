// Package ipytest gives the kernels that tests start an IPython history
// of their own.
//
// Every IPython kernel of a user writes its input history to one SQLite
// file, ~/.ipython/profile_default/history.sqlite. When many kernels start
// at once, as parallel tests start them on a loaded machine, two can take
// the same session number, and IPython then prints "ERROR! Session/line
// number was not unique in database. History logging moved to new
// session N" into a cell's stdout, which a test comparing outputs reads as
// a difference. Tests that start kernels call MemoryHistory in TestMain,
// and Require in each test that needs a kernel.
package ipytest

import (
	"os"
	"path/filepath"
)

// MemoryHistory points IPYTHONDIR, for this process and every kernel it
// starts, at a new temporary folder whose kernel profile keeps the history
// in memory only (HistoryManager.hist_file = ':memory:'). The returned
// function removes the folder and restores IPYTHONDIR.
func MemoryHistory() (restore func(), err error) {
	dir, err := os.MkdirTemp("", "kernel-mcp-ipython-")
	if err != nil {
		return nil, err
	}
	profile := filepath.Join(dir, "profile_default")
	if err := os.Mkdir(profile, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	config := []byte("c.HistoryManager.hist_file = ':memory:'\n")
	for _, name := range []string{"ipython_kernel_config.py", "ipython_config.py"} {
		if err := os.WriteFile(filepath.Join(profile, name), config, 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	old, had := os.LookupEnv("IPYTHONDIR")
	os.Setenv("IPYTHONDIR", dir)
	return func() {
		if had {
			os.Setenv("IPYTHONDIR", old)
		} else {
			os.Unsetenv("IPYTHONDIR")
		}
		os.RemoveAll(dir)
	}, nil
}
