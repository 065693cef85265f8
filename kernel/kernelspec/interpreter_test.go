package kernelspec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestMissingIPyKernelErrorMessage(t *testing.T) {
	t.Parallel()
	err := error(&MissingIPyKernelError{Python: "/opt/py/bin/python3"})
	want := "ipykernel is not installed for /opt/py/bin/python3; install it with: /opt/py/bin/python3 -m pip install ipykernel"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestLooksLikePython(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"python": true, "/usr/bin/python3": true, "python3.11": true, `C:\Py\python.exe`: true,
		"pythonw.exe": true, "/usr/bin/env": false, "R": false, "python-wrapper": false, "ipython": false,
	}
	for in, want := range tests {
		if got := looksLikePython(in); got != want {
			t.Errorf("looksLikePython(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestInspect(t *testing.T) {
	needPython(t)
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-python")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name     string
		ctx      context.Context
		python   string
		unixOnly bool
		wantIPy  bool
		wantErr  []string // substrings of the error; nil = success
	}{
		{name: "real python", python: realPy, wantIPy: true},
		{name: "bare name on PATH", python: "python3", wantIPy: true},
		{name: "hidden site-packages", python: wrapperPy, unixOnly: true, wantIPy: false},
		{name: "does not exist", python: missing, wantErr: []string{missing, "does not exist"}},
		{name: "not executable", python: plainFile, unixOnly: true, wantErr: []string{plainFile, "not an executable"}},
		{name: "directory", python: filepath.Dir(plainFile), wantErr: []string{filepath.Dir(plainFile), "not an executable"}},
		{name: "not a python", python: garbagePy, unixOnly: true, wantErr: []string{garbagePy, "did not report its version"}},
		{name: "canceled context", ctx: canceled, python: realPy, wantErr: []string{realPy, "context canceled"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unixOnly {
				needUnixScripts(t)
			}
			t.Parallel()
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			in, err := Inspect(ctx, tc.python)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Inspect(%s) = %+v, want an error", tc.python, in)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Inspect(%s): %v", tc.python, err)
			}
			if !filepath.IsAbs(in.Path) || !strings.HasPrefix(in.Version, "3.") || in.Prefix == "" || in.Source != "" {
				t.Errorf("Inspect(%s) = %+v", tc.python, in)
			}
			if tc.python != "python3" && in.Path != tc.python {
				t.Errorf("Path = %s, want the given %s", in.Path, tc.python)
			}
			if got := in.IPyKernel != ""; got != tc.wantIPy {
				t.Errorf("IPyKernel = %q, want present=%v", in.IPyKernel, tc.wantIPy)
			}
		})
	}
}

// condaPrefixWith makes a conda-like prefix whose python is a symlink to target.
func condaPrefixWith(t *testing.T, target string) string {
	t.Helper()
	prefix := t.TempDir()
	py := envPython(prefix)
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, py); err != nil {
		t.Fatal(err)
	}
	return prefix
}

