package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostWheel is the built wheel this machine installs: a Linux one.
func hostWheel(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the install tests run on Linux, where CI runs")
	}
	out := built(t)
	for _, w := range wheelTags {
		if w.platform == (platform{"linux", runtime.GOARCH}) && strings.HasPrefix(w.Tag, "manylinux") {
			return filepath.Join(out, fmt.Sprintf("kernel_mcp-%s-py3-none-%s.whl", version(t), w.Tag))
		}
	}
	t.Skipf("no wheel for linux/%s", runtime.GOARCH)
	return ""
}

// cleanEnv is this process's environment without what would choose the
// kernel's Python or the server's folders, so the installed kernel-mcp
// resolves its interpreter the default way.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PYTHON_MCP_INTERPRETER", k == "CONDA_PREFIX", k == "VIRTUAL_ENV",
			strings.HasPrefix(k, "KERNEL_MCP_"), strings.HasPrefix(k, "UV_"), strings.HasPrefix(k, "PIP_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func runCmd(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// kernelPython is what a session of the server started by cmd runs:
// run_code's sys.prefix and sys.executable, and session_status's
// interpreter.
type kernelPython struct{ Prefix, Executable, Interpreter string }

// connectAndRun starts cmd as an MCP server over stdio with a go-sdk
// client, checks the version it reports, runs code in a session and
// asks for the session's status.
func connectAndRun(t *testing.T, cmd *exec.Cmd) kernelPython {
	t.Helper()
	ipytest.Require(t)
	var stderr strings.Builder
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return stderr.Write(p)
	})
	logStderr := func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("server stderr:\n%s", stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dist-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		logStderr()
		t.Fatalf("initialize: %v", err)
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			logStderr()
		}
	}()
	if got := cs.InitializeResult().ServerInfo; got.Name != "kernel-mcp" || got.Version != version(t) {
		t.Errorf("initialize: server %q %q, want kernel-mcp %s", got.Name, got.Version, version(t))
	}
	call := func(tool string, args map[string]any, into any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			var text []string
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text = append(text, tc.Text)
				}
			}
			t.Fatalf("%s failed: %s", tool, strings.Join(text, "\n"))
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v in %s", tool, err, b)
		}
	}
	var run struct {
		Status string `json:"status"`
		Stdout string `json:"stdout"`
	}
	call("run_code", map[string]any{"session_id": "s", "code": "import sys\nprint(sys.prefix)\nprint(sys.executable)"}, &run)
	lines := strings.Split(strings.TrimSpace(run.Stdout), "\n")
	if run.Status != "ok" || len(lines) != 2 {
		t.Fatalf("run_code: status %q, stdout %q", run.Status, run.Stdout)
	}
	var status struct {
		Interpreter string `json:"interpreter"`
	}
	call("session_status", map[string]any{"session_id": "s"}, &status)
	return kernelPython{Prefix: lines[0], Executable: lines[1], Interpreter: status.Interpreter}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// realPath resolves symlinks, for comparing a venv's paths.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pip installs the Linux wheel into a data environment (a venv that sees
