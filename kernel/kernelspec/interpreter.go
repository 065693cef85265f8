package kernelspec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Interpreter is a Python interpreter that was found and run once by
// Inspect. It records what the interpreter reported; it does not keep it
// running or check it again later.
type Interpreter struct {
	Path      string // absolute path of the python executable as given (wrappers and shims are kept, not replaced by sys.executable)
	Version   string // e.g. "3.11.7"
	Prefix    string // sys.prefix
	IPyKernel string // ipykernel version, "" if not importable ("unknown" if importable without __version__)
	Source    string // "flag", "PYTHON_MCP_INTERPRETER", "installed-env", "conda", "kernelspec", "PATH"; "" from Inspect itself
}

// MissingIPyKernelError says ipykernel cannot be imported by Python. Its
// Error() is one line naming the interpreter and the install command. It
// does not say why the import failed.
type MissingIPyKernelError struct{ Python string }

// Error returns "ipykernel is not installed for <path>; install it with:
// <path> -m pip install ipykernel".
func (e *MissingIPyKernelError) Error() string {
	return fmt.Sprintf("ipykernel is not installed for %s; install it with: %s -m pip install ipykernel", e.Python, e.Python)
}

// inspectMarker prefixes the JSON line so output printed by sitecustomize or
// similar start-up hooks is ignored.
const inspectMarker = "@@KERNEL_MCP_INSPECT@@"

// inspectScript is passed to `python -c`. It only uses the standard library
// apart from the guarded ipykernel import.
const inspectScript = `import json, sys
try:
    import ipykernel
    v = str(getattr(ipykernel, "__version__", "") or "unknown")
except Exception:
    v = ""
sys.stdout.write("\n` + inspectMarker + `" + json.dumps({"executable": sys.executable, "version": "%d.%d.%d" % tuple(sys.version_info[:3]), "prefix": sys.prefix, "ipykernel": v}) + "\n")
sys.stdout.flush()
`

