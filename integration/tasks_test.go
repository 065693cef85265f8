//go:build unix

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireTool fails under CI, and skips elsewhere, when a client program
// a test drives is missing.
func requireTool(t *testing.T, path, how string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err == nil {
		if _, err = os.Stat(abs); err == nil {
			return abs
		}
	}
	msg := path + " is missing: " + how
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// MCP tasks (SEP-2663, protocol 2026-07-28) with a client no one here
// wrote: the Rust SDK rmcp (integration/tasks-rmcp). A 20 s loop becomes a
// task polled to its end, whose result is wait_run's; input() is answered
// through tasks/update; tasks/cancel interrupts and keeps the namespace; a
// short call returns its result directly.
func TestTasksRustClient(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	client := requireTool(t, "tasks-rmcp/target/release/tasks-rmcp", "run `make tasks-rmcp` (needs cargo)")
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		checkRustTasks(t, client, binary, "--state-dir", t.TempDir(), "--pool-size", "0")
	})
	// Over streamable HTTP, where protocol 2026-07-28 has no HTTP session:
	// rmcp names the task in the Mcp-Name header of tasks/get, tasks/update
	// and tasks/cancel, which the server checks.
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		const token = "rust-token-0123456789abcdef"
		url := startHTTPServer(t, "--token", token, "--pool-size", "0")
		checkRustTasks(t, client, url, token)
	})
}

