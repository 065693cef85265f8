// Package kernelspec finds Jupyter kernelspecs and Python interpreters and
// decides which kernel kernel-mcp should start.
//
// It reads kernel.json files from the same directories Jupyter searches,
// inspects Python interpreters by running them once, and resolves the user's
// explicit and implicit choices (flags, PYTHON_MCP_INTERPRETER, the active
// conda environment, the "python3" kernelspec, PATH) into one Spec to launch.
//
// It does not start kernels, write connection files, install kernelspecs or
// install ipykernel; it only looks and reports.
package kernelspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Spec is one installed Jupyter kernelspec (kernel.json) or a synthesized one
// for an interpreter. It is plain data: nothing is validated beyond parsing,
// and Argv keeps its "{connection_file}" placeholder until ExpandArgv.
type Spec struct {
	Name          string            // directory name, e.g. "python3"
	Dir           string            // directory holding kernel.json ("" for synthesized specs)
	Argv          []string          // argv with "{connection_file}" placeholder kept verbatim
	DisplayName   string            // display_name from kernel.json
	Language      string            // language from kernel.json
	InterruptMode string            // "signal" (default when empty in kernel.json) or "message"
	Env           map[string]string // extra environment variables for the kernel
	Metadata      map[string]any    // metadata from kernel.json, uninterpreted
	Source        string            // where it was found: "JUPYTER_PATH", "user", "interpreter", "conda:<env>", "system", "extra", "synthesized"
}

// FindOptions controls discovery. The zero value looks in the usual places
// using os.Getenv. It does not change which file names are read (always
// <dir>/<name>/kernel.json).
type FindOptions struct {
	Getenv    func(string) string // nil = os.Getenv (tests inject)
	Python    string              // an interpreter whose sys.prefix/share/jupyter/kernels is searched too ("" = none)
	ExtraDirs []string            // extra "kernels" directories searched first
}

// ErrNoSuchKernel is wrapped by the error Get returns when no kernelspec has
// the requested name. It is not returned for a kernelspec that exists but
// cannot be parsed.
var ErrNoSuchKernel = errors.New("no such kernelspec")

// inspectTimeout bounds every run of a Python interpreter.
const inspectTimeout = 20 * time.Second

// kdir is one kernels directory and the Source label of specs found there.
type kdir struct {
	path   string
	source string
}

// finder holds the environment discovery depends on, so tests can replace
// the system directories and the lookups.
type finder struct {
	getenv   func(string) string
	lookPath func(string) (string, error)
	system   []string // system kernels directories, lowest precedence
}

func newFinder(getenv func(string) string, lookPath func(string) (string, error)) finder {
	if getenv == nil {
		getenv = os.Getenv
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	return finder{getenv: getenv, lookPath: lookPath, system: systemKernelDirs(getenv)}
}

// Dirs returns the kernels directories searched, highest precedence first:
// opts.ExtraDirs; each JUPYTER_PATH entry + "/kernels"; the user Jupyter data
// dir + "/kernels" (JUPYTER_DATA_DIR if set, else Linux: $XDG_DATA_HOME/jupyter
// or ~/.local/share/jupyter; macOS: ~/Library/Jupyter; Windows:
// %APPDATA%\jupyter); opts.Python's sys.prefix/share/jupyter/kernels (the
// interpreter is run once via `python -c`; failure just omits the entry); the
// active conda env's $CONDA_PREFIX/share/jupyter/kernels; then the system
// dirs (Unix: /usr/local/share/jupyter/kernels, /usr/share/jupyter/kernels;
// Windows: %PROGRAMDATA%\jupyter\kernels). Duplicates are dropped. It does
// not check that the directories exist.
func Dirs(ctx context.Context, opts FindOptions) []string {
	ds := newFinder(opts.Getenv, nil).dirs(ctx, opts)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.path
	}
	return out
}

func (f finder) dirs(ctx context.Context, opts FindOptions) []kdir {
	var ds []kdir
	seen := map[string]bool{}
	add := func(p, source string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		if seen[p] {
			return
		}
		seen[p] = true
		ds = append(ds, kdir{p, source})
	}
	for _, d := range opts.ExtraDirs {
		add(d, "extra")
	}
	for _, d := range filepath.SplitList(f.getenv("JUPYTER_PATH")) {
		if d != "" {
			add(filepath.Join(d, "kernels"), "JUPYTER_PATH")
		}
	}
	if u := userDataDir(f.getenv); u != "" {
		add(filepath.Join(u, "kernels"), "user")
	}
	if opts.Python != "" {
		if prefix, err := f.pythonPrefix(ctx, opts.Python); err == nil && prefix != "" {
			add(filepath.Join(prefix, "share", "jupyter", "kernels"), "interpreter")
		}
	}
	if cp := f.getenv("CONDA_PREFIX"); cp != "" {
		add(filepath.Join(cp, "share", "jupyter", "kernels"), "conda:"+condaEnvName(f.getenv, cp))
	}
	for _, d := range f.system {
		add(d, "system")
	}
	return ds
}

// condaEnvName names the active conda environment.
func condaEnvName(getenv func(string) string, prefix string) string {
	if n := getenv("CONDA_DEFAULT_ENV"); n != "" {
		return n
	}
	return filepath.Base(prefix)
}

