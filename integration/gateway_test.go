//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type gatewayStatus struct {
	Gateway *struct {
		URL            string `json:"url"`
		KernelID       string `json:"kernel_id"`
		ExecutionState string `json:"execution_state"`
		Attached       bool   `json:"attached"`
	} `json:"gateway"`
	ConnectionFile string `json:"connection_file"`
	Attached       bool   `json:"attached"`
}

// wantError checks that a tool result is an error whose text says want.
func wantError(t *testing.T, res *mcp.CallToolResult, want string) {
	t.Helper()
	if !res.IsError || !strings.Contains(text(res), want) {
		t.Fatalf("want an error saying %q; got isError=%v: %s", want, res.IsError, text(res))
	}
}

// TestGatewaySessions drives the built binary in gateway mode against a
// real Jupyter Kernel Gateway: sessions, images, errors, restart, delete,
// attaching to a kernel by id, and bad input that must leave it serving.
func TestGatewaySessions(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	s := startServer(t, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "1")

	if _, out := s.run("default", "x = 21"); out.Status != "ok" {
		t.Fatalf("x = 21: %+v", out)
	}
	if _, out := s.run("default", "print('hi')\nx * 2"); out.Result != "42" || out.Stdout != "hi\n" {
		t.Fatalf("x * 2: %+v", out)
	}
	res, _ := s.run("default", "from IPython.display import Image, display\nimport base64\ndisplay(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')))")
	if imgs, _ := imageParts(res); len(imgs) != 1 {
		t.Fatalf("%d images in the result, want 1: %s", len(imgs), text(res))
	}
	res, out := s.run("default", "y = 1\n1/0")
	if !res.IsError || out.Error == nil || out.Error.EName != "ZeroDivisionError" || out.Error.Line != 2 {
		t.Fatalf("1/0: %+v", out)
	}

	// Kernel Gateway's iopub rate limit drops most of a 5 MB print: the
	// result must say so rather than look complete.
	res, out = s.run("default", "print('a' * 5_000_000)")
	if !strings.Contains(text(res), "output was dropped") || !out.Truncated {
		t.Fatalf("5 MB print: truncated=%v, text: %.300s", out.Truncated, text(res))
	}
	// install_package runs %pip in the remote kernel; an installed
	// package needs no network.
	res = s.call("install_package", map[string]any{"package_name": "ipykernel"})
	if inst := structured[struct {
		ExitCode int `json:"exit_code"`
	}](t, res); res.IsError || inst.ExitCode != 0 {
		t.Fatalf("install_package: exit %d: %s", inst.ExitCode, text(res))
	}

	kernels := text(s.call("list_kernels", nil))
	if !strings.Contains(kernels, "python3") || !strings.Contains(kernels, gw.URL) {
		t.Errorf("list_kernels: %s", kernels)
	}
	st := structured[gatewayStatus](t, s.call("session_status", map[string]any{"session_id": "default"}))
	if st.Gateway == nil || st.Gateway.KernelID == "" || st.Gateway.URL != gw.URL || st.Gateway.Attached {
		t.Fatalf("session_status: %+v", st.Gateway)
	}
	id := st.Gateway.KernelID

	// Attach a second session to the same kernel: one namespace.
	res = s.call("create_session", map[string]any{"session_id": "shared", "kernel_id": id})
	if res.IsError {
		t.Fatalf("create_session kernel_id: %s", text(res))
	}
	if _, out := s.run("shared", "x + 1"); out.Result != "22" {
		t.Fatalf("the attached session does not see x: %+v", out)
	}
	wantError(t, s.call("reset_run_context", map[string]any{"session_id": "shared"}), "force: true")
	if res := s.call("delete_session", map[string]any{"session_id": "shared"}); res.IsError {
		t.Fatal(text(res))
	}
	// Deleting the attached session only detached it.
	if _, out := s.run("default", "x"); out.Result != "21" {
		t.Fatalf("after detaching: %+v", out)
	}

	// Bad input: each a clear error, and the server keeps serving.
	wantError(t, s.call("create_session", map[string]any{"session_id": "bad1", "kernel": "nosuchspec"}), `has no kernelspec "nosuchspec"`)
	wantError(t, s.call("create_session", map[string]any{"session_id": "bad2", "kernel_id": "00000000-0000-0000-0000-000000000000"}), "has no kernel with id")
	wantError(t, s.call("create_session", map[string]any{"session_id": "bad3", "python": "/usr/bin/python3"}), "python cannot be used with the gateway")

	if res := s.call("reset_run_context", map[string]any{"session_id": "default"}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("default", "x"); out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("x after restart: %+v", out)
	}
	// The restart may have swapped in the pool's warm kernel: the old one
	// is then shut down in the background, the new one by delete_session.
	newID := structured[gatewayStatus](t, s.call("session_status", map[string]any{"session_id": "default"})).Gateway.KernelID
	if res := s.call("delete_session", map[string]any{"session_id": "default"}); res.IsError {
		t.Fatal(text(res))
	}
	if code := gatewayKernelStatus(t, gw, newID); code != http.StatusNotFound {
		t.Fatalf("after delete_session the gateway answers %d for the kernel, want 404", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for code := gatewayKernelStatus(t, gw, id); code != http.StatusNotFound; code = gatewayKernelStatus(t, gw, id) {
		if time.Now().After(deadline) {
			t.Fatalf("the kernel replaced by reset_run_context still answers %d 30 s later, want 404", code)
		}
		time.Sleep(100 * time.Millisecond) // polling the gateway's view; no event to wait on
	}
	// Stopping the server deletes the kernels it started, the warm one too.
	s.close()
	if left := gatewayKernels(t, gw); len(left) != 0 {
		t.Fatalf("kernels left on the gateway after the server stopped: %v", left)
	}
}

// gatewayKernels lists the kernel ids the gateway runs.
func gatewayKernels(t *testing.T, gw *gatewaytest.Server) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/api/kernels", nil)
	req.Header.Set("Authorization", "token "+gw.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ks []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ks); err != nil {
		t.Fatalf("GET /api/kernels: %d: %v", resp.StatusCode, err)
	}
	ids := make([]string, len(ks))
	for i, k := range ks {
		ids[i] = k.ID
	}
	return ids
}

// TestGatewayUnusable points the server at a gateway it cannot use: each
// run is a clear error, and the server keeps serving.
func TestGatewayUnusable(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct{ name, url, token, want string }{
		{"unreachable", closed, "", "gateway " + closed + " is unreachable"},
		{"wrong token", gw.URL, "wrong", "refused the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, "--gateway-url", tc.url, "--gateway-token", tc.token, "--pool-size", "0")
			wantError(t, s.call("run_code", map[string]any{"code": "1+1"}), tc.want)
			if res := s.call("list_sessions", nil); res.IsError {
				t.Fatal(text(res))
			}
			wantError(t, s.call("list_kernels", nil), tc.want)
		})
	}
}

