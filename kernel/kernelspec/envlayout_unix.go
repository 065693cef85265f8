//go:build unix

package kernelspec

import (
	"path/filepath"
	"runtime"
	"strings"
)

// envsOfScriptsDir returns the env roots a program in dir may belong to:
// pip installs scripts in <env>/bin, in virtualenvs and conda envs alike.
func envsOfScriptsDir(dir string) []string {
	if filepath.Base(dir) != "bin" {
		return nil
	}
	return []string{filepath.Dir(dir)}
}

// envPythons are an env's pythons, in the order they are tried.
func envPythons(env string) []string {
	return []string{filepath.Join(env, "bin", "python3"), filepath.Join(env, "bin", "python")}
}

// uvCacheDirs are uv's default cache directories: $XDG_CACHE_HOME/uv, else
// ~/.cache/uv (on macOS too), and on macOS the ~/Library/Caches/uv of
// older uv releases.
func uvCacheDirs(getenv func(string) string) []string {
	var out []string
	if x := getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		out = append(out, filepath.Join(x, "uv"))
	}
	if home := getenv("HOME"); home != "" {
		out = append(out, filepath.Join(home, ".cache", "uv"))
		if runtime.GOOS == "darwin" {
			out = append(out, filepath.Join(home, "Library", "Caches", "uv"))
		}
	}
	return out
}

// samePathName compares two names of a path's components.
func samePathName(a, b string) bool { return a == b }

// pathWithin reports whether p is root or inside it (both clean).
func pathWithin(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