// checkRustTasks runs the rmcp client with args and checks each step it
// printed.
func checkRustTasks(t *testing.T, client string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks-rmcp: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Step string          `json:"step"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("tasks-rmcp printed %q: %v", sc.Text(), err)
		}
		steps[line.Step] = line.Data
	}
	for _, s := range []string{"discover", "short", "long", "wait_run", "input", "cancel"} {
		if steps[s] == nil {
			t.Fatalf("tasks-rmcp did not get to step %s:\n%s\nstderr:\n%s", s, out, stderr.String())
		}
	}
	if !strings.Contains(string(steps["discover"]), `"io.modelcontextprotocol/tasks"`) || !strings.Contains(string(steps["discover"]), "2026-07-28") {
		t.Errorf("discover: %s", steps["discover"])
	}
	var short struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(steps["short"], &short)
	if short.ResultType != "complete" || len(short.Content) == 0 || short.Content[0].Text != "42" {
		t.Errorf("a short call did not return its result directly: %s", steps["short"])
	}
	var long struct {
		TaskID string `json:"task_id"`
		TTLMs  int64  `json:"ttl_ms"`
		Final  struct {
			Status string         `json:"status"`
			Result map[string]any `json:"result"`
		} `json:"final"`
	}
	json.Unmarshal(steps["long"], &long)
	if len(long.TaskID) != 32 || long.TTLMs <= 0 || long.Final.Status != "completed" {
		t.Fatalf("the 20 s loop: %s", steps["long"])
	}
	if !strings.Contains(string(steps["long"]), "epoch 19") || !strings.Contains(string(steps["long"]), "trained") {
		t.Errorf("the task's result lacks the run's output: %s", steps["long"])
	}
	var waited map[string]any
	json.Unmarshal(steps["wait_run"], &waited)
	for _, k := range []string{"content", "structuredContent", "isError"} {
		a, _ := json.Marshal(long.Final.Result[k])
		b, _ := json.Marshal(waited[k])
		if !bytes.Equal(a, b) {
			t.Errorf("the task's %s differs from wait_run's:\ntask:     %s\nwait_run: %s", k, a, b)
		}
	}
	if !strings.Contains(string(steps["input"]), `"completed"`) || !strings.Contains(string(steps["input"]), "hello Ada") {
		t.Errorf("input() through tasks/update: %s", steps["input"])
	}
	if c := string(steps["cancel"]); !strings.Contains(c, `"cancelled"`) || !strings.Contains(c, "namespace was kept") || !strings.Contains(c, `"text":"42"`) {
		t.Errorf("tasks/cancel: %s", c)
	}
}

// The 2025-11-25 tasks with the official TypeScript SDK 1.x's task client
// (client.experimental.tasks, testdata/tasks.mjs): tools/list marks the
// tools that take tasks, a 20 s loop is a task polled to its end whose
// result is wait_run's, input() is answered through the elicitation that
// tasks/result asks, tasks/cancel interrupts and keeps the namespace, and a
// call without a task returns its result directly.
func TestTasksTypeScriptClient(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	script, err := filepath.Abs("testdata/tasks.mjs")
	if err != nil {
		t.Fatal(err)
	}
	requireTool(t, "node_modules/@modelcontextprotocol/sdk/package.json", "run `npm ci` in integration/")
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, binary, "--state-dir", t.TempDir(), "--pool-size", "0")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	type stream struct {
		TaskID string         `json:"taskId"`
		Seen   []string       `json:"seen"`
		Result map[string]any `json:"result"`
		Error  string         `json:"error"`
	}
	var got struct {
		Capabilities map[string]any   `json:"capabilities"`
		TaskTools    []string         `json:"taskTools"`
		Short        map[string]any   `json:"short"`
		Long         stream           `json:"long"`
		WaitRun      map[string]any   `json:"waitRun"`
		List         []string         `json:"list"`
		Input        stream           `json:"input"`
		Elicited     []map[string]any `json:"elicited"`
		Cancelled    map[string]any   `json:"cancelled"`
		After        map[string]any   `json:"after"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := got.Capabilities["tasks"]; !ok {
		t.Errorf("initialize declares no tasks: %v", got.Capabilities)
	}
	if !slicesContain(got.TaskTools, "run_code:optional") || slicesContain(got.TaskTools, "wait_run:optional") {
		t.Errorf("execution.taskSupport: %v", got.TaskTools)
	}
	if fmt.Sprint(got.Short["content"]) != "[map[text:42 type:text]]" {
		t.Errorf("a call without a task: %v", got.Short)
	}
	if len(got.Long.TaskID) != 32 || got.Long.Seen[0] != "taskCreated" || got.Long.Seen[len(got.Long.Seen)-1] != "result" || !strings.Contains(fmt.Sprint(got.Long.Result), "epoch 19") {
		t.Fatalf("the 20 s loop: %+v", got.Long)
	}
	for _, k := range []string{"content", "structuredContent", "isError"} {
		a, _ := json.Marshal(got.Long.Result[k])
		b, _ := json.Marshal(got.WaitRun[k])
		if !bytes.Equal(a, b) {
			t.Errorf("tasks/result's %s differs from wait_run's:\ntask:     %s\nwait_run: %s", k, a, b)
		}
	}
	if !slicesContain(got.List, got.Long.TaskID) {
		t.Errorf("tasks/list %v lacks %s", got.List, got.Long.TaskID)
	}
	if !slicesContain(got.Input.Seen, "taskStatus:input_required") || !strings.Contains(fmt.Sprint(got.Input.Result), "hi Grace") {
		t.Errorf("input(): %+v", got.Input)
	}
	if len(got.Elicited) != 1 || !strings.Contains(fmt.Sprint(got.Elicited[0]), got.Input.TaskID) {
		t.Errorf("the elicitation tasks/result asked: %v", got.Elicited)
	}
	if got.Cancelled["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got.Cancelled["statusMessage"]), "namespace was kept") {
		t.Errorf("tasks/cancel: %v", got.Cancelled)
	}
	if fmt.Sprint(got.After["content"]) != "[map[text:42 type:text]]" {
		t.Errorf("after the cancel: %v", got.After)
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// httpTasksClient is a raw streamable HTTP client of protocol 2025-11-25
// (kernel-mcp's HTTP transport is stateful, so a 2026-07-28 client falls
// back to it there), for one user's token.
type httpTasksClient struct {
	t                 *testing.T
	url, token, sessn string
}

func newHTTPTasksClient(t *testing.T, url, token string) *httpTasksClient {
	c := &httpTasksClient{t: t, url: url, token: token}
	c.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw-http", "version": "1"}})
	c.post("notifications/initialized", nil)
	return c
}

// post sends a request (a notification when params is nil) and returns
// the JSON-RPC response.
func (c *httpTasksClient) post(method string, params map[string]any) map[string]any {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["id"], msg["params"] = 1, params
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.sessn != "" {
		req.Header.Set("Mcp-Session-Id", c.sessn)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.sessn = id
	}
	if params == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	return rpcResponse(c.t, method, resp)
}

// rpcResponse reads the JSON-RPC response of a streamable HTTP POST, from a
// JSON body or the event stream that carries it.
func rpcResponse(t *testing.T, method string, resp *http.Response) map[string]any {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id"`) {
				b = []byte(data)
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: HTTP %d %q: %v", method, resp.StatusCode, b, err)
	}
	return m
}

// sepHTTPClient is a raw client of protocol 2026-07-28 over streamable
// HTTP: no handshake and no HTTP session; each request names its version in
// the MCP-Protocol-Version header and in its _meta, with the tasks
// extension declared unless plain is set.
type sepHTTPClient struct {
	t          *testing.T
	url, token string
	plain      bool
}

// post sends a request with the headers the binding asks for (Mcp-Name:
// the task, for the tasks methods) and extra ones, which override them ("":
// leave out). It returns the JSON-RPC response and the HTTP status.
func (c *sepHTTPClient) post(method string, params map[string]any, extra map[string]string) (map[string]any, int) {
	c.t.Helper()
	h := map[string]string{}
	if id, ok := params["taskId"].(string); ok {
		h["Mcp-Name"] = id
	} else if name, ok := params["name"].(string); ok {
		h["Mcp-Name"] = name
	}
	maps.Copy(h, extra)
	resp, err := http.DefaultClient.Do(c.request(context.Background(), method, params, h))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.t.Errorf("%s: a 2026-07-28 request got an HTTP session %q", method, id)
	}
	return rpcResponse(c.t, method, resp), resp.StatusCode
}

