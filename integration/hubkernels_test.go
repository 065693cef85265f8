//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// --hub-kernels end to end: JupyterHub 6 with its proxy and a local
// spawner (the sign-in tests' harness), each person's kernels in their own
// single-user server (jupyterhub-singleuser from jupyter_server), started
// on demand through the hub's API, and the hub's idle culler
// (jupyterhub-idle-culler from PyPI) stopping one under a session.

// hubKernelsConfig is added to the harness's jupyterhub_config.py. The
// spawner is the hub's local one, made as slow as a spawner that pulls an
// image (so that a start has progress to report) and failing for erin
// with a message of its own.
const hubKernelsConfig = `
import asyncio, os
from jupyterhub.spawner import SimpleLocalProcessSpawner

class TestSpawner(SimpleLocalProcessSpawner):
    async def start(self):
        if self.user.name == "erin":
            raise RuntimeError("the test spawner has no room for erin's server")
        await asyncio.sleep(2)
        return await super().start()

    async def progress(self):
        yield {"progress": 30, "message": f"test spawner: preparing {self.user.name}'s server"}

c.JupyterHub.spawner_class = TestSpawner
c.SimpleLocalProcessSpawner.home_dir_template = HUB_DIR + "/home/{username}"
c.Spawner.cmd = [HUB_VENV + "/bin/jupyterhub-singleuser"]
c.Spawner.args = ["--allow-root"] if os.getuid() == 0 else []
# The start request returns at once, and the progress is followed, as with
# any spawner slower than the hub's 10 s default.
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}
c.Authenticator.allowed_users = {"alice", "bob", "carol", "erin"}
c.JupyterHub.load_groups = {"mcp-users": {"users": ["alice", "bob", "erin"]}}
# The token the hub issues to kernel-mcp at a sign-in reaches that user's
# servers only: see docs/teams.md.
c.JupyterHub.services[0]["oauth_client_allowed_scopes"] = [
    "access:servers!user", "read:servers!user", "start:servers!user",
]
# The idle culler, run by the test when it wants alice's server culled.
c.JupyterHub.services.append({"name": "idle-culler", "api_token": "culler-test-token"})
c.JupyterHub.load_roles.append({
    "name": "idle-culler", "services": ["idle-culler"],
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
})
# What the tests that kill a server use to find its process, as an admin
# would: the spawner's state (the local spawner's pid).
c.JupyterHub.services.append({"name": "test-admin", "api_token": "admin-test-token"})
c.JupyterHub.load_roles.append({
    "name": "test-admin", "services": ["test-admin"],
    "scopes": ["list:users", "read:servers", "admin:server_state", "delete:servers", "access:servers"],
})
`

