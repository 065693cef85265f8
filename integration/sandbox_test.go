//go:build linux

package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// requireBwrap fails (under CI) or skips (locally) when bwrap cannot create
// a sandbox here.
func requireBwrap(t testing.TB) {
	t.Helper()
	if err := kernel.CheckSandbox(kernel.SandboxOptions{}); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the sandbox is unavailable: %v", err)
		}
		t.Skipf("the sandbox is unavailable: %v", err)
	}
}

// Under --sandbox, what a prompt-injected assistant would try fails with the
// Python error a user would expect, the session goes on with its state, and
// the server's own tools refuse paths outside the session's directory; what
// should work (state, plots, data tools, a timeout's interrupt, a kernel's
// death reported) does.
func TestSandbox(t *testing.T) {
	requireBwrap(t)
	requirePython(t, "ipykernel", "pandas", "matplotlib")
	t.Parallel()

	// A home directory outside /tmp, /home and /root, so it is hidden only
	// because it is $HOME.
	home, err := os.MkdirTemp(".", "sandbox-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	home, _ = filepath.Abs(home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "shared.csv"), []byte("a,b\n1,2\n3,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A listener the kernel must not reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })

	s := startServerEnv(t, []string{"HOME=" + home}, "--sandbox", "--sandbox-allow", allowed, "--timeout", "60")
	if ir := s.cs.InitializeResult(); ir == nil || !strings.Contains(ir.Instructions, "sandbox: files can be written only in the session's working directory") {
		t.Errorf("the instructions do not tell the assistant about the sandbox: %+v", ir)
	}
	const sid = "box"
	// The warm pool works for sandboxed kernels: the session takes the
	// pool's kernel.
	warm := s.waitPool(1).Pids[0]
	if _, out := s.run(sid, "x = 41\nimport os\nos.getcwd()"); out.Status != "ok" || !strings.Contains(out.Result, "/work") {
		t.Fatalf("first run: %+v", out)
	}
	if got := s.pidOf(sid); got != warm {
		t.Errorf("the session runs pid %d, not the warm sandboxed kernel %d", got, warm)
	}
	stateKept := func(after string) {
		t.Helper()
		if _, out := s.run(sid, "x + 1"); out.Result != "42" {
			t.Fatalf("after %s the session lost its state: %+v", after, out)
		}
	}
	wantError := func(what, code string, enames ...string) runOutput {
		t.Helper()
		res, out := s.run(sid, code)
		if out.Error == nil || !containsAny(out.Error.EName, enames) {
			t.Fatalf("%s: want %v, got %+v\n%s", what, enames, out, text(res))
		}
		stateKept(what)
		return out
	}

	out := wantError("reading ~/.ssh", "open(os.path.expanduser('~/.ssh/id_ed25519')).read()", "FileNotFoundError", "PermissionError")
	if !strings.Contains(out.Error.EValue, home) {
		t.Errorf("HOME is not the server's inside the sandbox: %s", out.Error.EValue)
	}
	wantError("reading the key by its path", fmt.Sprintf("open(%q).read()", secret), "FileNotFoundError", "PermissionError")
	// Beside the server's files: read-only where the host path is visible in
	// the sandbox, absent where it is hidden (a checkout under /tmp, which
	// the sandbox replaces); either way nothing reaches the host.
	escaped := filepath.Join(filepath.Dir(home), "escaped.txt")
	out = wantError("writing beside the server", fmt.Sprintf("open(%q, 'w').write('x')", escaped), "OSError", "FileNotFoundError")
	if out.Error.EName == "OSError" && !strings.Contains(out.Error.EValue, "Read-only file system") {
		t.Errorf("write outside: %s", out.Error.EValue)
	}
	if _, err := os.Stat(escaped); err == nil {
		t.Errorf("the sandboxed kernel wrote %s on the host", escaped)
	}
	wantError("writing to an allowed path", fmt.Sprintf("open(%q, 'w')", filepath.Join(allowed, "new.txt")), "OSError")
	port := ln.Addr().(*net.TCPAddr).Port
	wantError("connecting to 127.0.0.1", fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=5)", port), "ConnectionRefusedError", "OSError")
	select {
	case <-accepted:
		t.Fatal("the sandboxed kernel reached the test's listener")
	default:
	}
	self, _ := filepath.Abs(binary)
	_, out = s.run(sid, "procs = {p: open(f'/proc/{p}/cmdline','rb').read().replace(b'\\0', b' ').decode() for p in os.listdir('/proc') if p.isdigit()}\nprint(len(procs)); print(procs)")
	if strings.Contains(out.Stdout, self) || strings.Contains(out.Stdout, "go test") || !strings.Contains(out.Stdout, "ipykernel") {
		t.Errorf("the sandbox sees processes beyond its own:\n%s", out.Stdout)
	}
	stateKept("listing processes")
	if _, out := s.run(sid, fmt.Sprintf("open(%q).read()", filepath.Join(allowed, "shared.csv"))); out.Error != nil {
		t.Errorf("reading an allowed path: %+v", out)
	}

	// Plots come back as images.
	res, _ := s.run(sid, "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 1.5)); plt.plot([1, 2, 3]); plt.show()")
	if imgs, _ := imageParts(res); len(imgs) != 1 {
		t.Errorf("plot: %d images; %s", len(imgs), text(res))
	}
	// Data tools read inside the working directory and an allowed path;
	// server-side paths elsewhere are refused.
	s.run(sid, "import pandas as pd\npd.DataFrame({'v': [1, 2, 3]}).to_csv('mine.csv', index=False)")
	if res := s.call("load_data", map[string]any{"session_id": sid, "path": "mine.csv"}); res.IsError {
		t.Errorf("load_data in the working directory: %s", text(res))
	}
	if res := s.call("load_data", map[string]any{"session_id": sid, "path": filepath.Join(allowed, "shared.csv"), "name": "shared"}); res.IsError {
		t.Errorf("load_data from --sandbox-allow: %s", text(res))
	}
	s.run(sid, "os.symlink('/etc', 'etc_link')")
	refused := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"load_data", map[string]any{"path": secret}, "outside"},
		{"run_file", map[string]any{"path": "../../escape.py"}, "outside"},
		{"export_history", map[string]any{"path": filepath.Join(home, ".bashrc")}, "outside"},
		{"save_script", map[string]any{"path": "etc_link/evil.py"}, "leads to /etc/evil.py"},
		{"save_notebook", map[string]any{"path": filepath.Join(allowed, "nb.ipynb")}, "outside"},
		{"save_figure", map[string]any{"path": "/usr/fig.png"}, "outside"},
	}
	for _, r := range refused {
		r.args["session_id"] = sid
		res := s.call(r.tool, r.args)
		if !res.IsError || !strings.Contains(text(res), r.want) || !strings.Contains(text(res), "--sandbox") {
			t.Errorf("%s(%v): want a refusal containing %q, got %s", r.tool, r.args, r.want, text(res))
		}
	}
	// A refused path creates no session either.
	for _, tool := range []string{"run_file", "load_data", "run_notebook"} {
		res := s.call(tool, map[string]any{"session_id": "escapee", "path": secret})
		if !res.IsError || !strings.Contains(text(res), "outside") {
			t.Errorf("%s in a new session: want a refusal, got %s", tool, text(res))
		}
	}
	for _, row := range s.sessions() {
		if row.SessionID == "escapee" {
			t.Errorf("a refused path created session %+v", row)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".bashrc")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export_history wrote into the home directory: %v", err)
	}
	if res := s.call("save_notebook", map[string]any{"session_id": sid, "path": "out/nb.ipynb"}); res.IsError {
		t.Errorf("save_notebook inside the working directory: %s", text(res))
	}
	if res := s.call("install_package", map[string]any{"session_id": sid, "package_name": "requests"}); !res.IsError || !strings.Contains(text(res), "no network") {
		t.Errorf("install_package: %s", text(res))
	}

	// A timeout interrupts (by message) and keeps the namespace.
	if _, out := s.run(sid, "import time\ntime.sleep(30)", "timeout", 1); out.Status != "timeout" {
		t.Fatalf("timeout: %+v", out)
	}
	stateKept("a timeout")
	// A kernel's death is reported, and the next run gets a fresh kernel.
	if res, _ := s.run(sid, "os._exit(3)"); !strings.Contains(text(res), "kernel died (exit status 3)") {
		t.Fatalf("death: %s", text(res))
	}
	if _, out := s.run(sid, "'x' in globals()"); out.Result != "False" {
		t.Fatalf("after death: %+v", out)
	}

	// The kernels inside the sandboxes (not only bwrap) end with the server.
	var procs []int
	for _, pid := range append(s.waitPool(1).Pids, s.pidOf(sid)) {
		procs = append(procs, descendants(pid)...)
	}
	if len(procs) < 4 {
		t.Fatalf("bwrap, its init and the kernel: found only %v", procs)
	}
	s.close()
	for _, pid := range procs {
		if !waitGone(t, pid, 20*time.Second) {
			t.Errorf("process %d of a sandbox outlived the server", pid)
		}
	}
}

