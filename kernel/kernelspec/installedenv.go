package kernelspec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The installed env: when kernel-mcp was installed with pip into a Python
// environment (a virtualenv or a conda env), the program sits in that
// env's scripts folder next to its python, and that python is the one the
// person meant. Tool environments are different: uv's (uv tool install and
// uvx) and pipx's hold kernel-mcp alone, are replaced on every upgrade, and
// uvx's live in uv's cache, so code is never run, nor packages installed,
// in them.

// Markers of the tool environments that are never chosen.
const (
	uvReceipt     = "uv-receipt.toml"    // uv tool install writes it in each tool's env
	pipxMetadata  = "pipx_metadata.json" // pipx install and pipx run write it in each env
	uvArchiveName = "archive-v0"         // uvx's ephemeral envs are uv cache entries <cache>/archive-v0/<hash>/
)

// installedEnvPython returns the python of the Python environment the
// executable exe (symlinks resolved) is installed in, or "" when exe is not
// in one, the env is a tool env, or it has no python. It runs nothing.
func installedEnvPython(exe string, getenv func(string) string) string {
	if exe == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	exe = filepath.Clean(exe)
	for _, env := range envsOfScriptsDir(filepath.Dir(exe)) {
		if !isPythonEnv(env) {
			continue
		}
		if isToolEnv(env, getenv) {
			return ""
		}
		for _, p := range envPythons(env) {
			if fileExists(p) {
				return p
			}
		}
		return ""
	}
	return ""
}

// isPythonEnv reports whether dir is the root of a virtualenv (pyvenv.cfg)
// or of a conda env (conda-meta/).
func isPythonEnv(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "pyvenv.cfg")); err == nil && fi.Mode().IsRegular() {
		return true
	}
	return isCondaEnv(dir)
}

// isCondaEnv reports whether dir is the root of a conda env.
func isCondaEnv(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "conda-meta"))
	return err == nil && fi.IsDir()
}

// isToolEnv reports whether env is one of uv's or pipx's tool envs.
func isToolEnv(env string, getenv func(string) string) bool {
	for _, m := range []string{uvReceipt, pipxMetadata} {
		if fileExists(filepath.Join(env, m)) {
			return true
		}
	}
	for _, part := range strings.Split(filepath.ToSlash(env), "/") {
		if samePathName(part, uvArchiveName) {
			return true
		}
	}
	caches := uvCacheDirs(getenv)
	if d := getenv("UV_CACHE_DIR"); d != "" {
		caches = append(caches, d)
	}
	for _, c := range caches {
		if !filepath.IsAbs(c) {
			continue
		}
		c = filepath.Clean(c)
		if pathWithin(env, c) {
			return true
		}
		if real, err := filepath.EvalSymlinks(c); err == nil && pathWithin(env, real) {
			return true
		}
	}
	return false
}

// installedPython is the installed env's python for opts (its Executable,
// else the running program), or "".
func (f finder) installedPython(opts ResolveOptions) string {
	exe := opts.Executable
	if exe == nil {
		exe = os.Executable
	}
	p, err := exe()
	if err != nil {
		return ""
	}
	return installedEnvPython(p, f.getenv)
}

// inToolEnv reports whether python lies in the scripts folder of a tool
// env. Its symlinks are not followed: a virtualenv's python links to its
// base python, outside the env.
func inToolEnv(python string, getenv func(string) string) bool {
	for _, env := range envsOfScriptsDir(filepath.Dir(filepath.Clean(python))) {
		if isPythonEnv(env) {
			return isToolEnv(env, getenv)
		}
	}
	return false
}

// lookPathPython finds a python on PATH as lookPath does, passing over the
// tool envs' scripts folders: uvx puts its env's first on the PATH of the
// program it runs, and that env holds kernel-mcp alone.
func (f finder) lookPathPython(name string) (string, error) {
	p, err := f.lookPath(name)
	if err != nil || !inToolEnv(p, f.getenv) {
		return p, err
	}
	for _, dir := range filepath.SplitList(f.getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		q, err := exec.LookPath(filepath.Join(dir, name))
		if err == nil && !inToolEnv(q, f.getenv) {
			return q, nil
		}
	}
	return "", fmt.Errorf("%s is on PATH only in uv's or pipx's tool environments (%s): %w", name, p, errOnlyToolEnvs)
}

// errOnlyToolEnvs says a python was found on PATH only in tool envs.
var errOnlyToolEnvs = errors.New("those are not used")