// request is a POST of method with params, the _meta and headers of
// protocol 2026-07-28, and the headers in extra ("": leave out).
func (c *sepHTTPClient) request(ctx context.Context, method string, params map[string]any, extra map[string]string) *http.Request {
	caps := map[string]any{}
	if !c.plain {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-http-2026", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url, bytes.NewReader(body))
	h := map[string]string{
		"Content-Type":         "application/json",
		"Accept":               "application/json, text/event-stream",
		"Authorization":        "Bearer " + c.token,
		"MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method":           method,
	}
	maps.Copy(h, extra)
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	return req
}

// listen opens a subscriptions/listen for task ids over streamable HTTP:
// its POST's response is an event stream. It returns the messages as they
// come (the channel closes when the stream ends) and a function that ends
// the stream, as a client does by closing it.
func (c *sepHTTPClient) listen(ids []string) (<-chan map[string]any, func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := c.request(ctx, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": ids}}, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		cancel()
		c.t.Fatalf("subscriptions/listen: HTTP %d %s", resp.StatusCode, ct)
	}
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out, cancel
}

// Over streamable HTTP with --tokens-file: a task is its user's alone. To
// another user its id is as unknown as one never made, and it is not in
// their tasks/list; its record is in its user's state folder.
func TestTasksHTTPUsers(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHTTPServer(t, "--tokens-file", tokens, "--state-dir", filepath.Join(dir, "state"), "--pool-size", "0", "--task-wait", "1")
	alice := newHTTPTasksClient(t, url, aliceToken)
	bob := newHTTPTasksClient(t, url, bobToken)

	code := "import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(0.5)"
	created := alice.post("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "a", "code": code}, "task": map[string]any{}})
	task, _ := created["result"].(map[string]any)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if len(id) != 32 {
		t.Fatalf("tools/call: %v", created)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "users", "alice", "tasks", id+".json")); err != nil {
		t.Errorf("alice's task record: %v", err)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		other := bob.post(method, map[string]any{"taskId": id})
		unknown := bob.post(method, map[string]any{"taskId": "0123456789abcdef0123456789abcdef"})
		if fmt.Sprint(other["error"]) != fmt.Sprint(unknown["error"]) || !strings.Contains(fmt.Sprint(other["error"]), "-32602") {
			t.Errorf("bob's %s of alice's task: %v; of an unknown one: %v", method, other, unknown)
		}
	}
	if list := bob.post("tasks/list", map[string]any{}); strings.Contains(fmt.Sprint(list), id) {
		t.Errorf("bob's tasks/list: %v", list)
	}
	if list := alice.post("tasks/list", map[string]any{}); !strings.Contains(fmt.Sprint(list), id) {
		t.Errorf("alice's tasks/list: %v", list)
	}
	if res := alice.post("tools/call", map[string]any{"name": "list_sessions", "arguments": map[string]any{}, "task": map[string]any{}}); !strings.Contains(fmt.Sprint(res["error"]), "-32601") {
		t.Errorf("a task asked of list_sessions: %v", res)
	}
	res := alice.post("tasks/result", map[string]any{"taskId": id})
	if !strings.Contains(fmt.Sprint(res["result"]), "step 3") {
		t.Errorf("tasks/result: %v", res)
	}

	// The same under protocol 2026-07-28 and SEP-2663, each request its own
	// POST without an HTTP session.
	alice26 := &sepHTTPClient{t: t, url: url, token: aliceToken}
	bob26 := &sepHTTPClient{t: t, url: url, token: bobToken}
	made, _ := alice26.post("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "a", "code": code}}, nil)
	result, _ := made["result"].(map[string]any)
	id, _ = result["taskId"].(string)
	if result["resultType"] != "task" || len(id) != 32 {
		t.Fatalf("tools/call under 2026-07-28: %v", made)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "users", "alice", "tasks", id+".json")); err != nil {
		t.Errorf("alice's task record: %v", err)
	}
	// SEP-2663's task notifications over HTTP: the listen's own POST is the
	// stream. bob's listen agrees to none of alice's tasks.
	notes, endListen := alice26.listen([]string{id, "0123456789abcdef0123456789abcdef"})
	defer endListen()
	bobNotes, endBob := bob26.listen([]string{id})
	if ack := <-bobNotes; ack["method"] != "notifications/subscriptions/acknowledged" || fmt.Sprint(ack["params"].(map[string]any)["notifications"]) != "map[taskIds:[]]" {
		t.Errorf("bob's listen for alice's task: %v", ack)
	}
	endBob()
	for range bobNotes {
		t.Errorf("bob's listen told him of alice's task")
	}
	if ack := <-notes; ack["method"] != "notifications/subscriptions/acknowledged" || fmt.Sprint(ack["params"].(map[string]any)["notifications"]) != fmt.Sprintf("map[taskIds:[%s]]", id) {
		t.Fatalf("alice's listen: %v", ack)
	}
	var told []string
	for len(told) == 0 || told[len(told)-1] != "completed" {
		n, ok := <-notes
		p, _ := n["params"].(map[string]any)
		if !ok || n["method"] != "notifications/tasks" || p["taskId"] != id {
			t.Fatalf("alice's listen after %v: %v (open %v)", told, n, ok)
		}
		told = append(told, fmt.Sprint(p["status"]))
		if p["status"] == "completed" && !strings.Contains(fmt.Sprint(p["result"]), "step 3") {
			t.Errorf("the completed task's notification: %v", p)
		}
	}
	if told[0] != "working" {
		t.Errorf("alice was told %v", told)
	}
	endListen()
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		other, _ := bob26.post(method, map[string]any{"taskId": id}, nil)
		unknown, _ := bob26.post(method, map[string]any{"taskId": "0123456789abcdef0123456789abcdef"}, nil)
		if fmt.Sprint(other["error"]) != fmt.Sprint(unknown["error"]) || !strings.Contains(fmt.Sprint(other["error"]), "-32602") {
			t.Errorf("bob's %s of alice's task: %v; of an unknown one: %v", method, other, unknown)
		}
	}
	// The binding's header: missing, or naming another task.
	for _, name := range []string{"", "0123456789abcdef0123456789abcdef"} {
		res, status := alice26.post("tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": name})
		if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(res["error"]), "-32020") {
			t.Errorf("tasks/get with Mcp-Name %q: HTTP %d %v", name, status, res)
		}
	}
	// Not in SEP-2663; and the extension undeclared.
	for _, method := range []string{"tasks/list", "tasks/result"} {
		if res, _ := alice26.post(method, map[string]any{"taskId": id}, nil); !strings.Contains(fmt.Sprint(res["error"]), "-32601") {
			t.Errorf("%s under 2026-07-28: %v", method, res)
		}
	}
	plain := &sepHTTPClient{t: t, url: url, token: aliceToken, plain: true}
	if res, _ := plain.post("tasks/get", map[string]any{"taskId": id}, nil); !strings.Contains(fmt.Sprint(res["error"]), "-32021") {
		t.Errorf("tasks/get without the extension declared: %v", res)
	}
	if r := alice26.completed(id); !strings.Contains(fmt.Sprint(r["result"]), "step 3") {
		t.Errorf("the completed task's result: %v", r)
	}
}

