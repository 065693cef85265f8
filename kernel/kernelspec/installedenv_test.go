package kernelspec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// scriptsDir is where pip puts an env's programs on this platform.
func scriptsDir(env string) string { return filepath.Dir(envPythons(env)[0]) }

// writeFile writes an empty file at p, making its folders.
func writeFile(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, mode); err != nil {
		t.Fatal(err)
	}
}

// fakeEnv lays out an env at env: the marker files (a name ending in "/"
// is a folder), the given pythons, and the program in its scripts folder.
// It returns the program's path.
func fakeEnv(t *testing.T, env string, markers []string, pythons []string) string {
	t.Helper()
	for _, m := range markers {
		if m[len(m)-1] == '/' {
			if err := os.MkdirAll(filepath.Join(env, m), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, filepath.Join(env, m), 0o644)
	}
	for _, p := range pythons {
		writeFile(t, p, 0o755)
	}
	exe := filepath.Join(scriptsDir(env), "kernel-mcp")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	writeFile(t, exe, 0o755)
	return exe
}

// TestInstalledEnvPython lays out environments as pip, conda, uv and pipx
// do (seen with uv 0.13 and pipx 1.18: a uv tool env holds uv-receipt.toml,
// uvx runs from <uv cache>/archive-v0/<hash>/, every pipx env holds
// pipx_metadata.json) and checks which python the program in each would
// pick. Nothing is run.
func TestInstalledEnvPython(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	home := filepath.Join(root, "home")
	getenv := mapEnv(map[string]string{
		"HOME": home, "LOCALAPPDATA": filepath.Join(home, "AppData", "Local"),
		"UV_CACHE_DIR": filepath.Join(root, "uvcache"),
	})
	defaultCache := uvCacheDirs(getenv)[0]

	type tc struct {
		name string
		exe  string
		want string
	}
	var tests []tc
	add := func(name, env string, markers []string, pythons []string, want string) {
		tests = append(tests, tc{name, fakeEnv(t, env, markers, pythons), want})
	}
	venv := filepath.Join(root, "venv")
	add("virtualenv", venv, []string{"pyvenv.cfg"}, envPythons(venv), envPythons(venv)[0])
	second := filepath.Join(root, "venv-second-python")
	add("second python name", second, []string{"pyvenv.cfg"}, envPythons(second)[1:], envPythons(second)[1])
	conda := filepath.Join(root, "conda")
	add("conda env", conda, []string{"conda-meta/"}, envPythons(conda)[len(envPythons(conda))-1:], envPythons(conda)[len(envPythons(conda))-1])
	plain := filepath.Join(root, "plain")
	add("not an env", plain, nil, envPythons(plain), "")
	nopy := filepath.Join(root, "nopython")
	add("env without python", nopy, []string{"pyvenv.cfg"}, nil, "")
	cfgDir := filepath.Join(root, "cfgdir")
	add("pyvenv.cfg is a folder", cfgDir, []string{"pyvenv.cfg/"}, envPythons(cfgDir), "")
	uvTool := filepath.Join(home, ".local", "share", "uv", "tools", "kernel-mcp")
	add("uv tool install", uvTool, []string{"pyvenv.cfg", "uv-receipt.toml"}, envPythons(uvTool), "")
	uvx := filepath.Join(root, "elsewhere", "archive-v0", "Rmy0hrFoBzTElsGd")
	add("uvx archive env", uvx, []string{"pyvenv.cfg"}, envPythons(uvx), "")
	uvCache := filepath.Join(root, "uvcache", "environments-v2", "abc")
	add("under UV_CACHE_DIR", uvCache, []string{"pyvenv.cfg"}, envPythons(uvCache), "")
	uvDefault := filepath.Join(defaultCache, "builds-v0", "x")
	add("under uv's default cache", uvDefault, []string{"pyvenv.cfg"}, envPythons(uvDefault), "")
	pipx := filepath.Join(home, ".local", "share", "pipx", "venvs", "kernel-mcp")
	add("pipx install", pipx, []string{"pyvenv.cfg", "pipx_metadata.json"}, envPythons(pipx), "")
	pipxRun := filepath.Join(home, ".cache", "pipx", "3c6a1a9268d5ab5")
	add("pipx run", pipxRun, []string{"pyvenv.cfg", "pipx_metadata.json"}, envPythons(pipxRun), "")
	outside := filepath.Join(root, "outside", "kernel-mcp")
	writeFile(t, outside, 0o755)
	writeFile(t, filepath.Join(root, "outside", "pyvenv.cfg"), 0o644)
	tests = append(tests, tc{"program not in a scripts folder", outside, ""})
	if runtime.GOOS != "windows" {
		link := filepath.Join(root, "links", "kernel-mcp")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(scriptsDir(venv), "kernel-mcp"), link); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, tc{"symlink to a program in a virtualenv", link, envPythons(venv)[0]})
	}
	tests = append(tests, tc{"no executable", "", ""})

	for _, tc := range tests {
		if got := installedEnvPython(tc.exe, getenv); got != tc.want {
			t.Errorf("%s: installedEnvPython(%s) = %q, want %q", tc.name, tc.exe, got, tc.want)
		}
	}
}