// resolvePython turns python into an absolute path of an existing executable
// file. A bare name (no path separator) is looked up with lookPath.
func resolvePython(python string, lookPath func(string) (string, error)) (string, error) {
	if python == "" {
		return "", errors.New("python interpreter path is empty")
	}
	path := python
	if !strings.ContainsAny(python, `/\`) {
		p, err := lookPath(python)
		if err != nil {
			return "", fmt.Errorf("python interpreter %s: not found on PATH: %w", python, err)
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("python interpreter %s: %w", python, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("python interpreter %s does not exist", abs)
		}
		return "", fmt.Errorf("python interpreter %s: %w", abs, err)
	}
	if !isExecutable(fi) {
		return "", fmt.Errorf("python interpreter %s is not an executable file", abs)
	}
	return abs, nil
}

// Inspect runs the interpreter once (`python -c` a small script printing
// JSON: sys.executable, version, sys.prefix, ipykernel.__version__ or "")
// with a 20 s timeout, or ctx's deadline if sooner. A bare name is looked up
// on PATH. A path that does not exist or is not executable gives an error
// naming the path. A missing ipykernel is not an error here: IPyKernel is "".
// Source is left empty.
func Inspect(ctx context.Context, python string) (Interpreter, error) {
	return inspect(ctx, python, exec.LookPath)
}

func inspect(ctx context.Context, python string, lookPath func(string) (string, error)) (Interpreter, error) {
	path, err := resolvePython(python, lookPath)
	if err != nil {
		return Interpreter{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", inspectScript)
	cmd.WaitDelay = time.Second
	// `python -c` imports from its working directory first: run it in its
	// own bin directory, not wherever the server happens to be (which may
	// be a folder user code writes in).
	cmd.Dir = filepath.Dir(path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return Interpreter{}, fmt.Errorf("running python interpreter %s: %w%s", path, err, lastLine(stderr.Bytes()))
	}
	var out struct {
		Executable string `json:"executable"`
		Version    string `json:"version"`
		Prefix     string `json:"prefix"`
		IPyKernel  string `json:"ipykernel"`
	}
	found := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), inspectMarker); ok {
			if err := json.Unmarshal([]byte(rest), &out); err != nil {
				return Interpreter{}, fmt.Errorf("python interpreter %s: bad inspect output: %w", path, err)
			}
			found = true
		}
	}
	if !found || out.Version == "" {
		return Interpreter{}, fmt.Errorf("python interpreter %s: it ran but did not report its version; is it Python 3?%s", path, lastLine(stderr.Bytes()))
	}
	return Interpreter{Path: path, Version: out.Version, Prefix: out.Prefix, IPyKernel: out.IPyKernel}, nil
}

// lastLine returns ": <last non-empty line of b>" or "".
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	return ": " + l
}

// looksLikePython reports whether the base name of p is python, python3,
// python3.11, pythonw or similar (".exe" allowed).
func looksLikePython(p string) bool {
	base := strings.ToLower(filepath.Base(strings.ReplaceAll(p, `\`, "/")))
	base = strings.TrimSuffix(base, ".exe")
	rest, ok := strings.CutPrefix(base, "python")
	if !ok {
		return false
	}
	rest = strings.TrimSuffix(rest, "w")
	return strings.Trim(rest, "0123456789.") == ""
}

// ResolveOptions holds the explicit choices, from flags or tool arguments,
// and the lookups Resolve and Interpreters use. The zero value means "no
// explicit choice, use the real environment".
type ResolveOptions struct {
	Python   string                       // explicit interpreter path (flag/tool argument)
	Kernel   string                       // explicit kernelspec name; wins over everything
	Getenv   func(string) string          // nil = os.Getenv
	LookPath func(string) (string, error) // nil = exec.LookPath
	// Executable is the running program, whose Python environment is
	// the "installed-env" step; nil = os.Executable.
	Executable func() (string, error)
	// CheckSpec, if set, is called on a kernelspec Resolve picked before
	// anything of it runs (its python is inspected); an error from it is
	// Resolve's error.
	CheckSpec func(Spec) error
	// Allow, if set, says which interpreters Interpreters and Candidates
	// may list (by absolute path); one it refuses is neither listed nor run.
	Allow func(path string) bool
}

// Resolved is the result of Resolve: the spec to launch and, when known, the
// Python interpreter behind it.
type Resolved struct {
	Spec        Spec
	Interpreter *Interpreter // nil when a non-Python kernelspec was chosen by name (or its python could not be inspected)
}

// Resolve picks what to run, in this order: Kernel name (Get) > Python >
// $PYTHON_MCP_INTERPRETER > the Python environment the running program is
// installed in (installedenv.go), when its python has ipykernel > active
// conda env ($CONDA_PREFIX/bin/python, on Windows $CONDA_PREFIX\python.exe,
// if it exists) > the "python3" kernelspec > `python3` on PATH (on Windows
// also `python`), passing over the tool envs' folders that uvx puts first
// on PATH.
//
// For interpreter choices it calls Inspect, fails if that fails, returns
// *MissingIPyKernelError when ipykernel is not importable, and uses
// ForInterpreter(path). A kernelspec (by name or the "python3" fallback) is
// kept as is; Interpreter is filled by Inspect on argv[0] when that looks like
// a python, and a failure there is not fatal. A malformed "python3"
// kernelspec is an error, not skipped. If nothing is found the error says no
// Python was found and how to point at one (--python /
// PYTHON_MCP_INTERPRETER). Resolve does not start anything.
func Resolve(ctx context.Context, opts ResolveOptions) (Resolved, error) {
	return newFinder(opts.Getenv, opts.LookPath).resolve(ctx, opts)
}

func (f finder) resolve(ctx context.Context, opts ResolveOptions) (Resolved, error) {
	if opts.Kernel != "" {
		s, err := f.get(ctx, opts.Kernel, FindOptions{Python: opts.Python})
		if err != nil {
			return Resolved{}, err
		}
		if opts.CheckSpec != nil {
			if err := opts.CheckSpec(s); err != nil {
				return Resolved{}, err
			}
		}
		return Resolved{Spec: s, Interpreter: f.specInterpreter(ctx, s)}, nil
	}
	use := func(python, source string) (Resolved, error) {
		in, err := inspect(ctx, python, f.lookPath)
		if err != nil {
			return Resolved{}, err
		}
		in.Source = source
		if in.IPyKernel == "" {
			return Resolved{}, &MissingIPyKernelError{Python: in.Path}
		}
		return Resolved{Spec: ForInterpreter(in.Path), Interpreter: &in}, nil
	}
	if opts.Python != "" {
		return use(opts.Python, "flag")
	}
	if p := f.getenv("PYTHON_MCP_INTERPRETER"); p != "" {
		return use(p, "PYTHON_MCP_INTERPRETER")
	}
	if p := f.installedPython(opts); p != "" {
		// An env without ipykernel (or whose python does not run) is
		// passed over: the person did not name it.
		if r, err := use(p, "installed-env"); err == nil {
			return r, nil
		}
	}
	if cp := f.getenv("CONDA_PREFIX"); cp != "" {
		if p := envPython(cp); fileExists(p) {
			return use(p, "conda")
		}
	}
	s, err := f.get(ctx, "python3", FindOptions{})
	if err == nil {
		if opts.CheckSpec != nil {
			if err := opts.CheckSpec(s); err != nil {
				return Resolved{}, err
			}
		}
		return Resolved{Spec: s, Interpreter: f.specInterpreter(ctx, s)}, nil
	}
	if !errors.Is(err, ErrNoSuchKernel) {
		return Resolved{}, err
	}
	var tried []string
	for _, name := range pathPythonNames {
		p, err := f.lookPathPython(name)
		if err != nil {
			if errors.Is(err, errOnlyToolEnvs) {
				tried = append(tried, err.Error())
			}
			continue
		}
		r, err := use(p, "PATH")
		if err == nil {
			return r, nil
		}
		var mi *MissingIPyKernelError
		if errors.As(err, &mi) {
			return Resolved{}, err
		}
		tried = append(tried, err.Error())
	}
	msg := "no Python interpreter found: pass --python /path/to/python or set PYTHON_MCP_INTERPRETER (the interpreter needs ipykernel: <python> -m pip install ipykernel)"
	if len(tried) > 0 {
		msg += "; tried: " + strings.Join(tried, "; ")
	}
	return Resolved{}, errors.New(msg)
}

// specInterpreter inspects argv[0] of s when it looks like a python; any
// failure gives nil.
func (f finder) specInterpreter(ctx context.Context, s Spec) *Interpreter {
	if len(s.Argv) == 0 || !looksLikePython(s.Argv[0]) {
		return nil
	}
	in, err := inspect(ctx, s.Argv[0], f.lookPath)
	if err != nil {
		return nil
	}
	in.Source = "kernelspec"
	return &in
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Interpreters lists interpreters found: opts.Python ("flag"),
// PYTHON_MCP_INTERPRETER, the installed env's python ("installed-env"),
// $CONDA_PREFIX, conda envs listed in
// ~/.conda/environments.txt, python3/python on PATH; de-duplicated by
// resolved real path, and for a virtualenv's python also by its env (first
// source wins); each Inspected, concurrently, and
// skipped if that fails. Interpreters without ipykernel are included (with
// IPyKernel ""). It does not search the file system beyond these places.
func Interpreters(ctx context.Context, opts ResolveOptions) []Interpreter {
	return newFinder(opts.Getenv, opts.LookPath).interpreters(ctx, opts)
}

func (f finder) interpreters(ctx context.Context, opts ResolveOptions) []Interpreter {
	type cand struct{ path, source string }
	seen := map[string]bool{}
	var uniq []cand
	for _, c := range f.candidates(opts) {
		key := c.Path
		if real, err := filepath.EvalSymlinks(c.Path); err == nil {
			key = real
		}
		// A virtualenv's python is a link to its base python but runs
		// with the env's packages: it is an interpreter of its own.
		if env := filepath.Dir(filepath.Dir(c.Path)); isPythonEnv(env) {
			key += "\x00" + env
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		uniq = append(uniq, cand{c.Path, c.Source})
	}

	results := make([]*Interpreter, len(uniq))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, c := range uniq {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			in, err := inspect(ctx, c.path, f.lookPath)
			if err != nil {
				return
			}
			in.Source = c.source
			results[i] = &in
		})
	}
	wg.Wait()
	var out []Interpreter
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// Candidates lists the interpreters Interpreters would inspect, from the
// same places, without running any of them: only Path (absolute, symlinks
// kept as found) and Source are set. Paths that do not exist or are not
// executable files are left out; a path found in two places is listed
// once (first source wins), but a link and its target are both listed.
func Candidates(opts ResolveOptions) []Interpreter {
	return newFinder(opts.Getenv, opts.LookPath).candidates(opts)
}

func (f finder) candidates(opts ResolveOptions) []Interpreter {
	type cand struct{ path, source string }
	var cands []cand
	if opts.Python != "" {
		cands = append(cands, cand{opts.Python, "flag"})
	}
	if p := f.getenv("PYTHON_MCP_INTERPRETER"); p != "" {
		cands = append(cands, cand{p, "PYTHON_MCP_INTERPRETER"})
	}
	if p := f.installedPython(opts); p != "" {
		cands = append(cands, cand{p, "installed-env"})
	}
	if cp := f.getenv("CONDA_PREFIX"); cp != "" {
		cands = append(cands, cand{envPython(cp), "conda"})
	}
	if home := homeDir(f.getenv); home != "" {
		if data, err := os.ReadFile(filepath.Join(home, ".conda", "environments.txt")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					cands = append(cands, cand{envPython(line), "conda"})
				}
			}
		}
	}
	for _, name := range interpreterPATHNames {
		if p, err := f.lookPathPython(name); err == nil {
			cands = append(cands, cand{p, "PATH"})
		}
	}

	seen := map[string]bool{}
	var out []Interpreter
	for _, c := range cands {
		abs, err := resolvePython(c.path, f.lookPath)
		if err != nil || seen[abs] || (opts.Allow != nil && !opts.Allow(abs)) {
			continue
		}
		seen[abs] = true
		out = append(out, Interpreter{Path: abs, Source: c.source})
	}
	return out
}
