package kernel

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The bwrap command line: namespaces with every capability dropped, then
// the host's system folders (a symlink among them made the same link),
// then the private folders, then the interpreter and the allowed paths,
// then what stays hidden whatever is shown, then the kernel's own
// directories, its working directory bound from the fd the shell closes
// before the kernel runs, and last the root made read-only (order is what
// bwrap obeys). Nothing else of the host is bound: no /, /run or /var.
func TestBwrapArgv(t *testing.T) {
	p := sandboxPlan{
		opts:       SandboxOptions{ReadOnly: []string{"/data"}},
		dir:        "/home/u/work",
		dirFD:      3,
		runtimeDir: "/tmp/kernel-mcp-1-2",
		system:     []systemPath{{path: "/usr"}, {path: "/bin", link: "usr/bin"}, {path: "/etc"}},
		private:    []string{"/tmp", "/var/tmp", "/home/u"},
		keepDirs:   []string{"/home/u/.local/state/kernel-mcp"},
		keepFiles:  []string{"/etc/kernel-mcp/tokens"},
		interp:     []string{"/home/u/conda"},
		mode:       sandboxMode{userNS: true, noNestedUserNS: true, bindFD: true},
	}
	argv := bwrapArgv(p, []string{"python3", "-m", "ipykernel_launcher"})
	got := strings.Join(argv, " ")
	want := "bwrap --die-with-parent --new-session --unshare-user --disable-userns --cap-drop ALL " +
		"--unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net " +
		"--unsetenv JPY_PARENT_PID --ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc " +
		"--dev /dev --proc /proc --tmpfs /dev/shm --tmpfs /tmp --tmpfs /var/tmp --tmpfs /home/u " +
		"--ro-bind-try /home/u/conda /home/u/conda --ro-bind /data /data " +
		"--tmpfs /home/u/.local/state/kernel-mcp --ro-bind /dev/null /etc/kernel-mcp/tokens " +
		"--bind /tmp/kernel-mcp-1-2 /tmp/kernel-mcp-1-2 --bind-fd 3 /home/u/work --remount-ro / --chdir /home/u/work -- python3 -m ipykernel_launcher"
	if got != want {
		t.Errorf("argv:\n got %s\nwant %s", got, want)
	}

	p.opts.Network = true
	p.memoryKB = 2048
	p.opts.Bwrap = "/opt/bwrap"
	p.mode = sandboxMode{}
	argv = bwrapArgv(p, []string{"python3"})
	if !strings.Contains(strings.Join(argv, " "), "--bind /proc/self/fd/3 /home/u/work") {
		t.Errorf("without --bind-fd the fd is bound through /proc: %q", argv)
	}
	if argv[0] != "/opt/bwrap" || slices.Contains(argv, "--unshare-net") || slices.Contains(argv, "--unshare-user") || !slices.Contains(argv, "--cap-drop") {
		t.Errorf("with Network, Bwrap and no user namespace: %q", argv)
	}
	if tail := strings.Join(argv[slices.Index(argv, "--")+1:], " "); tail != `/bin/sh -c exec 3<&- && ulimit -v "$0" && exec "$@" 2048 python3` {
		t.Errorf("memory limit wrapper: %s", tail)
	}
}

// An interpreter the system folders show already binds nothing more; one
// elsewhere has its prefix bound, but never a top-level folder or the home
// directory whole.
func TestInterpreterPrefixes(t *testing.T) {
	if got := interpreterPrefixes("/usr/bin/env", []string{"/usr", "/etc"}); len(got) != 0 {
		t.Errorf("/usr/bin/env: %q, want nothing", got)
	}
	if got := interpreterPrefixes("/usr/bin/env", nil); len(got) != 0 {
		t.Errorf("the top-level /usr bound as a prefix: %q", got)
	}
	dir := t.TempDir()
	for _, d := range []string{"env/bin", "bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "python"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := interpreterPrefixes(filepath.Join(dir, "env/bin/python"), []string{"/usr"}); !slices.Equal(got, []string{filepath.Join(dir, "env")}) {
		t.Errorf("an env outside the system folders: %q", got)
	}
	t.Setenv("HOME", dir)
	if got := interpreterPrefixes(filepath.Join(dir, "bin/python"), []string{"/usr"}); len(got) != 0 {
		t.Errorf("a python in ~/bin binds the home: %q", got)
	}
	for _, top := range []string{"/", "/opt", "/var/lib", "/mnt"} {
		if !neverWhole(top) {
			t.Errorf("%s may be bound whole", top)
		}
	}
}

// The system folders are found as this host has them: folders bound,
// symlinks recreated, missing ones left out.
func TestHostSystem(t *testing.T) {
	for _, s := range hostSystem() {
		st, err := os.Lstat(s.path)
		if err != nil || (s.link != "") != (st.Mode()&os.ModeSymlink != 0) {
			t.Errorf("%+v: %v, %v", s, st, err)
		}
	}
	if !slices.ContainsFunc(hostSystem(), func(s systemPath) bool { return s.path == "/usr" && s.link == "" }) {
		t.Errorf("no /usr in %+v", hostSystem())
	}
}

// The kernel never gets the server's bearer tokens.
func TestFilterEnv(t *testing.T) {
	got := filterEnv([]string{"A=1", "KERNEL_MCP_TOKEN=s3cret", "KERNEL_MCP_TOKENS_FILE=/x", "KERNEL_MCP_TOKEN_FILE=/y", "KERNEL_MCP_TIMEOUT=3"})
	if !slices.Equal(got, []string{"A=1", "KERNEL_MCP_TIMEOUT=3"}) {
		t.Errorf("filterEnv = %q", got)
	}
}

// An ipc connection names five socket files in the runtime dir.
func TestIPCEndpoints(t *testing.T) {
	ci, err := ipcConnectionInfo("/run/k")
	if err != nil {
		t.Fatal(err)
	}
	if ci.Transport != "ipc" || ci.endpoint(ci.HBPort) != "ipc:///run/k/kernel-ipc-5" {
		t.Errorf("transport %q, hb endpoint %q", ci.Transport, ci.endpoint(ci.HBPort))
	}
}
