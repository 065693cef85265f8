//go:build unix

package kernelspec

import (
	"os"
	"path/filepath"
	"runtime"
)

// userDataDir returns the user's Jupyter data directory, or "" when the
// home directory is unknown. JUPYTER_DATA_DIR overrides it, as in Jupyter.
func userDataDir(getenv func(string) string) string {
	if d := getenv("JUPYTER_DATA_DIR"); d != "" {
		return d
	}
	home := getenv("HOME")
	if runtime.GOOS == "darwin" {
		if home == "" {
			return ""
		}
		return filepath.Join(home, "Library", "Jupyter")
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "jupyter")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share", "jupyter")
}

// homeDir returns the user's home directory from the environment.
func homeDir(getenv func(string) string) string { return getenv("HOME") }

// systemKernelDirs returns the system-wide kernels directories.
func systemKernelDirs(func(string) string) []string {
	return []string{"/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels"}
}

// envPython returns the python executable of a conda (or venv-like) prefix.
func envPython(prefix string) string { return filepath.Join(prefix, "bin", "python") }

// pathPythonNames are the names looked up on PATH, in order.
var pathPythonNames = []string{"python3"}

// interpreterPATHNames are the names Interpreters looks up on PATH.
var interpreterPATHNames = []string{"python3", "python"}

// isExecutable reports whether fi is a regular file with an execute bit set.
func isExecutable(fi os.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
