package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// bwrapPackage names what to install, for errors about a missing bwrap.
const bwrapPackage = "install the Debian/Ubuntu package bubblewrap (apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

// sandboxChecked remembers, per bwrap binary and network setting, the
// sandboxMode that created a sandbox here, so only the first Start pays for
// the check.
var sandboxChecked sync.Map

// CheckSandbox reports, as one line, why a sandbox with these options
// cannot be created here: bwrap is missing, or cannot create the
// namespaces (unprivileged user namespaces turned off, or a container that
// forbids them). It runs bwrap once; a success is remembered.
func CheckSandbox(o SandboxOptions) error {
	_, err := checkSandbox(o)
	return err
}

// checkSandbox finds the strongest sandboxMode bwrap supports here: a user
// namespace of the kernel's own that cannot create more, a user namespace,
// or (where none can be created, as root with user namespaces turned off)
// the capabilities dropped alone.
func checkSandbox(o SandboxOptions) (sandboxMode, error) {
	key := fmt.Sprintf("%s|%v", o.bwrap(), o.Network)
	if m, ok := sandboxChecked.Load(key); ok {
		return m.(sandboxMode), nil
	}
	path, err := exec.LookPath(o.bwrap())
	if err != nil {
		return sandboxMode{}, fmt.Errorf("kernel: the sandbox needs bubblewrap, and %q was not found: %s", o.bwrap(), bwrapPackage)
	}
	var lastErr error
	for _, m := range sandboxModes {
		argv := bwrapArgv(sandboxPlan{opts: o, dir: "/", runtimeDir: "/", mode: m}, []string{"true"})
		out, err := exec.Command(path, argv[1:]...).CombinedOutput()
		if err == nil {
			m.bindFD = bwrapBindsFD(path, o, m)
			sandboxChecked.Store(key, m)
			return m, nil
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return sandboxMode{}, fmt.Errorf("kernel: running %s: %v", path, err)
		}
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		lastErr = fmt.Errorf("kernel: bubblewrap (%s) cannot create the sandbox here: %s; it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container that allows them) or a setuid bwrap", path, strings.ReplaceAll(msg, "\n", "; "))
	}
	return sandboxMode{}, lastErr
}

// bwrapBindsFD reports whether this bwrap has --bind-fd (bubblewrap 0.8),
// by binding an fd of / on / in a trial run.
func bwrapBindsFD(path string, o SandboxOptions, m sandboxMode) bool {
	root, err := os.Open("/")
	if err != nil {
		return false
	}
	defer root.Close()
	m.bindFD = true
	argv := bwrapArgv(sandboxPlan{opts: o, dir: "/", runtimeDir: "/", dirFD: 3, mode: m}, []string{"true"})
	cmd := exec.Command(path, argv[1:]...)
	cmd.ExtraFiles = []*os.File{root}
	return cmd.Run() == nil
}

// openSandboxDir opens the kernel's working directory, which must be given
// as its real path (absolute, no symlinks), and checks that what was
// opened is the directory at that path: the fd, not the name, is what
// gets bound, so a rename or a symlink swap of a component after the
// caller checked the path cannot bind another folder.
func openSandboxDir(dir string) (*os.File, error) {
	fd, err := syscall.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("kernel: sandbox working directory %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	f := os.NewFile(uintptr(fd), dir)
	got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kernel: sandbox working directory %s: %w", dir, err)
	}
	if got != filepath.Clean(dir) {
		f.Close()
		return nil, fmt.Errorf("kernel: the sandbox working directory %s is not that folder itself (opening it reached %s): give its real path, and keep it from being renamed or replaced while the kernel starts", dir, got)
	}
	return f, nil
}

// sandboxRuntimeBase is the folder the sandboxed kernels' runtime dirs go
// in, <temp>/kernel-mcp-sandbox-<uid>: private to this user, and holding
// nothing else, since each sandbox hides it whole (the other kernels'
// connection files and sockets) after the allowed paths. A folder of that
// name that is not this user's own and private is refused, never used.
func sandboxRuntimeBase() (string, error) {
	tmp, err := filepath.Abs(os.TempDir())
	if err != nil {
		return "", fmt.Errorf("kernel: runtime dir: %w", err)
	}
	base := filepath.Join(tmp, "kernel-mcp-sandbox-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("kernel: runtime dir: %w", err)
	}
	st, err := os.Lstat(base)
	if err != nil {
		return "", fmt.Errorf("kernel: runtime dir: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("kernel: runtime dir %s is not a private folder of this user (mode %v): remove it, or set KERNEL_MCP_RUNTIME_DIR", base, st.Mode())
	}
	return base, nil
}