// gatewayKernelStatus is the HTTP status of GET /api/kernels/{id}.
func gatewayKernelStatus(t *testing.T, gw *gatewaytest.Server, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/api/kernels/"+id, nil)
	req.Header.Set("Authorization", "token "+gw.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAttachConnectionFile attaches a session to another session's local
// kernel by its connection file, as a person would with
// `jupyter console --existing`: one namespace, no restart from the
// attachment, and deleting it only detaches.
func TestAttachConnectionFile(t *testing.T) {
	s := startServer(t, "--pool-size", "0")
	if _, out := s.run("owner", "v = 'shared'"); out.Status != "ok" {
		t.Fatalf("%+v", out)
	}
	st := structured[gatewayStatus](t, s.call("session_status", map[string]any{"session_id": "owner"}))
	if st.ConnectionFile == "" || st.Attached || st.Gateway != nil {
		t.Fatalf("session_status of a local session: %+v", st)
	}
	wantError(t, s.call("create_session", map[string]any{"session_id": "rel", "connection_file": "kernel.json"}), "absolute path")
	wantError(t, s.call("create_session", map[string]any{"session_id": "gw", "kernel_id": "abc"}), "--gateway-url")
	if res := s.call("create_session", map[string]any{"session_id": "guest", "connection_file": st.ConnectionFile}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("guest", "v"); out.Result != "'shared'" {
		t.Fatalf("the attached session does not see v: %+v", out)
	}
	gst := structured[gatewayStatus](t, s.call("session_status", map[string]any{"session_id": "guest"}))
	if !gst.Attached || gst.ConnectionFile != st.ConnectionFile {
		t.Errorf("session_status of the attached session: %+v", gst)
	}
	wantError(t, s.call("reset_run_context", map[string]any{"session_id": "guest", "force": true}), "cannot be restarted from here")
	if res := s.call("delete_session", map[string]any{"session_id": "guest"}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("owner", "v"); out.Result != "'shared'" {
		t.Fatalf("deleting the attached session stopped the kernel: %+v", out)
	}
}

// TestGatewayDies kills the gateway under a server that uses it: the next
// run fails with an error naming the gateway, and the history stays.
func TestGatewayDies(t *testing.T) {
	gw, err := gatewaytest.Start(context.Background(), gatewaytest.KernelGateway)
	if err != nil {
		gatewaytest.Unavailable(t, err)
	}
	defer gw.Stop()
	s := startServer(t, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0")
	if _, out := s.run("default", "x = 1"); out.Status != "ok" {
		t.Fatalf("%+v", out)
	}
	gw.Kill()
	// Within the reconnect window the run fails as a lost kernel, after it
	// as a start that cannot reach the gateway: either way naming it.
	res := s.call("run_code", map[string]any{"code": "x"})
	if !res.IsError || !strings.Contains(text(res), gw.URL) {
		t.Fatalf("run after the gateway died: isError=%v: %s", res.IsError, text(res))
	}
	t.Logf("the run said: %s", text(res))
	if h := text(s.call("get_history", nil)); !strings.Contains(h, "x = 1") {
		t.Fatalf("history lost: %s", h)
	}
}

// TestGatewayAttachSurvivesServerRestart attaches a session to a kernel
// that another client (standing in for a notebook) started on the gateway:
// stopping kernel-mcp only detaches, and a new server on the same state
// directory attaches the session to the same kernel again.
func TestGatewayAttachSurvivesServerRestart(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	notebook, err := kernel.Start(ctx, kernel.Options{Gateway: &kernel.Gateway{URL: gw.URL, Token: gw.Token}})
	if err != nil {
		t.Fatal(err)
	}
	defer notebook.Close()
	state := t.TempDir()
	args := []string{"--state-dir", state, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0"}

	s := startServer(t, args...)
	if res := s.call("create_session", map[string]any{"session_id": "nb", "kernel_id": notebook.GatewayKernelID()}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("nb", "z = 'from kernel-mcp'"); out.Status != "ok" {
		t.Fatalf("%+v", out)
	}
	s.close()

	res, err := notebook.Execute(ctx, "z", kernel.ExecuteOptions{})
	if err != nil {
		t.Fatalf("the kernel did not survive the server's stop: %v", err)
	}
	if v, _ := res.Outputs[0].String("text/plain"); v != "'from kernel-mcp'" {
		t.Fatalf("z = %s", v)
	}

	s2 := startServer(t, args...)
	if _, out := s2.run("nb", "z"); out.Result != "'from kernel-mcp'" {
		t.Fatalf("after the restart the session is not attached to the same kernel: %+v", out)
	}
}

// TestEnterpriseGatewaySession runs the binary against Enterprise Gateway
// (local mode): state, a kernel death reported and recovered from, with
// the KERNEL_USERNAME it requires sent on the server's behalf.
func TestEnterpriseGatewaySession(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.EnterpriseGateway)
	s := startServer(t, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0")
	s.run("default", "x = 20")
	if _, out := s.run("default", "x + 1"); out.Result != "21" {
		t.Fatalf("x + 1: %+v", out)
	}
	res, out := s.run("default", "import os\nos._exit(1)")
	if !res.IsError || !strings.Contains(out.Note, "kernel died") {
		t.Fatalf("os._exit: %+v", out)
	}
	_, out = s.run("default", "'x' in dir()")
	if out.Result != "False" || !strings.Contains(out.Note, "previous kernel had died") {
		t.Fatalf("the run after the death: %+v", out)
	}
	// The dead kernel (restarted by the gateway) and the new one are both
	// deleted: nothing is left once the server stops.
	s.close()
	if left := gatewayKernels(t, gw); len(left) != 0 {
		t.Fatalf("kernels left on the gateway after the server stopped: %v", left)
	}
}

// A kernel behind Kernel Gateway that sends a message over
// --max-message-size costs its own session only: the gateway relays the
// message whole, the server stops reading at the limit, reports it, and
// deletes that kernel; another session on the same gateway goes on.
func TestGatewayOversizedMessage(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	s := startServer(t, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0", "--max-message-size", "1M")
	s.run("other", "kept = 'still here'")
	s.run("big", "x = 1")
	before := gatewayKernels(t, gw)
	res, out := s.run("big", "display({'text/plain': 'x' * 2_000_000}, raw=True)")
	const why = "it broke the protocol on websocket: it sent a message over the 1048576-byte limit (--max-message-size)"
	if out.Status != "interrupted" || !strings.Contains(out.Note, why) || !strings.Contains(text(res), why) {
		t.Fatalf("the oversized message's run: status %q, note %q\n%s", out.Status, out.Note, text(res))
	}
	if _, out := s.run("other", "kept"); out.Result != "'still here'" {
		t.Errorf("the other session after the oversized message: %+v", out)
	}
	// The stopped kernel is deleted from the gateway.
	after := gatewayKernels(t, gw)
	if len(after) != len(before)-1 {
		t.Errorf("gateway kernels: %d before, %d after; want the stopped one deleted", len(before), len(after))
	}
	if _, out := s.run("big", "'fresh'"); out.Result != "'fresh'" {
		t.Errorf("the session's next run: %+v", out)
	}
}