// makeVenv makes a real virtualenv with realPy's venv module and puts a
// program in its scripts folder, returning the env and the program.
func makeVenv(t *testing.T, dir string, args ...string) (env, exe string) {
	t.Helper()
	cmd := exec.Command(realPy, append([]string{"-m", "venv", "--without-pip"}, append(args, dir)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	exe = filepath.Join(scriptsDir(dir), "kernel-mcp")
	writeFile(t, exe, 0o755)
	return dir, exe
}

// TestResolveInstalledEnv runs the resolution with real virtualenvs: one
// that sees the system's ipykernel, one without it, and a uv tool env that
// has it.
func TestResolveInstalledEnv(t *testing.T) {
	needPython(t)
	t.Parallel()
	root := realTempDir(t)
	withIPy, withExe := makeVenv(t, filepath.Join(root, "with"), "--system-site-packages")
	noIPy, noExe := makeVenv(t, filepath.Join(root, "without"))
	tool, toolExe := makeVenv(t, filepath.Join(root, "tool"), "--system-site-packages")
	writeFile(t, filepath.Join(tool, "uv-receipt.toml"), 0o644)
	condaOK := condaPrefixWith(t, realPy)
	pathReal := func(name string) (string, error) {
		if name == "python3" {
			return realPy, nil
		}
		return "", exec.ErrNotFound
	}
	exeAt := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }

	tests := []struct {
		name       string
		opts       ResolveOptions
		env        map[string]string
		wantSource string
		wantPython string
	}{
		{"installed env with ipykernel", ResolveOptions{Executable: exeAt(withExe)}, map[string]string{"CONDA_PREFIX": condaOK},
			"installed-env", envPythons(withIPy)[0]},
		{"flag wins", ResolveOptions{Python: realPy, Executable: exeAt(withExe)}, nil, "flag", realPy},
		{"PYTHON_MCP_INTERPRETER wins", ResolveOptions{Executable: exeAt(withExe)}, map[string]string{"PYTHON_MCP_INTERPRETER": realPy},
			"PYTHON_MCP_INTERPRETER", realPy},
		{"env without ipykernel goes on to conda", ResolveOptions{Executable: exeAt(noExe)}, map[string]string{"CONDA_PREFIX": condaOK},
			"conda", envPython(condaOK)},
		{"env without ipykernel goes on to PATH", ResolveOptions{Executable: exeAt(noExe)}, nil, "PATH", realPy},
		{"uv tool env is passed over", ResolveOptions{Executable: exeAt(toolExe)}, nil, "PATH", realPy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Getenv = mapEnv(tc.env)
			tc.opts.LookPath = pathReal
			f := newFinder(tc.opts.Getenv, tc.opts.LookPath)
			f.system = nil
			r, err := f.resolve(context.Background(), tc.opts)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Interpreter == nil || r.Interpreter.Source != tc.wantSource || r.Interpreter.Path != tc.wantPython || r.Spec.Argv[0] != tc.wantPython {
				t.Errorf("Resolve = %+v, interpreter %+v; want Source %q, python %s", r.Spec, r.Interpreter, tc.wantSource, tc.wantPython)
			}
		})
	}

	t.Run("listed", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			exe, python string
			ipy         bool
		}{{withExe, envPythons(withIPy)[0], true}, {noExe, envPythons(noIPy)[0], false}} {
			// The env's python is a link to realPy's, which is on PATH
			// too: both are listed, as they see different packages.
			got := Interpreters(context.Background(), ResolveOptions{Getenv: mapEnv(nil), LookPath: pathReal, Executable: exeAt(c.exe)})
			found, path := false, false
			for _, in := range got {
				switch in.Source {
				case "installed-env":
					found = true
					if in.Path != c.python || (in.IPyKernel != "") != c.ipy || in.Prefix == "" {
						t.Errorf("Interpreters lists %+v, want %s with ipykernel %v", in, c.python, c.ipy)
					}
				case "PATH":
					path = in.Path == realPy
				}
			}
			if !found || !path {
				t.Errorf("Interpreters = %+v, want the installed env's %s and PATH's %s", got, c.python, realPy)
			}
		}
		got := Interpreters(context.Background(), ResolveOptions{Getenv: mapEnv(nil), LookPath: pathReal, Executable: exeAt(toolExe)})
		for _, in := range got {
			if in.Source == "installed-env" {
				t.Errorf("Interpreters lists the uv tool env's %+v", in)
			}
		}
	})
}

