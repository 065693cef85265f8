package kernel

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SandboxOptions confine a kernel with bubblewrap (bwrap, Linux only). The
// kernel then runs in its own PID, IPC, UTS and (unless Network) network
// namespaces, sees the host's filesystem read-only with every home
// directory, /tmp, /var/tmp and /run replaced by empty private ones, and can
// write only in its working directory (Options.Dir, which is required). It
// dies with the server. The client talks to it over ZeroMQ ipc sockets in
// the kernel's private runtime directory, which is bound into the sandbox,
// and interrupts it with interrupt_request messages, since its pid belongs
// to another namespace.
//
// What it does not confine: CPU and memory beyond Options.MemoryLimit, the
// environment variables the kernel is given, and files outside the hidden
// directories that the server's user can read (read-only).
type SandboxOptions struct {
	// Network keeps the host's network; by default the kernel has only a
	// loopback interface of its own.
	Network bool
	// ReadOnly are more paths bound into the sandbox read-only, for data or
	// an interpreter that lives in a hidden directory.
	ReadOnly []string
	// Hide are more paths to hide: a directory is replaced by an empty one,
	// a file by an empty file (for a server's token file, say, or the state
	// directory of other users).
	Hide []string
	// Bwrap is the bwrap binary; default "bwrap" from PATH.
	Bwrap string
}

// ErrSandboxUnsupported is returned by Start and CheckSandbox on systems
// other than Linux.
var ErrSandboxUnsupported = errors.New("kernel: the sandbox (bubblewrap) is Linux-only")

func (o *SandboxOptions) bwrap() string {
	if o.Bwrap != "" {
		return o.Bwrap
	}
	return "bwrap"
}

// ipcBaseName is the prefix of the kernel's ipc socket files in its runtime
// directory: ipykernel binds "<ip>-<port>" for transport ipc.
const ipcBaseName = "kernel-ipc"

// ipcConnectionInfo is a connection for a sandboxed kernel: ipc sockets
// named <dir>/kernel-ipc-1 ... -5 (the "ports" are only suffixes, so they
// never collide with anything outside the fresh runtime dir).
func ipcConnectionInfo(dir string) (ConnectionInfo, error) {
	ci, err := newConnectionInfo(false)
	if err != nil {
		return ConnectionInfo{}, err
	}
	ci.Transport = "ipc"
	ci.IP = filepath.Join(dir, ipcBaseName)
	ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort = 1, 2, 3, 4, 5
	return ci, nil
}

// sandboxPlan is everything the bwrap command line is built from; it is
// gathered from the host (home, which directories exist, where the
// interpreter lives) so that bwrapArgv itself is a pure function.
type sandboxPlan struct {
	opts       SandboxOptions
	dir        string   // the kernel's working directory, read-write
	runtimeDir string   // the kernel's runtime dir (connection file, ipc sockets), read-write
	hideDirs   []string // directories replaced by empty tmpfs, in order
	hideFiles  []string // files replaced by /dev/null
	interp     []string // interpreter prefixes bound read-only (if they exist)
	memoryKB   int64    // RLIMIT_AS for the kernel, set by sh's ulimit; 0 for none
}

// bwrapArgv is the command line that runs argv in the sandbox. Order
// matters to bwrap: later mounts go on top of earlier ones, so the hidden
// directories come after the read-only root, and what the kernel must see
// (its interpreter, the allowed paths, its runtime and working
// directories) after those.
func bwrapArgv(p sandboxPlan, argv []string) []string {
	a := []string{p.opts.bwrap(),
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if !p.opts.Network {
		a = append(a, "--unshare-net")
	}
	// ipykernel takes JPY_PARENT_PID as "exit when re-parented to pid 1",
	// and in a PID namespace its parent is pid 1 from the start.
	// --die-with-parent does that job here.
	a = append(a, "--unsetenv", "JPY_PARENT_PID")
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm")
	for _, d := range p.hideDirs {
		a = append(a, "--tmpfs", d)
	}
	for _, f := range p.hideFiles {
		a = append(a, "--ro-bind", "/dev/null", f)
	}
	for _, d := range p.interp {
		a = append(a, "--ro-bind-try", d, d)
	}
	for _, d := range p.opts.ReadOnly {
		a = append(a, "--ro-bind", d, d)
	}
	a = append(a, "--bind", p.runtimeDir, p.runtimeDir, "--bind", p.dir, p.dir, "--chdir", p.dir, "--")
	if p.memoryKB > 0 {
		// The limit must be set inside: the process we start is bwrap, and
		// its children are forked before a prlimit from outside could land.
		a = append(a, "/bin/sh", "-c", `ulimit -v "$0" && exec "$@"`, strconv.FormatInt(p.memoryKB, 10))
	}
	return append(a, argv...)
}

// hostHidden lists the directories every sandbox hides, as they exist on
// this host: every home, the shared temporary and runtime directories (the
// sandbox gets private ones), and the parent of the runtime dir, where the
// other kernels' sockets are.
func hostHidden(runtimeDir string) []string {
	var out []string
	add := func(d string) {
		if d == "" || d == "/" {
			return
		}
		d = filepath.Clean(d)
		for _, h := range out {
			if h == d || strings.HasPrefix(d, h+"/") {
				return // already hidden by a parent
			}
		}
		// Lstat: /var/run is usually a link to /run, and a mount on a
		// link would land on its target.
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	for _, d := range []string{"/tmp", "/var/tmp", "/run", "/var/run", "/home", "/root"} {
		add(d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(home)
	}
	add(filepath.Dir(runtimeDir))
	return out
}

// interpreterPrefixes returns the install prefixes of a kernel command's
// interpreter (argv[0], as given and with symlinks resolved: a venv's
// python is a link into the base install) that lie inside a hidden
// directory, so a conda env or virtualenv under the home directory still
// runs. A prefix that is a hidden directory itself (a python in ~/bin) is
// not bound: that would unhide the whole home.
func interpreterPrefixes(argv0 string, hidden []string) []string {
	exe, err := exec.LookPath(argv0)
	if err != nil {
		return nil
	}
	cands := []string{exe}
	if abs, err := filepath.Abs(exe); err == nil {
		cands[0] = abs
		if r, err := filepath.EvalSymlinks(abs); err == nil && r != abs {
			cands = append(cands, r)
		}
	}
	var out []string
	for _, c := range cands {
		prefix := filepath.Dir(filepath.Dir(c))
		for _, h := range hidden {
			if strings.HasPrefix(prefix, h+"/") && !slices.Contains(out, prefix) {
				out = append(out, prefix)
			}
		}
	}
	return out
}

// filterEnv drops the server's own secrets from the kernel's environment.
func filterEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "KERNEL_MCP_TOKEN=") || strings.HasPrefix(kv, "KERNEL_MCP_TOKENS_FILE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
