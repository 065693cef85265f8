package kernelspec

import (
	"path/filepath"
	"strings"
)

// envsOfScriptsDir returns the env roots a program in dir may belong to:
// pip installs scripts in <env>\Scripts, in virtualenvs and conda envs
// alike; a conda env's own programs are also in <env> itself.
func envsOfScriptsDir(dir string) []string {
	var out []string
	if strings.EqualFold(filepath.Base(dir), "Scripts") {
		out = append(out, filepath.Dir(dir))
	}
	if isCondaEnv(dir) {
		out = append(out, dir)
	}
	return out
}

// envPythons are an env's pythons, in the order they are tried: a
// virtualenv's Scripts\python.exe, a conda env's python.exe.
func envPythons(env string) []string {
	return []string{filepath.Join(env, "Scripts", "python.exe"), filepath.Join(env, "python.exe")}
}

// uvCacheDirs are uv's default cache directories: %LOCALAPPDATA%\uv\cache.
func uvCacheDirs(getenv func(string) string) []string {
	if d := getenv("LOCALAPPDATA"); d != "" {
		return []string{filepath.Join(d, "uv", "cache")}
	}
	return nil
}

// samePathName compares two names of a path's components; Windows names
// are case-insensitive.
func samePathName(a, b string) bool { return strings.EqualFold(a, b) }

// pathWithin reports whether p is root or inside it (both clean),
// ignoring case.
func pathWithin(p, root string) bool {
	p, root = strings.ToLower(p), strings.ToLower(root)
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, `\`)+`\`)
}