// python3's ipykernel); its bin/kernel-mcp is the binary, and the
// sessions run that environment's Python.
func TestPipInstall(t *testing.T) {
	wheel := hostWheel(t)
	ipytest.Require(t)
	venv := filepath.Join(t.TempDir(), "data-env")
	env := cleanEnv("PIP_DISABLE_PIP_VERSION_CHECK=1")
	runCmd(t, env, "python3", "-m", "venv", "--system-site-packages", "--without-pip", venv)
	// The venv sees python3's pip through its system site-packages; it
	// installs into the venv.
	runCmd(t, env, filepath.Join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--no-deps", wheel)
	bin := filepath.Join(venv, "bin", "kernel-mcp")
	if got, want := runCmd(t, env, bin, "--version"), "kernel-mcp "+version(t)+"\n"; got != want {
		t.Errorf("%s --version: %q, want %q", bin, got, want)
	}
	if b, err := os.ReadFile(bin); err != nil || !strings.HasPrefix(string(b), "\x7fELF") {
		t.Errorf("%s is not the binary itself (err %v)", bin, err)
	}

	cmd := exec.Command(bin, "--state-dir", t.TempDir())
	cmd.Env = env
	got := connectAndRun(t, cmd)
	t.Logf("pip-installed: kernel %+v", got)
	if realPath(t, got.Prefix) != realPath(t, venv) {
		t.Errorf("the kernel's sys.prefix is %s, want the env kernel-mcp is installed in, %s", got.Prefix, venv)
	}
	if filepath.Dir(got.Interpreter) != filepath.Join(venv, "bin") {
		t.Errorf("session_status names interpreter %q, want the python of %s", got.Interpreter, venv)
	}
}

// uv tool run runs the wheel's binary from an env of uv's own; that env
// has no ipykernel and is never the kernel's Python: the kernel's comes
// from the usual resolution (here the python3 kernelspec or python3 on
// PATH).
func TestUVToolRun(t *testing.T) {
	wheel := hostWheel(t)
	ipytest.Require(t)
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "uv-cache")
	env := cleanEnv("UV_CACHE_DIR="+cache, "UV_TOOL_DIR="+filepath.Join(tmp, "uv-tools"),
		"UV_PYTHON_DOWNLOADS=never", "UV_NO_CONFIG=1")
	uvArgs := []string{"tool", "run", "--offline", "--from", wheel, "kernel-mcp"}
	if got, want := runCmd(t, env, distUV(), append(uvArgs, "--version")...), "kernel-mcp "+version(t)+"\n"; !strings.HasSuffix(got, want) {
		t.Errorf("uv tool run … --version: %q, want it to end in %q", got, want)
	}

	cmd := exec.Command(distUV(), append(uvArgs, "--state-dir", filepath.Join(tmp, "state"))...)
	cmd.Env = env
	got := connectAndRun(t, cmd)
	t.Logf("uv tool run: kernel %+v", got)
	for _, p := range []string{got.Prefix, got.Executable, got.Interpreter} {
		if strings.HasPrefix(realPath(t, p), realPath(t, cache)) {
			t.Errorf("the kernel's Python is uv's tool env (%s, under UV_CACHE_DIR %s), want the usual one", p, cache)
		}
	}
	base := strings.TrimSpace(runCmd(t, cleanEnv(), "python3", "-c", "import sys; print(sys.prefix)"))
	if got.Prefix != base {
		t.Logf("note: the kernel's Python (%s) is not python3's on PATH (%s): a python3 kernelspec chose it", got.Prefix, base)
	}
}

// pip refuses a platform with no wheel rather than look for a source
// distribution to build: none is published.
func TestPipRefusesOtherPlatforms(t *testing.T) {
	out := built(t)
	ipytest.Require(t) // python3 with pip
	env := cleanEnv("PIP_DISABLE_PIP_VERSION_CHECK=1")
	pipFor := func(platform string) (string, error) {
		cmd := exec.Command("python3", "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", out,
			"--only-binary=:all:", "--platform", platform, "--python-version", "3.11", "--target", t.TempDir(), "kernel-mcp=="+version(t))
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// The same command finds the Windows wheel: what fails below is the
	// platform, not the command.
	if msg, err := pipFor("win_amd64"); err != nil || !strings.Contains(msg, "Would install kernel-mcp-"+version(t)) {
		t.Fatalf("pip for win_amd64: %v\n%s", err, msg)
	}
	msg, err := pipFor("win_arm64")
	if err == nil || !strings.Contains(msg, "No matching distribution found for kernel-mcp") {
		t.Errorf("pip for win_arm64 (no wheel): %v, want no matching distribution:\n%s", err, msg)
	}

	if runtime.GOOS != "linux" {
		return
	}
	mac := filepath.Join(out, fmt.Sprintf("kernel_mcp-%s-py3-none-macosx_12_0_arm64.whl", version(t)))
	cmd := exec.Command("python3", "-m", "pip", "install", "--dry-run", "--no-deps", "--target", t.TempDir(), mac)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "is not a supported wheel on this platform") {
		t.Errorf("pip install of the macOS wheel on Linux: %v, want not a supported wheel:\n%s", err, b)
	}
}