// TestResolvePassesOverToolEnvOnPath: uvx puts its env's scripts folder
// first on PATH; its python3 (here without ipykernel, as in a plain uvx
// run) is passed over for the next python3 on PATH, and neither Resolve
// nor Interpreters names it.
func TestResolvePassesOverToolEnvOnPath(t *testing.T) {
	needUnixScripts(t)
	t.Parallel()
	root := realTempDir(t)
	uvx, uvxExe := makeVenv(t, filepath.Join(root, "cache", "archive-v0", "W9aarg73oVDAKXKm"))
	good := filepath.Join(root, "good", "python3")
	if err := os.MkdirAll(filepath.Dir(good), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realPy, good); err != nil {
		t.Fatal(err)
	}
	first := func(name string) (string, error) { // PATH's first python3: the uvx env's
		if name == "python3" {
			return envPythons(uvx)[0], nil
		}
		return "", exec.ErrNotFound
	}
	exe := func() (string, error) { return uvxExe, nil }
	for _, tc := range []struct {
		name, path, want string
	}{
		{"another python3 on PATH", scriptsDir(uvx) + string(filepath.ListSeparator) + filepath.Dir(good), good},
		{"only the tool env's", scriptsDir(uvx), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ResolveOptions{Getenv: mapEnv(map[string]string{"PATH": tc.path}), LookPath: first, Executable: exe}
			f := newFinder(opts.Getenv, opts.LookPath)
			f.system = nil
			r, err := f.resolve(context.Background(), opts)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "tool environments") {
					t.Errorf("Resolve = %+v, %v; want an error naming the tool environments", r.Interpreter, err)
				}
			} else if err != nil || r.Interpreter == nil || r.Interpreter.Path != tc.want || r.Interpreter.Source != "PATH" {
				t.Errorf("Resolve = %+v, %v; want %s from PATH", r.Interpreter, err, tc.want)
			}
			for _, in := range Interpreters(context.Background(), opts) {
				if strings.HasPrefix(in.Path, uvx) {
					t.Errorf("Interpreters lists the uvx env's %+v", in)
				}
			}
		})
	}
}

// realTempDir is t.TempDir with its symlinks resolved (macOS's /var is
// /private/var; Windows may give a short 8.3 name): the code under test
// returns resolved paths.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