// requireHubKernelParts skips (fails under CI) when the hub's venv lacks
// the single-user server or the idle culler.
func requireHubKernelParts(t *testing.T) string {
	t.Helper()
	hub, _ := requireOAuthParts(t)
	venv := filepath.Dir(filepath.Dir(hub))
	err := exec.Command(filepath.Join(venv, "bin", "python"), "-c", "import jupyter_server, ipykernel, jupyterhub_idle_culler, pandas").Run()
	if _, serr := os.Stat(filepath.Join(venv, "bin", "jupyterhub-singleuser")); err != nil || serr != nil {
		msg := fmt.Sprintf("the hub-kernel tests need jupyter_server, ipykernel, jupyterhub-idle-culler and pandas in %s (%s/bin/pip install 'jupyter_server==2.21.1' 'ipykernel==7.4.0' 'jupyterhub-idle-culler==2.0.0' 'pandas==3.1.1')", venv, venv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return venv
}

// callResult is a tool call's text and whether it is an error result.
func callResult(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (string, bool) {
	t.Helper()
	r := fromMCP(callTool(t, cs, params))
	return r.Text, r.IsError
}

// hubGet asks the hub's API with a token; it returns the status and body.
func hubGet(t *testing.T, method, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// serverReady reports whether the hub says user's default server is ready.
func serverReady(t *testing.T, s *hubSetup, user string) bool {
	t.Helper()
	status, body := hubGet(t, http.MethodGet, s.apiURL+"/users/"+user, "culler-test-token")
	if status != http.StatusOK {
		t.Fatalf("the hub about %s: %d %s", user, status, body)
	}
	var m struct {
		Servers map[string]struct {
			Ready bool `json:"ready"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return m.Servers[""].Ready
}

// hubToken is the hub token kernel-mcp keeps for user, checking the file's
// mode.
func hubToken(t *testing.T, s *hubSetup, user string) string {
	t.Helper()
	path := filepath.Join(s.dir, "state", "users", user, "hub-token.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("%s's hub token: %v", user, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("%s: %v %q", path, err, b)
	}
	return tok.AccessToken
}

// waitFor polls cond until it holds, failing after limit. The hub and
// the culler change state in their own processes, with no event to wait on
// here but their API's answers.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestHubKernels: alice's and bob's kernels run in their own single-user
// servers, started on first use with progress; bob cannot reach alice's
// server, not even with his own hub token; erin's failing spawn says the
// hub's message; the idle culler stops alice's server under her idle
// session, which is told of a dead kernel, and her next call starts the
// server again.
func TestHubKernels(t *testing.T) {
	t.Parallel()
	venv := requireHubKernelParts(t)
	// The servers' kernelspecs pick the interpreter.
	s := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{flags: []string{"--hub-kernels"}, config: hubKernelsConfig})
	home := func(user string) string { return filepath.Join(s.dir, "home", user) }

	var progressMu sync.Mutex
	var progress []string
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progressMu.Lock()
		progress = append(progress, req.Params.Message)
		progressMu.Unlock()
	}}
	// Protocol 2026-07-28 (no HTTP session): the spawn's progress comes on
	// the call's own response stream.
	alice, err := mcpAsWith(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr(), &http.Transport{}, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	aliceToken := hubToken(t, s, "alice")
	if serverReady(t, s, "alice") {
		t.Fatal("alice's server runs before her first call")
	}

	// A spawn on first use, with progress.
	// None of kernel-mcp's KERNEL_* variables reach a person's server.
	who := "import os\nprint(os.environ['JUPYTERHUB_USER'], os.getcwd(), sorted(k for k in os.environ if k.startswith('KERNEL_')))\nx = 41"
	begun := time.Now()
	out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "alices", "code": who},
		Meta: mcp.Meta{"progressToken": "alice-1"}})
	t.Logf("spawn to first result: %v (the test spawner's 2 s included)", time.Since(begun).Round(time.Millisecond))
	if isErr || !strings.Contains(out, "alice "+home("alice")+" []") {
		t.Fatalf("alice's first run (error %v): %s", isErr, out)
	}
	progressMu.Lock()
	seen := strings.Join(progress, "\n")
	progressMu.Unlock()
	if !strings.Contains(seen, "test spawner: preparing alice's server") || !strings.Contains(seen, "starting your server "+s.hubURL+"/user/alice/") {
		t.Errorf("alice's progress while her server started:\n%s", seen)
	}
	if !serverReady(t, s, "alice") {
		t.Error("the hub does not say alice's server is ready")
	}
	if out := callText(t, alice, "list_kernels", nil); !strings.Contains(out, "python3") || !strings.Contains(out, "/user/alice/") {
		t.Errorf("alice's list_kernels: %s", out)
	}
	// Files are alice's server's: a saved notebook is listed by its
	// contents API (so her JupyterLab shows it), run_file reads a file
	// her code wrote there, and paths out of her server's root are
	// refused.
	if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "save_notebook", Arguments: map[string]any{"session_id": "alices", "path": "mcp/alice.ipynb"}}); isErr {
		t.Errorf("save_notebook: %s", out)
	}
	status, listing := hubGet(t, http.MethodGet, s.hubURL+"/user/alice/api/contents/mcp", aliceToken)
	if status != http.StatusOK || !strings.Contains(listing, `"path": "mcp/alice.ipynb"`) && !strings.Contains(listing, `"path":"mcp/alice.ipynb"`) {
		t.Errorf("alice's server's contents: %d %.500s", status, listing)
	}
	if b, err := os.ReadFile(filepath.Join(home("alice"), "mcp", "alice.ipynb")); err != nil || !strings.Contains(string(b), "JUPYTERHUB_USER") || !strings.Contains(string(b), `"nbformat": 4`) {
		t.Errorf("the notebook in alice's server's root: %v %.300s", err, b)
	}
	callText(t, alice, "run_code", map[string]any{"session_id": "alices", "code": "open('step.py', 'w').write('y = x + 1\\nprint(y)')"})
	if out := callText(t, alice, "run_file", map[string]any{"session_id": "alices", "path": "step.py"}); !strings.Contains(out, "42") {
		t.Errorf("run_file: %s", out)
	}
	for _, p := range []string{"/etc/passwd", "../bob/x.py"} {
		if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "run_file", Arguments: map[string]any{"session_id": "alices", "path": p}}); !isErr || !strings.Contains(out, "your server") {
			t.Errorf("run_file %s (error %v): %s", p, isErr, out)
		}
	}
	// load_data checks the file through the contents API and the kernel
	// reads it from the server's root, whatever the session chdir'd to.
	callText(t, alice, "run_code", map[string]any{"session_id": "alices", "code": "os.makedirs('data/sub', exist_ok=True)\nopen('data/prices.csv', 'w').write('a,b\\n1,2\\n3,4\\n5,6\\n')\nos.chdir('data/sub')"})
	if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "load_data", Arguments: map[string]any{"session_id": "alices", "path": "data/prices.csv", "name": "prices"}}); isErr || !strings.Contains(out, "3 rows x 2 columns") {
		t.Errorf("load_data (error %v): %s", isErr, out)
	}
	for p, want := range map[string]string{"data/missing.csv": "has no file data/missing.csv", "/etc/passwd.csv": "is absolute", "step.py": "cannot tell the format of step.py"} {
		if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "load_data", Arguments: map[string]any{"session_id": "alices", "path": p}}); !isErr || !strings.Contains(out, want) {
			t.Errorf("load_data %s (error %v): %s, want %q", p, isErr, out, want)
		}
	}
	if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "load_data", Arguments: map[string]any{"session_id": "alices", "path": "data", "format": "csv"}}); !isErr || !strings.Contains(out, "is a folder") {
		t.Errorf("load_data of a folder (error %v): %s", isErr, out)
	}
	callText(t, alice, "run_code", map[string]any{"session_id": "alices", "code": "os.chdir(get_ipython().starting_dir)"})

	roundTrips(t, s, aliceToken)

	bob, err := mcpAs(t, s.mcpURL, newPerson(t, "bob", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	if out := callText(t, bob, "run_code", map[string]any{"session_id": "bobs", "code": who}); !strings.Contains(out, "bob "+home("bob")+" []") {
		t.Errorf("bob's run: %s", out)
	}
	bobToken := hubToken(t, s, "bob")

	// bob's token reaches his server and not alice's, nor starts it;
	// alice's reaches hers (the check is not vacuous).
	for _, c := range []struct {
		who, token, method, url string
		want                    int
	}{
		{"alice's token, alice's server", aliceToken, http.MethodGet, s.hubURL + "/user/alice/api/kernels", http.StatusOK},
		{"bob's token, bob's server", bobToken, http.MethodGet, s.hubURL + "/user/bob/api/kernels", http.StatusOK},
		{"bob's token, alice's server", bobToken, http.MethodGet, s.hubURL + "/user/alice/api/kernels", http.StatusForbidden},
		{"bob's token, alice's kernelspecs", bobToken, http.MethodGet, s.hubURL + "/user/alice/api/kernelspecs", http.StatusForbidden},
		{"bob's token, alice's server's model", bobToken, http.MethodGet, s.apiURL + "/users/alice/server", http.StatusNotFound},
		{"bob's token, starting alice's server", bobToken, http.MethodPost, s.apiURL + "/users/alice/server", http.StatusNotFound},
		{"bob's token, stopping his own server", bobToken, http.MethodDelete, s.apiURL + "/users/bob/server", http.StatusForbidden},
	} {
		if status, body := hubGet(t, c.method, c.url, c.token); status != c.want {
			t.Errorf("%s: %d, want %d: %.300s", c.who, status, c.want, body)
		}
	}
	// bob cannot name alice's kernel either.
	status, body := hubGet(t, http.MethodGet, s.hubURL+"/user/alice/api/kernels", aliceToken)
	var kernels []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &kernels); err != nil || len(kernels) != 1 {
		t.Fatalf("alice's kernels: %d %s", status, body)
	}
	if out, isErr := callResult(t, bob, &mcp.CallToolParams{Name: "create_session", Arguments: map[string]any{"session_id": "peek", "kernel_id": kernels[0].ID}}); !isErr {
		t.Errorf("bob attached to alice's kernel: %s", out)
	}

	// erin's spawn fails with the spawner's own message.
	erin, err := mcpAs(t, s.mcpURL, newPerson(t, "erin", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("erin: %v", err)
	}
	if out, isErr := callResult(t, erin, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "1+1"}}); !isErr || !strings.Contains(out, "the test spawner has no room for erin's server") {
		t.Errorf("erin's run (error %v): %s", isErr, out)
	}

	// The idle culler stops alice's server under her idle session.
	culler := exec.Command(filepath.Join(venv, "bin", "python"), "-m", "jupyterhub_idle_culler",
		"--url="+s.apiURL, "--timeout=1", "--cull-every=1")
	culler.Env = append(os.Environ(), "JUPYTERHUB_API_TOKEN=culler-test-token")
	culler.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var cullerLog lockedBuffer
	culler.Stdout, culler.Stderr = &cullerLog, &cullerLog
	if err := culler.Start(); err != nil {
		t.Fatal(err)
	}
	stopCuller := sync.OnceFunc(func() {
		syscall.Kill(-culler.Process.Pid, syscall.SIGTERM)
		culler.Wait()
	})
	t.Cleanup(stopCuller)
	waitFor(t, 60*time.Second, "the culler stopping alice's server", func() bool { return !serverReady(t, s, "alice") })
	stopCuller()
	if !strings.Contains(cullerLog.String(), "alice") {
		t.Logf("culler's log:\n%s", cullerLog.String())
	}
	// The session is told as of any dead kernel.
	// The session is told at once, with the reason, not after the
	// reconnect window.
	waitFor(t, 60*time.Second, "alice's session seeing its kernel gone", func() bool {
		return strings.Contains(callText(t, alice, "session_status", map[string]any{"session_id": "alices"}), "dead")
	})
	out, isErr = callResult(t, alice, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "alices", "code": who}})
	if isErr || !strings.Contains(out, "alice "+home("alice")+" []") || !strings.Contains(out, "was stopped (by the hub's idle culler") {
		t.Errorf("alice's run after the culler (error %v): %s", isErr, out)
	}
	if !serverReady(t, s, "alice") {
		t.Error("alice's server was not started again")
	}
	if out := callText(t, alice, "get_history", map[string]any{"session_id": "alices"}); strings.Count(out, "JUPYTERHUB_USER") != 2 {
		t.Errorf("alice's history after the culler: %s", out)
	}
}

// serverPid is the pid of user's default server, from the spawner's state.
func serverPid(t *testing.T, s *hubSetup, user string) int {
	t.Helper()
	status, body := hubGet(t, http.MethodGet, s.apiURL+"/users/"+user, "admin-test-token")
	var m struct {
		Servers map[string]struct {
			State struct {
				Pid int `json:"pid"`
			} `json:"state"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || status != http.StatusOK {
		t.Fatalf("the hub about %s: %d %s", user, status, body)
	}
	pid := m.Servers[""].State.Pid
	if pid <= 1 {
		t.Fatalf("%s's server has no pid in the hub's state: %s", user, body)
	}
	return pid
}

// TestHubKernelsServerKilled: a person's single-user server SIGKILLed
// under a session (a crash, an OOM kill) costs that session its variables
// and nothing else: the session is told, its next call starts the server
// again, and bob's session on his own server goes on untouched.
func TestHubKernelsServerKilled(t *testing.T) {
	t.Parallel()
	requireHubKernelParts(t)
	s := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{flags: []string{"--hub-kernels"}, config: hubKernelsConfig})
	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	bob, err := mcpAs(t, s.mcpURL, newPerson(t, "bob", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	callText(t, alice, "run_code", map[string]any{"session_id": "a", "code": "x = 1"})
	callText(t, bob, "run_code", map[string]any{"session_id": "b", "code": "y = 2"})
	pid := serverPid(t, s, "alice")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The hub still calls it ready (its spawner polls every 30 s): the
	// drop of the kernel's connection makes kernel-mcp ask it to check.
	out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "a", "code": "import os\nprint('x' in globals(), os.environ['JUPYTERHUB_USER'])"}})
	if !isErr || !strings.Contains(out, "ended (JupyterHub found its process gone) and is being started again") || !strings.Contains(out, "history kept") {
		t.Errorf("alice's call after her server was killed (error %v): %s", isErr, out)
	}
	out, isErr = callResult(t, alice, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "a", "code": "import os\nprint('x' in globals(), os.environ['JUPYTERHUB_USER'])"}})
	if isErr || !strings.Contains(out, "False alice") {
		t.Errorf("alice's next call (error %v): %s", isErr, out)
	}
	if p := serverPid(t, s, "alice"); p == pid {
		t.Errorf("alice's server is still process %d", p)
	}
	if out := callText(t, bob, "run_code", map[string]any{"session_id": "b", "code": "y"}); !strings.Contains(out, "2") {
		t.Errorf("bob's session after alice's server was killed: %s", out)
	}
	if out := callText(t, alice, "get_history", map[string]any{"session_id": "a"}); !strings.Contains(out, "x = 1") {
		t.Errorf("alice's history: %s", out)
	}

	// Killed while no kernel of hers runs there: the start of her next
	// kernel meets the proxy's 503, asks the hub, and starts it again.
	callText(t, alice, "reset_session", map[string]any{"session_id": "a"})
	callText(t, alice, "delete_session", map[string]any{"session_id": "a"})
	pid = serverPid(t, s, "alice")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "c", "code": "import os\nprint(os.environ['JUPYTERHUB_USER'])"}}); isErr || !strings.Contains(out, "alice") {
		t.Errorf("alice's new session after her idle server was killed (error %v): %s", isErr, out)
	}
}

