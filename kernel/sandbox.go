package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SandboxOptions confine a kernel with bubblewrap (bwrap, Linux only). The
// kernel then runs with no capabilities, in its own user (where the host
// lets bwrap create one), PID, IPC, UTS and (unless Network) network
// namespaces, sees the host's filesystem read-only with every home
// directory, /tmp, /var/tmp and /run replaced by empty private ones, and can
// write only in its working directory (Options.Dir, which is required and
// must be its real path: it is opened once and bound by its fd). It dies
// with the server. The client talks to it over ZeroMQ ipc sockets in
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
	// directory of other users). They stay hidden under a ReadOnly parent.
	Hide []string
	// Bwrap is the bwrap binary; default "bwrap" from PATH.
	Bwrap string

	mode sandboxMode // set by Start from CheckSandbox's finding
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
	dir        string // the kernel's working directory, read-write, as the kernel sees it
	runtimeDir string // the kernel's runtime dir (connection file, ipc sockets), read-write
	// dirFD is the inherited fd of the directory Start opened and checked,
	// bound on dir so that a rename or a symlink swap after the check
	// cannot put another folder there; 0 binds dir by name (only for
	// CheckSandbox's trial run). bwrap keeps inherited fds open, and a
	// directory fd would let the kernel walk ".." out of its mounts: bwrap
	// closes it after --bind-fd, and where bwrap has no --bind-fd the
	// shell closes it before the kernel starts.
	dirFD     int
	hideDirs  []string // directories replaced by empty tmpfs before the allowed paths are bound (homes, /tmp, ...)
	interp    []string // interpreter prefixes bound read-only (if they exist)
	keepDirs  []string // directories hidden after every allowed path: they stay hidden whatever is allowed
	keepFiles []string // files replaced by /dev/null, after every allowed path
	memoryKB  int64    // RLIMIT_AS for the kernel, set by sh's ulimit; 0 for none
	mode      sandboxMode
}

// sandboxMode is how bwrap can confine on this host, found by CheckSandbox.
type sandboxMode struct {
	// userNS: the kernel runs in a user namespace of its own (--unshare-user),
	// so even a server running as root gives it no capability over the
	// host's mounts.
	userNS bool
	// noNestedUserNS: the kernel cannot create further user namespaces
	// (--disable-userns, bwrap 0.8 and later).
	noNestedUserNS bool
	// bindFD: bwrap has --bind-fd. Without it the working directory is
	// bound from /proc/self/fd/N, which bwrap turns back into a name
	// (realpath) shortly before it mounts.
	bindFD bool
}

// sandboxModes are tried in order by CheckSandbox; the first that works
// here is used.
var sandboxModes = []sandboxMode{{userNS: true, noNestedUserNS: true}, {userNS: true}, {}}

// bwrapArgv is the command line that runs argv in the sandbox. Order
// matters to bwrap: later mounts go on top of earlier ones. The read-only
// root comes first, then the default hidden directories (homes, /tmp),
// then what the kernel may read in them (its interpreter, the allowed
// paths), then what must stay hidden whatever is allowed (the server's
// state and tokens, the other kernels' runtime dirs), and last the
// kernel's own runtime and working directories.
//
// Every capability is dropped (--cap-drop ALL): a server running as root
// would otherwise leave them all to the kernel, which could then unmount
// what hides the host's files or remount the root read-write.
func bwrapArgv(p sandboxPlan, argv []string) []string {
	a := []string{p.opts.bwrap(),
		"--die-with-parent", "--new-session",
	}
	if p.mode.userNS {
		a = append(a, "--unshare-user")
		if p.mode.noNestedUserNS {
			a = append(a, "--disable-userns")
		}
	}
	a = append(a, "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
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
	for _, d := range p.interp {
		a = append(a, "--ro-bind-try", d, d)
	}
	for _, d := range p.opts.ReadOnly {
		a = append(a, "--ro-bind", d, d)
	}
	for _, d := range p.keepDirs {
		a = append(a, "--tmpfs", d)
	}
	for _, f := range p.keepFiles {
		a = append(a, "--ro-bind", "/dev/null", f)
	}
	a = append(a, "--bind", p.runtimeDir, p.runtimeDir)
	closeFD := 0
	switch {
	case p.dirFD > 0 && p.mode.bindFD:
		a = append(a, "--bind-fd", strconv.Itoa(p.dirFD), p.dir)
	case p.dirFD > 0:
		a = append(a, "--bind", "/proc/self/fd/"+strconv.Itoa(p.dirFD), p.dir)
		closeFD = p.dirFD
	default:
		a = append(a, "--bind", p.dir, p.dir)
	}
	a = append(a, "--chdir", p.dir, "--")
	// The shell runs before any of the kernel's code: it closes the
	// inherited directory fd (without --bind-fd) and sets the memory limit, which must be set
	// inside, since the process we start is bwrap, and its children are
	// forked before a prlimit from outside could land.
	var script []string
	if closeFD > 0 {
		script = append(script, fmt.Sprintf("exec %d<&-", closeFD))
	}
	mem := "-"
	if p.memoryKB > 0 {
		script = append(script, `ulimit -v "$0"`)
		mem = strconv.FormatInt(p.memoryKB, 10)
	}
	if len(script) > 0 {
		a = append(a, "/bin/sh", "-c", strings.Join(append(script, `exec "$@"`), " && "), mem)
	}
	return append(a, argv...)
}

// hostHidden lists the directories every sandbox hides by default, as they
// exist on this host: every home and the shared temporary and runtime
// directories (the sandbox gets private ones). An allowed path inside them
// is shown again.
func hostHidden() []string {
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
		if abs, err := filepath.Abs(home); err == nil {
			add(abs)
		}
	}
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

// filterEnv drops the server's own secrets from the kernel's environment:
// its bearer tokens, and the files that hold them, which code in the
// kernel would otherwise be pointed straight at.
func filterEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "KERNEL_MCP_TOKEN=") || strings.HasPrefix(kv, "KERNEL_MCP_TOKEN_FILE=") || strings.HasPrefix(kv, "KERNEL_MCP_TOKENS_FILE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// SandboxRuntimeBase is the folder that the runtime dirs of sandboxed
// kernels go in, and that every sandbox hides but for the kernel's own:
// KERNEL_MCP_RUNTIME_DIR made absolute when it is set, else
// <temp>/kernel-mcp-sandbox-<uid>. It may not exist yet. The server hides
// it from its own tools' reads too: each kernel writes in its runtime dir,
// and the others' hold their connection files.
func SandboxRuntimeBase() string {
	if d := os.Getenv("KERNEL_MCP_RUNTIME_DIR"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	tmp, err := filepath.Abs(os.TempDir())
	if err != nil {
		tmp = os.TempDir()
	}
	return filepath.Join(tmp, "kernel-mcp-sandbox-"+strconv.Itoa(os.Getuid()))
}
