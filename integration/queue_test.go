//go:build unix

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Regression tests for the session queue: every call that runs code or
// changes a session takes its turn, in the order sent.

// collect reads responses until every id in ids has one, in any order.
func (c *rawConn) collect(ids ...string) map[string]map[string]json.RawMessage {
	c.t.Helper()
	got := map[string]map[string]json.RawMessage{}
	timeout := time.After(90 * time.Second)
	for len(got) < len(ids) {
		select {
		case m := <-c.msgs:
			if id, ok := m["id"]; ok {
				got[string(id)] = m
			}
		case err := <-c.err:
			c.t.Fatalf("waiting for responses %v: %v", ids, err)
		case <-timeout:
			c.t.Fatalf("responses %v: only %d arrived within 90 s", ids, len(got))
		}
	}
	return got
}

// toolCall is a tools/call line with the given id.
func toolCall(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// resultOf decodes a tools/call response's result.
func resultOf(t *testing.T, m map[string]json.RawMessage) (text string, isError bool, structured map[string]any) {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(m["result"], &r); err != nil {
		t.Fatalf("response %s: %v", m["result"], err)
	}
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n"), r.IsError, r.StructuredContent
}

// An empty session_id is the default session, on the default session's
// queue: two calls in a row both answer (the second used to wait forever).
func TestEmptySessionIDQueue(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	c.send(toolCall(1, "run_code", map[string]any{"session_id": "", "code": "1+1"}))
	c.send(toolCall(2, "run_code", map[string]any{"session_id": "", "code": "2+2"}))
	got := c.collect("1", "2")
	for id, want := range map[string]string{"1": "2", "2": "4"} {
		if text, isErr, _ := resultOf(t, got[id]); isErr || text != want {
			t.Errorf("call %s: %q (isError %v), want %s", id, text, isErr, want)
		}
	}
}

// delete_session takes its turn: the runs sent before it finish first, and
// no kernel outlives the delete (a run queued behind a delete used to start
// a kernel nobody tracked).
func TestDeleteTakesItsTurn(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	c.send(toolCall(1, "run_code", map[string]any{"session_id": "d", "code": "import time\ntime.sleep(2)"}))
	c.send(toolCall(2, "run_code", map[string]any{"session_id": "d", "code": "import os\nos.getpid()"}))
	c.send(toolCall(3, "delete_session", map[string]any{"session_id": "d"}))
	c.send(toolCall(4, "run_code", map[string]any{"session_id": "d", "code": "import os\nos.getpid()"}))
	got := c.collect("1", "2", "3", "4")
	text2, isErr, _ := resultOf(t, got["2"])
	var pid int
	if _, err := fmt.Sscan(text2, &pid); err != nil || isErr {
		t.Fatalf("run before the delete: %q", text2)
	}
	if text, isErr, _ := resultOf(t, got["3"]); isErr || !strings.Contains(text, "deleted") {
		t.Fatalf("delete_session: %q", text)
	}
	if !waitGone(t, pid, 10*time.Second) {
		t.Errorf("kernel %d of the run before the delete outlived the delete", pid)
	}
	// A run that was queued behind the delete says the session is gone and
	// starts nothing.
	if text, isErr, _ := resultOf(t, got["4"]); !isErr || !strings.Contains(text, "no longer exists") {
		t.Errorf("run queued behind the delete: %q (isError %v)", text, isErr)
	}
	c.send(toolCall(5, "list_sessions", nil))
	if _, _, st := resultOf(t, c.collect("5")["5"]); len(st["sessions"].([]any)) != 0 {
		t.Errorf("sessions after the delete: %v", st["sessions"])
	}
}

// save_figure and delete_history take their turn: a figure made by the
// call just before is the one saved, and delete_history -1 deletes the
// block recorded by the run sent before it.
func TestSaveFigureAndDeleteHistoryTakeTheirTurn(t *testing.T) {
	t.Parallel()
	requirePython(t, "matplotlib")
	c := startRaw(t, "--state-dir", "none")
	c.send(toolCall(1, "run_code", map[string]any{"session_id": "f", "code": "first = 1"}))
	c.collect("1")
	path := filepath.Join(t.TempDir(), "fig.png")
	c.send(toolCall(2, "run_code", map[string]any{"session_id": "f", "code": "import time\nimport matplotlib.pyplot as plt\ntime.sleep(1)\nplt.plot([1, 2, 3]); plt.show()"}))
	c.send(toolCall(3, "save_figure", map[string]any{"session_id": "f", "path": path}))
	c.send(toolCall(4, "run_code", map[string]any{"session_id": "f", "code": "import time\ntime.sleep(1)\nsecond = 2"}))
	c.send(toolCall(5, "delete_history", map[string]any{"session_id": "f", "start": -1}))
	got := c.collect("2", "3", "4", "5")
	if text, isErr, _ := resultOf(t, got["3"]); isErr {
		t.Fatalf("save_figure right after the plot: %s", text)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("saved figure: %v", err)
	}
	c.send(toolCall(6, "get_history", map[string]any{"session_id": "f"}))
	hist, _, _ := resultOf(t, c.collect("6")["6"])
	if !strings.Contains(hist, "first = 1") || !strings.Contains(hist, "plt.plot") || strings.Contains(hist, "second = 2") {
		t.Errorf("delete_history -1 sent after a run should delete that run's block:\n%s", hist)
	}
}

// Over streamable HTTP, the calls of one session join its queue in the
// order their POSTs arrived, as over stdio.
func TestHTTPCallsInOrder(t *testing.T) {
	t.Parallel()
	url := startHTTPServer(t)
	// Protocol 2025-11-25 opens each response stream with a priming event,
	// so a POST's response headers arrive once the server has read it.
	post := func(sid, body string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-http","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp, err = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	const n = 12
	var wg sync.WaitGroup
	bodies := make([]string, n)
	for i := range n {
		code := "order = []\n"
		if i > 0 {
			code = ""
		}
		code += fmt.Sprintf("order.append(%d)", i)
		read := make(chan struct{})
		wg.Go(func() {
			resp, err := post(sid, toolCall(i+1, "run_code", map[string]any{"session_id": "h", "code": code}))
			close(read)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies[i] = string(b)
		})
		// The next POST goes out once the server has answered this one's
		// headers, so it has read (and stamped) it.
		select {
		case <-read:
		case <-time.After(30 * time.Second):
			t.Fatal("the server did not read a POST")
		}
	}
	wg.Wait()
	resp, err = post(sid, toolCall(100, "run_code", map[string]any{"session_id": "h", "code": "order"}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]"
	if !strings.Contains(sseData(string(b)), want) {
		t.Fatalf("runs over HTTP ran out of order: %s\nbodies: %q", sseData(string(b)), bodies)
	}
}

// sseData joins the data lines of an SSE body (or returns a JSON body).
func sseData(body string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			b.WriteString(d)
		}
	}
	if b.Len() == 0 {
		return body
	}
	return b.String()
}

// A client that goes away without ending its HTTP session is forgotten
// after --client-idle-timeout; its kernel sessions stay. HTTP sessions are
// those of protocol 2025-11-25 and earlier (2026-07-28 has none), so the
// client speaks 2025-11-25.
func TestHTTPIdleClientSessionFreed(t *testing.T) {
	t.Parallel()
	url := startHTTPServer(t, "--client-idle-timeout", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "idle", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "stays", "code": "kept = 1"}}); err != nil {
		t.Fatal(err)
	}
	// The server ends the idle session; the client sees its session end.
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		cs.Close()
		t.Fatal("an idle client session was still open 30 s past a 1 s --client-idle-timeout")
	}
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "again", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "stays", "code": "kept"}})
	if err != nil || structured[runOutput](t, res).Result != "1" {
		t.Fatalf("kernel session after its client was forgotten: %v %s", err, text(res))
	}
}
