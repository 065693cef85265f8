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
// namespaces, sees of the host's filesystem only the system's folders
// (systemPaths), its interpreter and the ReadOnly paths, read-only, with an
// empty private /tmp, /var/tmp and home, and can write only in its
// working directory (Options.Dir, which is required and must be its real
// path: it is opened once and bound by its fd). Nothing else is there, so
// no Unix socket of the host's (/run, /var/lib, /mnt, the homes) can be
// connected to: a read-only mount would not stop connect(). It dies
// with the server. The client talks to it over ZeroMQ ipc sockets in
// the kernel's private runtime directory, which is bound into the sandbox,
// and interrupts it with interrupt_request messages, since its pid belongs
// to another namespace.
//
// What it does not confine: CPU and memory beyond Options.MemoryLimit, the
// environment variables the kernel is given, and the files (and any Unix
// socket) in the folders it shows that the server's user can read.
type SandboxOptions struct {
	// Network keeps the host's network; by default the kernel has only a
	// loopback interface of its own.
	Network bool
	// ReadOnly are more paths bound into the sandbox read-only, for data or
	// an interpreter outside the system's folders. A Unix socket in them
	// can be connected to.
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

// sandboxPlan is everything the bwrap command line is built from; it is
// gathered from the host (home, which system folders exist, where the
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
	system    []systemPath // the host's system folders, shown read-only (hostSystem)
	private   []string     // private empty folders: /tmp, /var/tmp, the home directory
	interp    []string     // interpreter prefixes bound read-only (if they exist)
	keepDirs  []string     // directories hidden after every allowed path: they stay hidden whatever is allowed
	keepFiles []string     // files replaced by /dev/null, after every allowed path
	memoryKB  int64        // RLIMIT_AS for the kernel, set by sh's ulimit; 0 for none
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
// matters to bwrap: later mounts go on top of earlier ones. The host's
// system folders come first, then the private ones (/tmp, the home), then
// what the kernel may read besides (its interpreter, the allowed paths),
// then what must stay hidden whatever is allowed (the server's state and
// tokens, the other kernels' runtime dirs), then the kernel's own runtime
// and working directories, and last the sandbox's root is made read-only,
// so that writing anywhere else fails as on the host's read-only root.
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
	for _, s := range p.system {
		if s.link != "" {
			a = append(a, "--symlink", s.link, s.path)
		} else {
			a = append(a, "--ro-bind", s.path, s.path)
		}
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm")
	for _, d := range p.private {
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
	a = append(a, "--remount-ro", "/", "--chdir", p.dir, "--")
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

// systemPaths are the host's folders every sandbox shows, read-only: the
// system's programs, libraries and configuration, and /sys, where glibc,
// OpenBLAS and joblib read the CPU count and the cgroup's limits (sysfs
// holds no sockets). Nothing else of the host's root is in the sandbox: a
// read-only mount does not stop connect() on a Unix socket, and /run,
// /var, /mnt, /srv, /opt and the homes are where the sockets of
// databases, container runtimes and LXD live, so they are left out whole
// rather than hidden one by one.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys"}

// systemPath is one of systemPaths as it is on this host: a folder, or a
// symlink (/bin -> usr/bin where /usr is merged), made the same symlink in
// the sandbox.
type systemPath struct {
	path string
	link string // the symlink's target; "" for a folder
}

// hostSystem returns the systemPaths that exist on this host.
func hostSystem() []systemPath {
	var out []systemPath
	for _, p := range systemPaths {
		st, err := os.Lstat(p)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(p); err == nil {
				out = append(out, systemPath{path: p, link: target})
			}
		case st.IsDir():
			out = append(out, systemPath{path: p})
		}
	}
	return out
}

// privateDirs are the folders every sandbox gets empty, writable and its
// own (tmpfs, gone when the kernel stops): the temporary folders and the
// home directory (IPython's history, matplotlib's cache, pip's --user
// installs).
func privateDirs() []string {
	out := []string{"/tmp", "/var/tmp"}
	if home, err := os.UserHomeDir(); err == nil {
		// A home inside /tmp is private with it: made a folder of its own
		// there, it would bring its parents into the private /tmp as
		// folders the kernel can write.
		if abs, err := filepath.Abs(home); err == nil && abs != "/" && !slices.ContainsFunc(out, func(d string) bool { return abs == d || strings.HasPrefix(abs, d+"/") }) {
			out = append(out, abs)
		}
	}
	return out
}

// shownPaths are the folders of the system paths, where a path is in the
// sandbox already.
func shownPaths(system []systemPath) []string {
	var out []string
	for _, s := range system {
		if s.link == "" {
			out = append(out, s.path)
		}
	}
	return out
}

// neverWhole are folders an interpreter's prefix may lie in but never
// be: binding one would show the sockets and homes it holds (a python in
// ~/bin, say, or in /opt/bin).
func neverWhole(p string) bool {
	if filepath.Dir(p) == "/" || p == "/" {
		return true // /opt, /srv, /mnt, /home, /root, /run, /var, ...
	}
	switch p {
	case "/var/lib", "/var/run", "/var/tmp", "/var/snap", "/var/local":
		return true
	}
	home, err := os.UserHomeDir()
	return err == nil && filepath.Clean(home) == p
}

// interpreterPrefixes returns the install prefixes of a kernel command's
// interpreter (argv[0], as given and with symlinks resolved: a venv's
// python is a link into the base install) that the sandbox does not show
// already (a conda env in /opt, a virtualenv under the home directory),
// so that it still runs. A prefix that is a top-level folder or the home
// directory itself is not bound: that would show everything in it.
func interpreterPrefixes(argv0 string, shown []string) []string {
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
		if neverWhole(prefix) || slices.Contains(out, prefix) {
			continue
		}
		if !slices.ContainsFunc(shown, func(s string) bool { return prefix == s || strings.HasPrefix(prefix, s+"/") }) {
			out = append(out, prefix)
		}
	}
	return out
}

// sandboxPlan gathers from the host what the bwrap command line of this
// kernel needs. Every path is made absolute: bwrap takes a relative one as
// relative to its new root.
func (k *Kernel) sandboxPlan(runtimeDir string, argv []string) sandboxPlan {
	o := *k.opts.Sandbox
	o.ReadOnly = absPaths(o.ReadOnly)
	p := sandboxPlan{opts: o, dir: k.opts.Dir, runtimeDir: runtimeDir, system: hostSystem(), private: privateDirs(),
		mode: o.mode, dirFD: 3}
	// The other kernels' runtime dirs (their connection files and
	// sockets) stay hidden even under an allowed parent.
	p.keepDirs = append(p.keepDirs, filepath.Dir(runtimeDir))
	inKept := func(d string) bool {
		return slices.ContainsFunc(p.keepDirs, func(h string) bool { return d == h || strings.HasPrefix(d, h+"/") })
	}
	for _, h := range absPaths(o.Hide) {
		st, err := os.Stat(h)
		switch {
		case err != nil:
			// Nothing there to hide.
		case inKept(h):
			// Hidden already with a folder above it.
		case st.IsDir():
			p.keepDirs = append(p.keepDirs, h)
		default:
			p.keepFiles = append(p.keepFiles, h)
		}
	}
	// An interpreter inside what stays hidden is not shown: it would be
	// hidden again on top, and such a place (a work directory) is one
	// the kernels can write.
	for _, d := range interpreterPrefixes(argv[0], shownPaths(p.system)) {
		if !inKept(d) {
			p.interp = append(p.interp, d)
		}
	}
	if k.opts.MemoryLimit > 0 {
		p.memoryKB = max(k.opts.MemoryLimit/1024, 1)
	}
	return p
}

// absPaths returns the paths made absolute and clean.
func absPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
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

// ConfineCommand returns the command line that runs argv, a helper that
// handles what kernels send (the chart renderer's browser), in a sandbox
// as strong as a kernel's under o: the host's system folders read-only,
// /tmp and the home private and empty, every capability dropped, o.Hide
// and the kernels' runtime dirs hidden, and no network whatever
// o.Network says. It may write only in the folders rw (at least one).
// The program's own install prefix is shown read-only when the system
// folders do not hold it (a Chrome in /opt/google/chrome).
func ConfineCommand(o SandboxOptions, rw []string, argv []string) ([]string, error) {
	if len(rw) == 0 || len(argv) == 0 {
		return nil, errors.New("kernel: ConfineCommand needs a writable folder and a command")
	}
	o.Network = false
	o.ReadOnly = nil
	mode, err := checkSandbox(o)
	if err != nil {
		return nil, err
	}
	rw = absPaths(rw)
	p := sandboxPlan{opts: o, dir: rw[0], runtimeDir: rw[0], system: hostSystem(), private: privateDirs(), mode: mode}
	p.keepDirs = append(p.keepDirs, SandboxRuntimeBase())
	for _, h := range absPaths(o.Hide) {
		if st, err := os.Stat(h); err == nil && st.IsDir() {
			p.keepDirs = append(p.keepDirs, h)
		} else if err == nil {
			p.keepFiles = append(p.keepFiles, h)
		}
	}
	p.interp = interpreterPrefixes(argv[0], shownPaths(p.system))
	p.opts.ReadOnly = nil
	out := bwrapArgv(p, argv)
	// The folders after the first are bound like it, before the command.
	if len(rw) > 1 {
		i := slices.Index(out, "--remount-ro")
		var extra []string
		for _, d := range rw[1:] {
			extra = append(extra, "--bind", d, d)
		}
		out = slices.Insert(out, i, extra...)
	}
	return out, nil
}