// hubTinyPNG is a 1x1 PNG.
const hubTinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestHubKernelsTokenRenewed: when the hub token kernel-mcp holds for
// alice expires (the hub's oauth_token_expires_in, 20 s here), her next
// call is refused with 401, her MCP client signs in through the hub again
// by itself, and the call goes on, in the same kernel (a reconnect of the
// kernel's connection would use the new token: kernel.TestGatewayTokenNow).
func TestHubKernelsTokenRenewed(t *testing.T) {
	t.Parallel()
	requireHubKernelParts(t)
	s := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{flags: []string{"--hub-kernels"},
		config: hubKernelsConfig + "\nc.JupyterHub.oauth_token_expires_in = 20\n"})
	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	callText(t, alice, "run_code", map[string]any{"session_id": "a", "code": "x = 20"})
	first := hubToken(t, s, "alice")
	b, err := os.ReadFile(filepath.Join(s.dir, "state", "users", "alice", "hub-token.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Expiry time.Time `json:"expiry"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.Expiry.IsZero() {
		t.Fatalf("alice's hub token has no expiry: %v %s", err, b)
	}
	waitFor(t, time.Minute, "alice's hub token to expire", func() bool { return time.Now().After(tok.Expiry) })
	if out := callText(t, alice, "run_code", map[string]any{"session_id": "a", "code": "x + 22"}); !strings.Contains(out, "42") {
		t.Errorf("alice's call after her hub token expired: %s", out)
	}
	if hubToken(t, s, "alice") == first {
		t.Error("alice's hub token was not renewed")
	}
}