// completed polls tasks/get until the task is completed, and returns
// tasks/get's result; a status other than working or completed, or a
// minute of working, fails the test.
func (c *sepHTTPClient) completed(id string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, _ := c.post("tasks/get", map[string]any{"taskId": id}, nil)
		r, _ := got["result"].(map[string]any)
		if r["status"] == "completed" {
			return r
		}
		if r["status"] != "working" || time.Now().After(deadline) {
			c.t.Fatalf("tasks/get under 2026-07-28: %v", got)
		}
		time.Sleep(200 * time.Millisecond) // the client's poll interval
	}
}

// stdioTasks is a raw JSON-RPC client of protocol 2026-07-28 with the tasks
// extension declared, over a server process's stdin and stdout.
type stdioTasks struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startStdioTasks(t *testing.T, state string) *stdioTasks {
	t.Helper()
	cmd := exec.Command(binary, "--state-dir", state, "--pool-size", "0", "--task-wait", "1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &stdioTasks{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

func (c *stdioTasks) call(method string, params map[string]any) map[string]any {
	c.t.Helper()
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-stdio", "version": "1"},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["id"] == float64(c.id) {
			return m
		}
	}
}

// A task's record is on disk before its id is returned, and its result
// once its run ends: after the server is killed (no orderly stop), a new
// server answers tasks/get for a task that had ended with its result, and
// for one whose run was going with how it ended.
func TestTasksSurviveAKill(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	state := t.TempDir()
	c := startStdioTasks(t, state)
	run := func(code string) map[string]any {
		return c.call("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "k", "code": code}})["result"].(map[string]any)
	}
	run("None")
	ended := run("import time\ntime.sleep(1.5)\nprint('ended before the kill')")
	endedID, _ := ended["taskId"].(string)
	going := run("import time\nwhile True: time.sleep(0.1)")
	goingID, _ := going["taskId"].(string)
	if len(endedID) != 32 || len(goingID) != 32 {
		t.Fatalf("tools/call: %v / %v", ended, going)
	}
	// The first ends (its end recorded), the second runs.
	deadline := time.Now().Add(90 * time.Second)
	for _, w := range []struct{ id, want string }{{endedID, "completed"}, {goingID, "is running"}} {
		for {
			task := c.call("tasks/get", map[string]any{"taskId": w.id})["result"].(map[string]any)
			if task["status"] == w.want || strings.Contains(fmt.Sprint(task["statusMessage"]), w.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s is not %s: %v", w.id, w.want, task)
			}
			<-time.After(200 * time.Millisecond)
		}
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()

	c2 := startStdioTasks(t, state)
	got := c2.call("tasks/get", map[string]any{"taskId": endedID})["result"].(map[string]any)
	if got["status"] != "completed" || !strings.Contains(fmt.Sprint(got["result"]), "ended before the kill") {
		t.Errorf("the task that had ended: %v", got)
	}
	got = c2.call("tasks/get", map[string]any{"taskId": goingID})["result"].(map[string]any)
	if got["status"] != "failed" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "server restarted") {
		t.Errorf("the task whose run was going: %v", got)
	}
}