func TestResolve(t *testing.T) {
	needUnixScripts(t)
	t.Parallel()
	jp := t.TempDir()
	writeKernel(t, filepath.Join(jp, "kernels"), "python3", `{"argv": ["`+realPy+`", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "language": "python"}`)
	writeKernel(t, filepath.Join(jp, "kernels"), "ir", `{"argv": ["R", "-f", "{connection_file}"], "language": "R"}`)
	jpEnv := t.TempDir()
	writeKernel(t, filepath.Join(jpEnv, "kernels"), "python3", `{"argv": ["/usr/bin/env", "python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}`)
	jpBad := t.TempDir()
	writeKernel(t, filepath.Join(jpBad, "kernels"), "python3", `not json`)
	condaOK := condaPrefixWith(t, realPy)
	condaNoIPy := condaPrefixWith(t, wrapperPy)
	condaEmpty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "python3")

	pathTo := func(p string) func(string) (string, error) {
		return func(name string) (string, error) {
			if name == "python3" && p != "" {
				return p, nil
			}
			return "", exec.ErrNotFound
		}
	}
	noPath := pathTo("")

	tests := []struct {
		name       string
		opts       ResolveOptions
		env        map[string]string
		wantName   string // Spec.Name
		wantSpec   string // Spec.Source
		wantInterp string // Interpreter.Source, "" = nil Interpreter
		wantArgv0  string
		wantErr    []string
		wantErrIs  error
		wantMissIP string // MissingIPyKernelError.Python
	}{
		{
			name:     "kernel name wins over everything",
			opts:     ResolveOptions{Kernel: "ir", Python: realPy, LookPath: pathTo(realPy)},
			env:      map[string]string{"JUPYTER_PATH": jp, "PYTHON_MCP_INTERPRETER": wrapperPy},
			wantName: "ir", wantSpec: "JUPYTER_PATH", wantArgv0: "R",
		},
		{
			name:     "python kernel by name gets its interpreter",
			opts:     ResolveOptions{Kernel: "python3", LookPath: noPath},
			env:      map[string]string{"JUPYTER_PATH": jp},
			wantName: "python3", wantSpec: "JUPYTER_PATH", wantInterp: "kernelspec", wantArgv0: realPy,
		},
		{
			name:      "unknown kernel name",
			opts:      ResolveOptions{Kernel: "nope", LookPath: pathTo(realPy)},
			env:       map[string]string{"JUPYTER_PATH": jp},
			wantErrIs: ErrNoSuchKernel, wantErr: []string{"ir, python3"},
		},
		{
			name:     "python flag over env",
			opts:     ResolveOptions{Python: realPy, LookPath: noPath},
			env:      map[string]string{"PYTHON_MCP_INTERPRETER": wrapperPy, "CONDA_PREFIX": condaNoIPy},
			wantName: "python3", wantSpec: "synthesized", wantInterp: "flag", wantArgv0: realPy,
		},
		{
			name:     "env over conda",
			opts:     ResolveOptions{LookPath: noPath},
			env:      map[string]string{"PYTHON_MCP_INTERPRETER": realPy, "CONDA_PREFIX": condaNoIPy, "JUPYTER_PATH": jp},
			wantName: "python3", wantSpec: "synthesized", wantInterp: "PYTHON_MCP_INTERPRETER", wantArgv0: realPy,
		},
		{
			name:     "conda over kernelspec",
			opts:     ResolveOptions{LookPath: pathTo(wrapperPy)},
			env:      map[string]string{"CONDA_PREFIX": condaOK, "JUPYTER_PATH": jp},
			wantName: "python3", wantSpec: "synthesized", wantInterp: "conda", wantArgv0: envPython(condaOK),
		},
		{
			name:     "conda prefix without python falls through to kernelspec",
			opts:     ResolveOptions{LookPath: pathTo(wrapperPy)},
			env:      map[string]string{"CONDA_PREFIX": condaEmpty, "JUPYTER_PATH": jp},
			wantName: "python3", wantSpec: "JUPYTER_PATH", wantInterp: "kernelspec", wantArgv0: realPy,
		},
		{
			name:     "kernelspec with non-python argv0 kept as is",
			opts:     ResolveOptions{LookPath: pathTo(realPy)},
			env:      map[string]string{"JUPYTER_PATH": jpEnv},
			wantName: "python3", wantSpec: "JUPYTER_PATH", wantArgv0: "/usr/bin/env",
		},
		{
			name:    "malformed python3 kernelspec is an error",
			opts:    ResolveOptions{LookPath: pathTo(realPy)},
			env:     map[string]string{"JUPYTER_PATH": jpBad},
			wantErr: []string{"python3", "parsing"},
		},
		{
			name:     "PATH last",
			opts:     ResolveOptions{LookPath: pathTo(realPy)},
			env:      map[string]string{"CONDA_PREFIX": condaEmpty},
			wantName: "python3", wantSpec: "synthesized", wantInterp: "PATH", wantArgv0: realPy,
		},
		{
			name:    "nothing found",
			opts:    ResolveOptions{LookPath: noPath},
			env:     map[string]string{},
			wantErr: []string{"no Python", "--python", "PYTHON_MCP_INTERPRETER"},
		},
		{
			name:    "PATH python that does not run",
			opts:    ResolveOptions{LookPath: pathTo(garbagePy)},
			env:     map[string]string{},
			wantErr: []string{"no Python", "--python", garbagePy},
		},
		{
			name:       "flag python without ipykernel",
			opts:       ResolveOptions{Python: wrapperPy, LookPath: pathTo(realPy)},
			env:        map[string]string{"JUPYTER_PATH": jp},
			wantMissIP: wrapperPy,
		},
		{
			name:       "conda python without ipykernel",
			opts:       ResolveOptions{LookPath: pathTo(realPy)},
			env:        map[string]string{"CONDA_PREFIX": condaNoIPy, "JUPYTER_PATH": jp},
			wantMissIP: envPython(condaNoIPy),
		},
		{
			name:       "PATH python without ipykernel",
			opts:       ResolveOptions{LookPath: pathTo(wrapperPy)},
			env:        map[string]string{},
			wantMissIP: wrapperPy,
		},
		{
			name:    "flag python does not exist",
			opts:    ResolveOptions{Python: missing, LookPath: pathTo(realPy)},
			env:     map[string]string{},
			wantErr: []string{missing},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Getenv = mapEnv(tc.env)
			f := newFinder(tc.opts.Getenv, tc.opts.LookPath)
			f.system = nil
			r, err := f.resolve(context.Background(), tc.opts)
			if tc.wantMissIP != "" {
				var mi *MissingIPyKernelError
				if !errors.As(err, &mi) || mi.Python != tc.wantMissIP {
					t.Fatalf("err = %v, want MissingIPyKernelError for %s", err, tc.wantMissIP)
				}
				return
			}
			if tc.wantErr != nil || tc.wantErrIs != nil {
				if err == nil {
					t.Fatalf("Resolve = %+v, want an error", r)
				}
				if tc.wantErrIs != nil && !errors.Is(err, tc.wantErrIs) {
					t.Errorf("err = %v, want it to wrap %v", err, tc.wantErrIs)
				}
				var mi *MissingIPyKernelError
				if errors.As(err, &mi) {
					t.Errorf("unexpected MissingIPyKernelError: %v", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Spec.Name != tc.wantName || r.Spec.Source != tc.wantSpec || len(r.Spec.Argv) == 0 || r.Spec.Argv[0] != tc.wantArgv0 {
				t.Errorf("Spec = %+v, want Name %q Source %q argv[0] %q", r.Spec, tc.wantName, tc.wantSpec, tc.wantArgv0)
			}
			switch {
			case tc.wantInterp == "" && r.Interpreter != nil:
				t.Errorf("Interpreter = %+v, want nil", *r.Interpreter)
			case tc.wantInterp != "" && r.Interpreter == nil:
				t.Errorf("Interpreter = nil, want Source %q", tc.wantInterp)
			case tc.wantInterp != "":
				if r.Interpreter.Source != tc.wantInterp || r.Interpreter.IPyKernel == "" {
					t.Errorf("Interpreter = %+v, want Source %q with ipykernel", *r.Interpreter, tc.wantInterp)
				}
			}
		})
	}
}

func TestInterpreters(t *testing.T) {
	needUnixScripts(t)
	t.Parallel()
	home := t.TempDir()
	condaSame := condaPrefixWith(t, realPy)     // same real path as realPy: dropped
	condaOther := condaPrefixWith(t, wrapperPy) // different real path: kept
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.MkdirAll(filepath.Join(home, ".conda"), 0o755); err != nil {
		t.Fatal(err)
	}
	envs := strings.Join([]string{condaSame, "", gone, condaOther, "# comment"}, "\n")
	if err := os.WriteFile(filepath.Join(home, ".conda", "environments.txt"), []byte(envs), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PYTHON_MCP_INTERPRETER": realPy, "CONDA_PREFIX": condaSame, "HOME": home}
	if runtime.GOOS == "windows" {
		env["USERPROFILE"] = home
	}
	lookPath := func(name string) (string, error) {
		switch name {
		case "python3":
			return realPy, nil
		case "python":
			return garbagePy, nil // inspect fails: skipped
		}
		return "", exec.ErrNotFound
	}
	got := Interpreters(context.Background(), ResolveOptions{Getenv: mapEnv(env), LookPath: lookPath})
	type row struct {
		path, source string
		ipy          bool
	}
	want := []row{
		{realPy, "PYTHON_MCP_INTERPRETER", true},
		{envPython(condaOther), "conda", false},
	}
	var rows []row
	for _, in := range got {
		rows = append(rows, row{in.Path, in.Source, in.IPyKernel != ""})
	}
	if len(rows) != len(want) {
		t.Fatalf("Interpreters = %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("Interpreters[%d] = %+v, want %+v", i, rows[i], want[i])
		}
	}
}
