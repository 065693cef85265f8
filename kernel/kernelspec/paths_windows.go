package kernelspec

import (
	"os"
	"path/filepath"
)

// userDataDir returns the user's Jupyter data directory (%APPDATA%\jupyter),
// or "" when it is unknown. JUPYTER_DATA_DIR overrides it, as in Jupyter.
func userDataDir(getenv func(string) string) string {
	if d := getenv("JUPYTER_DATA_DIR"); d != "" {
		return d
	}
	if a := getenv("APPDATA"); a != "" {
		return filepath.Join(a, "jupyter")
	}
	if h := getenv("USERPROFILE"); h != "" {
		return filepath.Join(h, "AppData", "Roaming", "jupyter")
	}
	return ""
}

// homeDir returns the user's home directory from the environment.
func homeDir(getenv func(string) string) string { return getenv("USERPROFILE") }

// systemKernelDirs returns the system-wide kernels directories.
func systemKernelDirs(getenv func(string) string) []string {
	pd := getenv("PROGRAMDATA")
	if pd == "" {
		return nil
	}
	return []string{filepath.Join(pd, "jupyter", "kernels")}
}

// envPython returns the python executable of a conda prefix.
func envPython(prefix string) string { return filepath.Join(prefix, "python.exe") }

// pathPythonNames are the names looked up on PATH, in order.
var pathPythonNames = []string{"python3", "python"}

// interpreterPATHNames are the names Interpreters looks up on PATH.
var interpreterPATHNames = pathPythonNames

// isExecutable reports whether fi is a regular file; Windows has no execute bit.
func isExecutable(fi os.FileInfo) bool { return fi.Mode().IsRegular() }
