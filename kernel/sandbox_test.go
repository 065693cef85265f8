package kernel

import (
	"slices"
	"strings"
	"testing"
)

// The bwrap command line: namespaces with every capability dropped, then
// the read-only root, then the default hidden directories, then what is
// shown again in them, then what stays hidden whatever is shown, and last
// the kernel's own directories, its working directory bound from the fd
// the shell closes before the kernel runs (order is what bwrap obeys).
func TestBwrapArgv(t *testing.T) {
	p := sandboxPlan{
		opts:       SandboxOptions{ReadOnly: []string{"/data"}},
		dir:        "/home/u/work",
		dirFD:      3,
		runtimeDir: "/tmp/kernel-mcp-1-2",
		hideDirs:   []string{"/tmp", "/home"},
		keepDirs:   []string{"/home/u/.local/state/kernel-mcp"},
		keepFiles:  []string{"/etc/kernel-mcp/tokens"},
		interp:     []string{"/home/u/conda"},
		mode:       sandboxMode{userNS: true, noNestedUserNS: true, bindFD: true},
	}
	argv := bwrapArgv(p, []string{"python3", "-m", "ipykernel_launcher"})
	got := strings.Join(argv, " ")
	want := "bwrap --die-with-parent --new-session --unshare-user --disable-userns --cap-drop ALL " +
		"--unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net " +
		"--unsetenv JPY_PARENT_PID --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm --tmpfs /tmp --tmpfs /home " +
		"--ro-bind-try /home/u/conda /home/u/conda --ro-bind /data /data " +
		"--tmpfs /home/u/.local/state/kernel-mcp --ro-bind /dev/null /etc/kernel-mcp/tokens " +
		"--bind /tmp/kernel-mcp-1-2 /tmp/kernel-mcp-1-2 --bind-fd 3 /home/u/work --chdir /home/u/work -- python3 -m ipykernel_launcher"
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

// Interpreters in a hidden directory have their prefix shown again; ones
// elsewhere, or whose prefix is the hidden directory itself, do not.
func TestInterpreterPrefixes(t *testing.T) {
	if got := interpreterPrefixes("/usr/bin/env", []string{"/home", "/root"}); len(got) != 0 {
		t.Errorf("/usr/bin/env: %q, want nothing", got)
	}
	if got := interpreterPrefixes("/usr/bin/env", []string{"/usr/lib"}); len(got) != 0 {
		t.Errorf("prefix /usr is not inside /usr/lib: %q", got)
	}
	if got := interpreterPrefixes("/usr/bin/env", []string{"/"}); len(got) != 0 {
		t.Errorf("prefix equal to nothing hidden: %q", got)
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