// callStructured is a tool call's result: its text, its structured
// content, and how many images it has.
func callStructured(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, map[string]any, int) {
	t.Helper()
	r := fromMCP(callTool(t, cs, &mcp.CallToolParams{Name: tool, Arguments: args}))
	return r.Text, r.Structured, r.Images
}

// TestHubKernelsParity: what works on gateway kernels works on kernels in
// a person's hub server: images, save_figure, export_history and
// save_script into the server, input(), interrupt, timeouts (namespace
// kept), a read beside a run (a subshell), run_notebook of a notebook in
// the server, an R kernel from the server's kernelspecs, a task
// (SEP-2663), and the web view showing the session's cells.
func TestHubKernelsParity(t *testing.T) {
	t.Parallel()
	requireHubKernelParts(t)
	requireIRkernel(t)
	s := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{flags: []string{"--hub-kernels", "--max-wait", "60"}, config: hubKernelsConfig})
	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	run := func(args map[string]any) (string, map[string]any, int) {
		args["session_id"] = "p"
		return callStructured(t, alice, "run_code", args)
	}

	// An image, as a notebook shows it.
	out, st, images := run(map[string]any{"code": "import base64\nfrom IPython.display import Image, display\nkept = 7\ndisplay(Image(data=base64.b64decode('" + hubTinyPNG + "')))"})
	if st["status"] != "ok" || images != 1 {
		t.Errorf("an image (%d images): %v %s", images, st["status"], out)
	}
	// The file tools write into alice's server.
	home := filepath.Join(s.dir, "home", "alice")
	for tool, path := range map[string]string{"save_figure": "out/dot.png", "export_history": "out/history.txt", "save_script": "out/script.py"} {
		if out, isErr := callResult(t, alice, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"session_id": "p", "path": path}}); isErr {
			t.Errorf("%s: %s", tool, out)
		}
		if b, err := os.ReadFile(filepath.Join(home, path)); err != nil || len(b) == 0 {
			t.Errorf("%s: %s in alice's server: %v", tool, path, err)
		}
	}
	// input(), answered with send_input.
	out, st, _ = run(map[string]any{"code": "who = input('who? ')\nprint('hello', who)"})
	if st["status"] != "input_requested" || !strings.Contains(out, "who?") {
		t.Fatalf("input(): %v %s", st["status"], out)
	}
	if out, st, _ := callStructured(t, alice, "send_input", map[string]any{"session_id": "p", "text": "Ada"}); st["status"] != "ok" || !strings.Contains(out, "hello Ada") {
		t.Errorf("send_input: %v %s", st["status"], out)
	}
	// A read beside a run: get_value answers while a loop runs.
	_, st, _ = run(map[string]any{"code": "import time\nfor i in range(100):\n    time.sleep(0.1)", "background": true})
	runID, _ := st["run_id"].(string)
	if out := callText(t, alice, "get_value", map[string]any{"session_id": "p", "expression": "kept"}); !strings.Contains(out, "7") {
		t.Errorf("get_value beside the run: %s", out)
	}
	if _, st, _ := callStructured(t, alice, "wait_run", map[string]any{"session_id": "p", "run_id": runID, "wait": 0}); st["status"] != "running" {
		t.Errorf("the run after the read beside it: %v (the read waited for it?)", st["status"])
	}
	// interrupt_session stops it (a KeyboardInterrupt, as in a notebook);
	// the namespace is kept.
	callText(t, alice, "interrupt_session", map[string]any{"session_id": "p"})
	if out, st, _ := callStructured(t, alice, "wait_run", map[string]any{"session_id": "p", "run_id": runID}); st["status"] != "error" || !strings.Contains(out, "KeyboardInterrupt") {
		t.Errorf("the interrupted run: %v %s", st["status"], out)
	}
	// A timeout interrupts a busy loop; the namespace is kept.
	if out, st, _ := run(map[string]any{"code": "while True:\n    pass", "timeout": 1}); st["status"] != "timeout" {
		t.Errorf("timeout: %v %s", st["status"], out)
	}
	if out := callText(t, alice, "get_value", map[string]any{"session_id": "p", "expression": "kept"}); !strings.Contains(out, "7") {
		t.Errorf("the namespace after the interrupt and the timeout: %s", out)
	}
	// run_notebook of a notebook in alice's server.
	nb := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": null, "source": "nb_value = kept * 6\nprint('from the notebook', nb_value)"}]}`
	if err := os.MkdirAll(filepath.Join(home, "nbs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "nbs", "step.ipynb"), []byte(nb), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := callText(t, alice, "run_notebook", map[string]any{"session_id": "p", "path": "nbs/step.ipynb"}); !strings.Contains(out, "from the notebook 42") {
		t.Errorf("run_notebook: %s", out)
	}
	// An R kernel, from the kernelspecs alice's server has.
	if out := callText(t, alice, "list_kernels", nil); !strings.Contains(out, "ir") {
		t.Errorf("list_kernels has no R kernel: %s", out)
	}
	if out := callText(t, alice, "create_session", map[string]any{"session_id": "r", "kernel": "ir"}); strings.Contains(out, "rror") {
		t.Errorf("create_session ir: %s", out)
	}
	if out := callText(t, alice, "run_code", map[string]any{"session_id": "r", "code": "paste('R', Sys.getenv('JUPYTERHUB_USER'), 6 * 7)"}); !strings.Contains(out, "R alice 42") {
		t.Errorf("R in alice's server: %s", out)
	}
	// A task (SEP-2663) on alice's server.
	tasks := &sepHTTPClient{t: t, url: s.mcpURL, token: accessTokenAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"))}
	made, _ := tasks.post("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "p", "code": "print('task', nb_value)", "background": true}}, nil)
	result, _ := made["result"].(map[string]any)
	taskID, _ := result["taskId"].(string)
	if result["resultType"] != "task" || taskID == "" {
		t.Fatalf("a task: %v", made)
	}
	if r := tasks.completed(taskID); !strings.Contains(fmt.Sprint(r["result"]), "task 42") {
		t.Errorf("the task's result: %v", r)
	}
	// The web view shows the session's cells, the image among them.
	browser := newPerson(t, "alice", "hub-password")
	if resp, _ := browser.open(s.base + "/ui/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's web view: %d", resp.StatusCode)
	}
	resp, body := browser.do(http.MethodGet, s.base+"/ui/api/sessions/p/cells", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "image/png") || !strings.Contains(body, "from the notebook 42") {
		t.Errorf("the web view's cells: %d %.600s", resp.StatusCode, body)
	}
}

// TestHubKernelsNamedServer: with --hub-server-name, a person's kernels run
// in their named server of that name, which the first call creates and
// starts, and not in their default server.
func TestHubKernelsNamedServer(t *testing.T) {
	t.Parallel()
	requireHubKernelParts(t)
	// The spawner gives the server a root of its own below the home
	// folder it runs in (notebook_dir, as many deployments do): kernels
	// start at the root, and load_data reads from there.
	s := startHubOpts(t, map[string]string{"PYTHON_MCP_INTERPRETER": ""}, false, hubOptions{
		flags:  []string{"--hub-kernels", "--hub-server-name", "mcp"},
		config: hubKernelsConfig + "\nc.JupyterHub.allow_named_servers = True\nc.Spawner.notebook_dir = '~/work'\n",
	})
	root := filepath.Join(s.dir, "home", "alice", "work")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d.csv"), []byte("a\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	out := callText(t, alice, "run_code", map[string]any{"code": "import os\nprint(os.environ['JUPYTERHUB_USER'], os.environ['JUPYTERHUB_SERVER_NAME'], os.getcwd())"})
	if !strings.Contains(out, "alice mcp "+root) {
		t.Errorf("alice's run: %s", out)
	}
	if out := callText(t, alice, "load_data", map[string]any{"path": "d.csv"}); !strings.Contains(out, "2 rows x 1 columns") {
		t.Errorf("load_data at the server's root: %s", out)
	}
	status, body := hubGet(t, http.MethodGet, s.apiURL+"/users/alice", "culler-test-token")
	var m struct {
		Servers map[string]struct {
			Ready bool `json:"ready"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || status != http.StatusOK {
		t.Fatalf("the hub about alice: %d %s", status, body)
	}
	if !m.Servers["mcp"].Ready || m.Servers[""].Ready {
		t.Errorf("alice's servers: %s", body)
	}
	if out := callText(t, alice, "list_kernels", nil); !strings.Contains(out, "/user/alice/mcp/") {
		t.Errorf("list_kernels: %s", out)
	}
}

// roundTrips measures 1+1 on alice's server through the hub's proxy and at
// the server's own address (the proxy's route for it), and logs both: the
// cost of the proxy, for docs/performance.md.
func roundTrips(t *testing.T, s *hubSetup, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.proxyAPI, nil)
	req.Header.Set("Authorization", "token proxy-api-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var routes map[string]struct {
		Target string `json:"target"`
	}
	err = json.NewDecoder(resp.Body).Decode(&routes)
	resp.Body.Close()
	if err != nil || routes["/user/alice"].Target == "" {
		t.Fatalf("the proxy's routes: %v %v", routes, err)
	}
	for _, c := range []struct{ name, url string }{
		{"through the hub's proxy", s.hubURL + "/user/alice/"},
		{"direct", routes["/user/alice"].Target + "/user/alice/"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		k, err := kernel.Start(ctx, kernel.Options{Gateway: &kernel.Gateway{URL: c.url, Token: token}, StartTimeout: time.Minute})
		if err != nil {
			cancel()
			t.Fatalf("a kernel %s: %v", c.name, err)
		}
		const n = 40
		times := make([]time.Duration, 0, n)
		for range n {
			t0 := time.Now()
			if _, err := k.Execute(ctx, "1+1", kernel.ExecuteOptions{}); err != nil {
				t.Fatalf("1+1 %s: %v", c.name, err)
			}
			times = append(times, time.Since(t0))
		}
		k.Close()
		cancel()
		slices.Sort(times)
		t.Logf("1+1 on alice's server %s: median %v (p10 %v, p90 %v, %d runs)", c.name, times[n/2], times[n/10], times[9*n/10], n)
	}
}
