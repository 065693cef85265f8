package kernel

import (
	"slices"
	"strings"
	"testing"
)

// The bwrap command line: namespaces, then the read-only root, then what is
// hidden, then what is shown again on top (order is what bwrap obeys).
func TestBwrapArgv(t *testing.T) {
	p := sandboxPlan{
		opts:       SandboxOptions{ReadOnly: []string{"/data"}},
		dir:        "/home/u/work",
		runtimeDir: "/tmp/kernel-mcp-1-2",
		hideDirs:   []string{"/tmp", "/home"},
		hideFiles:  []string{"/etc/kernel-mcp/tokens"},
		interp:     []string{"/home/u/conda"},
	}
	argv := bwrapArgv(p, []string{"python3", "-m", "ipykernel_launcher"})
	got := strings.Join(argv, " ")
	want := "bwrap --die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net " +
		"--unsetenv JPY_PARENT_PID --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm --tmpfs /tmp --tmpfs /home " +
		"--ro-bind /dev/null /etc/kernel-mcp/tokens --ro-bind-try /home/u/conda /home/u/conda --ro-bind /data /data " +
		"--bind /tmp/kernel-mcp-1-2 /tmp/kernel-mcp-1-2 --bind /home/u/work /home/u/work --chdir /home/u/work -- python3 -m ipykernel_launcher"
	if got != want {
		t.Errorf("argv:\n got %s\nwant %s", got, want)
	}

	p.opts.Network = true
	p.memoryKB = 2048
	p.opts.Bwrap = "/opt/bwrap"
	argv = bwrapArgv(p, []string{"python3"})
	if argv[0] != "/opt/bwrap" || slices.Contains(argv, "--unshare-net") {
		t.Errorf("with Network and Bwrap: %q", argv)
	}
	if tail := strings.Join(argv[slices.Index(argv, "--")+1:], " "); tail != `/bin/sh -c ulimit -v "$0" && exec "$@" 2048 python3` {
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
	got := filterEnv([]string{"A=1", "KERNEL_MCP_TOKEN=s3cret", "KERNEL_MCP_TOKENS_FILE=/x", "KERNEL_MCP_TIMEOUT=3"})
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