// descendants returns pid and every process below it.
func descendants(pid int) []int {
	parent, _ := parents()
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		for c, p := range parent {
			if p == out[i] {
				out = append(out, c)
			}
		}
	}
	return out
}

// containsAny reports whether s is one of names.
func containsAny(s string, names []string) bool {
	for _, n := range names {
		if s == n {
			return true
		}
	}
	return false
}

// Without bwrap, --sandbox is one line at start naming the package.
func TestSandboxWithoutBwrap(t *testing.T) {
	cmd := exec.Command(binary, "--sandbox", "--state-dir", "none")
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	msg := strings.TrimSpace(string(out))
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "apt-get install bubblewrap") {
		t.Fatalf("want one line naming the package, got:\n%s", msg)
	}
}

// With --tokens-file and --sandbox, users are kept out of each other's
// files too: each kernel sees only its own user's work directory, and the
// tools refuse the other's paths.
func TestSandboxedUsersApart(t *testing.T) {
	requireBwrap(t)
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	url := startHTTPServer(t, "--sandbox", "--tokens-file", tokens, "--state-dir", state, "--pool-size", "0")
	alice := connectUser(t, url, aliceToken)
	bob := connectUser(t, url, bobToken)
	aliceFile := filepath.Join(state, "users", "alice", "work", "notes.txt")
	if res := alice.call("run_code", map[string]any{"code": "open('notes.txt', 'w').write('alice only')"}); res.IsError {
		t.Fatal(text(res))
	}
	if b, err := os.ReadFile(aliceFile); err != nil || string(b) != "alice only" {
		t.Fatalf("alice's file: %q, %v", b, err)
	}
	for _, code := range []string{
		fmt.Sprintf("open(%q).read()", aliceFile),
		fmt.Sprintf("open(%q).read()", tokens),
	} {
		res := bob.call("run_code", map[string]any{"code": code})
		if out := structured[runOutput](t, res); out.Error == nil || strings.Contains(text(res), "alice only") || strings.Contains(text(res), aliceToken) {
			t.Errorf("bob ran %s: %s", code, text(res))
		}
	}
	// The users folder shows bob only his own.
	if res := bob.call("run_code", map[string]any{"code": fmt.Sprintf("import os; os.listdir(%q)", filepath.Join(state, "users"))}); text(res) != "['bob']" {
		t.Errorf("bob lists the users folder: %s", text(res))
	}
	if res := bob.call("load_data", map[string]any{"path": aliceFile}); !res.IsError || !strings.Contains(text(res), "outside") {
		t.Errorf("bob's load_data of alice's file: %s", text(res))
	}
	if res := bob.call("export_history", map[string]any{"path": aliceFile}); !res.IsError || !strings.Contains(text(res), "outside") {
		t.Errorf("bob's export_history over alice's file: %s", text(res))
	}
	if b, _ := os.ReadFile(aliceFile); string(b) != "alice only" {
		t.Errorf("alice's file changed: %q", b)
	}
}