// pythonPrefix runs python once and returns its sys.prefix.
func (f finder) pythonPrefix(ctx context.Context, python string) (string, error) {
	path, err := resolvePython(python, f.lookPath)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", "import sys; print(sys.prefix)")
	cmd.WaitDelay = time.Second
	cmd.Dir = filepath.Dir(path) // see inspect
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("querying sys.prefix of %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// kernelJSON is the on-disk form of kernel.json.
type kernelJSON struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env"`
	Metadata      map[string]any    `json:"metadata"`
}

// readSpec parses dir/kernel.json into a Spec named name.
func readSpec(dir, name, source string) (Spec, error) {
	file := filepath.Join(dir, "kernel.json")
	data, err := os.ReadFile(file)
	if err != nil {
		return Spec{}, err
	}
	var kj kernelJSON
	if err := json.Unmarshal(data, &kj); err != nil {
		return Spec{}, fmt.Errorf("parsing %s: %w", file, err)
	}
	if len(kj.Argv) == 0 {
		return Spec{}, fmt.Errorf("parsing %s: argv is missing or empty", file)
	}
	switch kj.InterruptMode {
	case "":
		kj.InterruptMode = "signal"
	case "signal", "message":
	default:
		return Spec{}, fmt.Errorf("parsing %s: unknown interrupt_mode %q", file, kj.InterruptMode)
	}
	return Spec{
		Name:          name,
		Dir:           dir,
		Argv:          kj.Argv,
		DisplayName:   kj.DisplayName,
		Language:      kj.Language,
		InterruptMode: kj.InterruptMode,
		Env:           kj.Env,
		Metadata:      kj.Metadata,
		Source:        source,
	}, nil
}

// scan reads every kernelspec in dirs. The first directory holding
// <name>/kernel.json claims the name, as in Jupyter; if that file cannot be
// read or parsed the name maps to its error in bad and is absent from specs.
func scan(ctx context.Context, dirs []kdir) (specs []Spec, bad map[string]error, err error) {
	bad = map[string]error{}
	claimed := map[string]bool{}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		entries, err := os.ReadDir(d.path)
		if err != nil {
			continue // missing or unreadable directories are normal
		}
		for _, e := range entries {
			name := e.Name()
			if claimed[name] {
				continue
			}
			dir := filepath.Join(d.path, name)
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, "kernel.json")); errors.Is(err, fs.ErrNotExist) {
				continue // not a kernelspec directory
			}
			claimed[name] = true
			s, err := readSpec(dir, name, d.source)
			if err != nil {
				bad[name] = err
				continue
			}
			specs = append(specs, s)
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, bad, nil
}

// Find returns every kernelspec found in Dirs, de-duplicated by Name (first
// dir wins), sorted by name. Unreadable or malformed kernel.json files are
// skipped, not fatal; such a file still claims its name, so a valid spec of
// the same name in a lower-precedence dir is not used (matching Jupyter) and
// Get of that name returns the parse error. The only error is ctx's.
func Find(ctx context.Context, opts FindOptions) ([]Spec, error) {
	return newFinder(opts.Getenv, nil).find(ctx, opts)
}

func (f finder) find(ctx context.Context, opts FindOptions) ([]Spec, error) {
	specs, _, err := scan(ctx, f.dirs(ctx, opts))
	return specs, err
}

// Get returns the kernelspec with that name (exact match), or an error
// wrapping ErrNoSuchKernel that lists the available names. A kernelspec
// whose kernel.json is unreadable or malformed gives that error instead.
func Get(ctx context.Context, name string, opts FindOptions) (Spec, error) {
	return newFinder(opts.Getenv, nil).get(ctx, name, opts)
}

func (f finder) get(ctx context.Context, name string, opts FindOptions) (Spec, error) {
	dirs := f.dirs(ctx, opts)
	specs, bad, err := scan(ctx, dirs)
	if err != nil {
		return Spec{}, err
	}
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
	}
	if e, ok := bad[name]; ok {
		return Spec{}, fmt.Errorf("kernelspec %q: %w", name, e)
	}
	if len(specs) == 0 {
		paths := make([]string, len(dirs))
		for i, d := range dirs {
			paths[i] = d.path
		}
		return Spec{}, fmt.Errorf("%w %q: no kernelspecs found (searched %s)", ErrNoSuchKernel, name, strings.Join(paths, ", "))
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return Spec{}, fmt.Errorf("%w %q (available: %s)", ErrNoSuchKernel, name, strings.Join(names, ", "))
}

// ForInterpreter synthesizes a spec that runs
// `<python> -m ipykernel_launcher -f {connection_file}` with Name "python3",
// Language "python", InterruptMode "signal" and Source "synthesized". It does
// not check that python exists or has ipykernel; see Inspect.
func ForInterpreter(python string) Spec {
	return Spec{
		Name:          "python3",
		Argv:          []string{python, "-m", "ipykernel_launcher", "-f", "{connection_file}"},
		DisplayName:   "Python 3 (" + python + ")",
		Language:      "python",
		InterruptMode: "signal",
		Source:        "synthesized",
	}
}

// ExpandArgv replaces "{connection_file}" with connectionFile (and
// "{resource_dir}" with s.Dir) in a copy of s.Argv, anywhere inside each
// argument. Other placeholders are left as they are; s is not modified.
func (s Spec) ExpandArgv(connectionFile string) []string {
	r := strings.NewReplacer("{connection_file}", connectionFile, "{resource_dir}", s.Dir)
	out := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		out[i] = r.Replace(a)
	}
	return out
}
