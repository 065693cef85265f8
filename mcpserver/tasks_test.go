package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawClient speaks JSON-RPC to a server over an in-memory transport,
// without an SDK client, so that tests see the wire as it is.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	// protocol is what each request's _meta names (2026-07-28 and later);
	// "" for a client that initializes.
	protocol string
	tasks    bool // declare the tasks extension on each request

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan *jsonrpc.Response
	// asks gets the server's requests to the client (elicitation), notes
	// its task status notifications.
	asks  chan *jsonrpc.Request
	notes chan *jsonrpc.Request
	done  chan struct{}
}

func newRawClient(t *testing.T, srv *Server, protocol string, declareTasks bool) *rawClient {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, srv.OrderedTransport(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, conn: conn, protocol: protocol, tasks: declareTasks, waiting: map[int64]chan *jsonrpc.Response{},
		asks: make(chan *jsonrpc.Request, 8), notes: make(chan *jsonrpc.Request, 64), done: make(chan struct{})}
	go c.read()
	t.Cleanup(func() {
		conn.Close()
		<-c.done
		ss.Close()
	})
	return c
}

func (c *rawClient) read() {
	defer close(c.done)
	for {
		msg, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			id, _ := m.ID.Raw().(int64)
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				c.asks <- m
			} else if strings.HasPrefix(m.Method, "notifications/tasks") || strings.HasPrefix(m.Method, "notifications/subscriptions") {
				select {
				case c.notes <- m:
				default:
				}
			}
		}
	}
}

// send sends a request and returns a channel for its response.
func (c *rawClient) send(method string, params map[string]any) <-chan *jsonrpc.Response {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if c.protocol >= "2026-07-28" {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		caps := map[string]any{}
		if c.tasks {
			caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
		}
		meta[metaProtocol] = c.protocol
		meta[metaClientCaps] = caps
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
		params["_meta"] = meta
	}
	b, _ := json.Marshal(params)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan *jsonrpc.Response, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	jid, _ := jsonrpc.MakeID(float64(id))
	if err := c.conn.Write(context.Background(), &jsonrpc.Request{ID: jid, Method: method, Params: b}); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

// call sends a request and waits for its response; it fails the test on a
// JSON-RPC error unless wantCode is that error's code.
func (c *rawClient) call(method string, params map[string]any) map[string]any {
	c.t.Helper()
	resp := c.await(c.send(method, params))
	if resp.Error != nil {
		c.t.Fatalf("%s: %v", method, resp.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *rawClient) await(ch <-chan *jsonrpc.Response) *jsonrpc.Response {
	c.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(90 * time.Second):
		c.t.Fatal("no response in 90s")
		return nil
	}
}

// callErr sends a request that must fail with code.
func (c *rawClient) callErr(method string, params map[string]any, code int64) *jsonrpc.Error {
	c.t.Helper()
	resp := c.await(c.send(method, params))
	var e *jsonrpc.Error
	if resp.Error == nil || !asWire(resp.Error, &e) || e.Code != code {
		c.t.Fatalf("%s: want error %d, got %v (result %s)", method, code, resp.Error, resp.Result)
	}
	return e
}

func asWire(err error, e **jsonrpc.Error) bool {
	w, ok := err.(*jsonrpc.Error)
	*e = w
	return ok
}

func (c *rawClient) initialize(version string, elicit bool) {
	c.t.Helper()
	caps := map[string]any{}
	if elicit {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	c.call("initialize", map[string]any{"protocolVersion": version, "capabilities": caps, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	b, _ := json.Marshal(map[string]any{})
	if err := c.conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/initialized", Params: b}); err != nil {
		c.t.Fatal(err)
	}
}

// poll calls tasks/get until the task's status is one of want, at the
// task's own poll interval (the protocol's way of waiting).
func (c *rawClient) poll(id string, want ...string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		task := c.call("tasks/get", map[string]any{"taskId": id})
		for _, w := range want {
			if task["status"] == w {
				return task
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %v after 90s, want %v", id, task["status"], want)
		}
		iv, _ := task["pollIntervalMs"].(float64)
		if iv == 0 {
			iv, _ = task["pollInterval"].(float64)
		}
		<-time.After(time.Duration(min(iv, 200)) * time.Millisecond)
	}
}

func taskServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.TaskWait == 0 {
		cfg.TaskWait = 300 * time.Millisecond
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// warm starts session t's kernel through a client without tasks, so that
// the calls after it are timed without the kernel's start.
func warm(t *testing.T, srv *Server) {
	t.Helper()
	newRawClient(t, srv, "2026-07-28", false).call("tools/call", runArgs("None"))
}

func runArgs(code string) map[string]any {
	return map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "t", "code": code}}
}

// loop is code that runs for about secs seconds, printing as it goes.
func loop(secs int) string {
	return fmt.Sprintf("import time\nfor i in range(%d):\n    print('step', i, flush=True)\n    time.sleep(0.5)\n'finished'", secs*2)
}

func TestTaskSEPCompletesWithWaitRunsResult(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)

	disc := c.call("server/discover", nil)
	ext, _ := disc["capabilities"].(map[string]any)["extensions"].(map[string]any)
	if _, ok := ext[tasksExtension]; !ok {
		t.Fatalf("server/discover lists no tasks extension: %v", disc["capabilities"])
	}
	// A short call returns its result directly.
	warm(t, srv)
	short := c.call("tools/call", runArgs("1+1"))
	if short["resultType"] == "task" || !strings.Contains(fmt.Sprint(short["content"]), "2") {
		t.Fatalf("a short call: %v", short)
	}
	created := c.call("tools/call", runArgs(loop(2)))
	if created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("a long call: %v", created)
	}
	id, _ := created["taskId"].(string)
	if ref, _ := created["_meta"].(map[string]any)[metaTaskRun].(map[string]any); ref["session_id"] != "t" || ref["run_id"] != "r3" {
		t.Errorf("CreateTaskResult's run: %v", created["_meta"])
	}
	if len(id) != 32 || created["ttlMs"].(float64) <= 0 || created["pollIntervalMs"].(float64) <= 0 || created["createdAt"] == nil {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	// A task is visible as such to list_sessions' views.
	ss, _ := srv.eng.Lookup("t")
	if r, _ := ss.FindRun(""); !r.View().Task {
		t.Fatal("the run of a task is not marked as one")
	}
	done := c.poll(id, "completed", "failed", "cancelled")
	if done["status"] != "completed" || done["resultType"] != "complete" {
		t.Fatalf("final task: %v", done)
	}
	res, _ := done["result"].(map[string]any)
	if !strings.Contains(fmt.Sprint(res["content"]), "step 3") || !strings.Contains(fmt.Sprint(res["content"]), "finished") {
		t.Fatalf("result: %v", res)
	}
	// wait_run returns the same result.
	wr := c.call("tools/call", map[string]any{"name": "wait_run", "arguments": map[string]any{"session_id": "t"}})
	for _, k := range []string{"content", "structuredContent", "isError"} {
		a, _ := json.Marshal(res[k])
		b, _ := json.Marshal(wr[k])
		if string(a) != string(b) {
			t.Errorf("%s differs:\ntask:     %s\nwait_run: %s", k, a, b)
		}
	}
}

func TestTaskSEPRules(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	created := c.call("tools/call", runArgs(loop(1)))
	id := created["taskId"].(string)

	// A client that did not declare the extension: -32021 naming it.
	plain := newRawClient(t, srv, "2026-07-28", false)
	e := plain.callErr("tasks/get", map[string]any{"taskId": id}, -32021)
	if !strings.Contains(string(e.Data), tasksExtension) {
		t.Fatalf("-32021 data: %s", e.Data)
	}
	plain.callErr("tasks/cancel", map[string]any{"taskId": id}, -32021)
	// It gets the hand-off as before, never a task.
	res := plain.call("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "u", "code": "1", "background": true}})
	if res["resultType"] == "task" || !strings.Contains(fmt.Sprint(res["content"]), "wait_run") {
		t.Fatalf("background call of a client without tasks: %v", res)
	}
	// No tasks/result or tasks/list in 2026-07-28.
	c.callErr("tasks/result", map[string]any{"taskId": id}, -32601)
	c.callErr("tasks/list", nil, -32601)
	// Unknown and missing ids.
	c.callErr("tasks/get", map[string]any{"taskId": "0123456789abcdef0123456789abcdef"}, -32602)
	c.callErr("tasks/get", map[string]any{}, -32602)
	c.callErr("tasks/update", map[string]any{"taskId": "nope", "inputResponses": map[string]any{}}, -32602)
	c.poll(id, "completed")
}

func TestTaskSEPInputThroughUpdate(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	created := c.call("tools/call", runArgs("name = input('Your name? ')\nprint('hello', name)"))
	if created["resultType"] != "task" {
		t.Fatalf("a call that waits for input: %v", created)
	}
	id := created["taskId"].(string)
	task := c.poll(id, "input_required")
	reqs, _ := task["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("inputRequests: %v", task)
	}
	var key string
	for k, v := range reqs {
		key = k
		if !strings.Contains(fmt.Sprint(v), "Your name?") || v.(map[string]any)["method"] != "elicitation/create" {
			t.Fatalf("input request: %v", v)
		}
	}
	// An answer to a key that is not open is ignored.
	c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"input-99": map[string]any{"action": "accept", "content": map[string]any{"answer": "x"}}}})
	ack := c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "Ada"}}}})
	if ack["resultType"] != "complete" {
		t.Fatalf("ack: %v", ack)
	}
	done := c.poll(id, "completed")
	if !strings.Contains(fmt.Sprint(done["result"]), "hello Ada") {
		t.Fatalf("result: %v", done["result"])
	}
}

func TestTaskSEPCancelKeepsNamespace(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	warm(t, srv)
	c.call("tools/call", runArgs("kept = 41"))
	created := c.call("tools/call", runArgs("import time\nwhile True: time.sleep(0.1)"))
	id := created["taskId"].(string)
	if ack := c.call("tasks/cancel", map[string]any{"taskId": id}); ack["resultType"] != "complete" {
		t.Fatalf("cancel ack: %v", ack)
	}
	task := c.poll(id, "cancelled", "completed", "failed")
	if task["status"] != "cancelled" || !strings.Contains(fmt.Sprint(task["statusMessage"]), "namespace was kept") {
		t.Fatalf("cancelled task: %v", task)
	}
	res := c.call("tools/call", runArgs("kept + 1"))
	if !strings.Contains(fmt.Sprint(res["content"]), "42") {
		t.Fatalf("after the cancel: %v", res)
	}
}

// A call sent after a task's call waits for the task's run in the
// session's queue, as any call does.
func TestTaskKeepsSessionOrder(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	created := c.call("tools/call", runArgs("import time\ntime.sleep(1.5)\nx = 'set by the task'"))
	if created["resultType"] != "task" {
		t.Fatalf("%v", created)
	}
	// It waits in the queue longer than the task wait, so it becomes a
	// task too, whose result sees what the first one set.
	after := c.call("tools/call", runArgs("x"))
	if after["resultType"] == "task" {
		after = c.poll(after["taskId"].(string), "completed")["result"].(map[string]any)
	}
	if !strings.Contains(fmt.Sprint(after["content"]), "set by the task") {
		t.Fatalf("a call sent after the task's: %v", after)
	}
}

func TestTaskAfterRestart(t *testing.T) {
	dir := t.TempDir()
	srv1, err := New(Config{StateDir: dir, TaskWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := newRawClient(t, srv1, "2026-07-28", true)
	created := c.call("tools/call", runArgs("print('before the stop', flush=True)\nimport time\nwhile True: time.sleep(0.1)"))
	id := created["taskId"].(string)
	for {
		// The status message carries the run's last output line.
		task := c.poll(id, "working")
		if strings.Contains(fmt.Sprint(task["statusMessage"]), "before the stop") {
			break
		}
		<-time.After(100 * time.Millisecond)
	}
	srv1.Close()

	srv2 := taskServer(t, Config{StateDir: dir})
	c2 := newRawClient(t, srv2, "2026-07-28", true)
	task := c2.call("tasks/get", map[string]any{"taskId": id})
	if task["status"] != "failed" || !strings.Contains(fmt.Sprint(task["statusMessage"]), "server restarted") || task["error"] == nil {
		t.Fatalf("after a restart: %v", task)
	}
	// What the run printed is in the history.
	h := c2.call("tools/call", map[string]any{"name": "get_history", "arguments": map[string]any{"session_id": "t"}})
	if !strings.Contains(fmt.Sprint(h["content"]), "before the stop") {
		t.Fatalf("history: %v", h["content"])
	}
}

func TestTaskTTL(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv := taskServer(t, Config{TaskTTL: time.Minute, taskClock: clock})
	c := newRawClient(t, srv, "2026-07-28", true)
	created := c.call("tools/call", runArgs("import time\ntime.sleep(0.8)"))
	id := created["taskId"].(string)
	if created["ttlMs"].(float64) != 60000 {
		t.Fatalf("ttlMs %v", created["ttlMs"])
	}
	c.poll(id, "completed")
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	e := c.callErr("tasks/get", map[string]any{"taskId": id}, -32602)
	if !strings.Contains(e.Message, "expired") {
		t.Fatalf("expired task: %v", e)
	}
}

// With --tokens-file each user's server has its own state folder: a task
// id of one user is unknown to another, with the error an unknown id gets.
func TestTaskInvisibleToAnotherUser(t *testing.T) {
	alice := taskServer(t, Config{StateDir: t.TempDir()})
	bob := taskServer(t, Config{StateDir: t.TempDir()})
	ca := newRawClient(t, alice, "2026-07-28", true)
	cb := newRawClient(t, bob, "2026-07-28", true)
	id := ca.call("tools/call", runArgs(loop(1)))["taskId"].(string)
	e := cb.callErr("tasks/get", map[string]any{"taskId": id}, -32602)
	if !strings.Contains(e.Message, "not found") {
		t.Fatal(e)
	}
	cb.callErr("tasks/cancel", map[string]any{"taskId": id}, -32602)
	ca.poll(id, "completed")
}

func TestTaskLegacy(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "", false)
	c.initialize("2025-11-25", true)
	tools := c.call("tools/list", nil)["tools"].([]any)
	for _, tl := range tools {
		tool := tl.(map[string]any)
		_, has := tool["execution"]
		if has != taskTools[tool["name"].(string)] {
			t.Errorf("tool %v: execution %v", tool["name"], tool["execution"])
		}
	}
	// Without params.task: as today.
	short := c.call("tools/call", runArgs("6*7"))
	if _, ok := short["task"]; ok || !strings.Contains(fmt.Sprint(short["content"]), "42") {
		t.Fatalf("%v", short)
	}
	args := runArgs("name = input('Who? ')\nprint('hi', name)")
	args["task"] = map[string]any{"ttl": 60000}
	created := c.call("tools/call", args)
	task, _ := created["task"].(map[string]any)
	if task == nil || task["status"] != "working" {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	id := task["taskId"].(string)
	list := c.call("tasks/list", nil)
	if !strings.Contains(fmt.Sprint(list["tasks"]), id) {
		t.Fatalf("tasks/list: %v", list)
	}
	// tasks/result blocks, asking the run's question through elicitation.
	pending := c.send("tasks/result", map[string]any{"taskId": id})
	ask := <-c.asks
	if ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), "Who?") || !strings.Contains(string(ask.Params), id) {
		t.Fatalf("elicitation: %s %s", ask.Method, ask.Params)
	}
	b, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"answer": "Grace"}})
	c.conn.Write(context.Background(), &jsonrpc.Response{ID: ask.ID, Result: b})
	resp := c.await(pending)
	if resp.Error != nil || !strings.Contains(string(resp.Result), "hi Grace") || !strings.Contains(string(resp.Result), metaRelatedTask) {
		t.Fatalf("tasks/result: %v %s", resp.Error, resp.Result)
	}
	got := c.call("tasks/get", map[string]any{"taskId": id})
	if got["status"] != "completed" || got["ttl"] == nil {
		t.Fatalf("tasks/get: %v", got)
	}
	// Each change of status the watcher saw was notified.
	var statuses []string
	for len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
		select {
		case n := <-c.notes:
			var p map[string]any
			json.Unmarshal(n.Params, &p)
			if n.Method != "notifications/tasks/status" || p["taskId"] != id {
				t.Fatalf("a notification of another task: %s", n.Params)
			}
			statuses = append(statuses, p["status"].(string))
		case <-time.After(30 * time.Second):
			t.Fatalf("status notifications %v, no completed", statuses)
		}
	}
	// (working between them when the watcher saw the run between its
	// answer and its end)
	if j := strings.Join(statuses, " "); j != "input_required working completed" && j != "input_required completed" {
		t.Errorf("status notifications: %v", statuses)
	}
	c.callErr("tasks/cancel", map[string]any{"taskId": id}, -32602) // already over
	c.callErr("tasks/update", map[string]any{"taskId": id}, -32601)
	// A task asked of a tool that takes none.
	for _, tool := range []string{"list_sessions", "wait_run"} {
		c.callErr("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}, "task": map[string]any{}}, -32601)
	}
}

func TestTaskLegacyCancel(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "", false)
	c.initialize("2025-11-25", false)
	c.call("tools/call", runArgs("kept = 1"))
	args := runArgs("import time\nwhile True: time.sleep(0.1)")
	args["task"] = map[string]any{}
	id := c.call("tools/call", args)["task"].(map[string]any)["taskId"].(string)
	got := c.call("tasks/cancel", map[string]any{"taskId": id})
	if got["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "namespace was kept") {
		t.Fatalf("tasks/cancel: %v", got)
	}
}

// Clients that speak neither design see tools/list as before.
func TestTaskNothingForOtherClients(t *testing.T) {
	srv := taskServer(t, Config{})
	for _, v := range []string{"2025-06-18", "2026-07-28"} {
		c := newRawClient(t, srv, "", false)
		if v >= "2026-07-28" {
			c = newRawClient(t, srv, v, false)
		} else {
			c.initialize(v, false)
		}
		list := c.call("tools/list", nil)
		if strings.Contains(fmt.Sprint(list), "taskSupport") {
			t.Errorf("%s: tools/list has taskSupport", v)
		}
	}
	c := newRawClient(t, srv, "", false)
	c.initialize("2025-06-18", false)
	c.callErr("tasks/get", map[string]any{"taskId": "x"}, -32601)
}

// SEP-2663's notifications/tasks: a subscriptions/listen for task ids gets
// an acknowledgement naming those it agreed to, then each task as tasks/get
// would show it, now and at each change, until the client cancels it.
func TestTaskSEPNotifications(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	warm(t, srv)
	id := c.call("tools/call", runArgs(loop(1)))["taskId"].(string)
	unknown := "0123456789abcdef0123456789abcdef"
	listen := c.send("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id, unknown}}})
	next := func() (string, map[string]any) {
		t.Helper()
		select {
		case n := <-c.notes:
			var p map[string]any
			json.Unmarshal(n.Params, &p)
			return n.Method, p
		case <-time.After(30 * time.Second):
			t.Fatal("no notification in 30s")
			return "", nil
		}
	}
	m, ack := next()
	if m != "notifications/subscriptions/acknowledged" || fmt.Sprint(ack["notifications"]) != fmt.Sprintf("map[taskIds:[%s]]", id) {
		t.Fatalf("acknowledgement: %s %v", m, ack)
	}
	var statuses []string
	for len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
		m, p := next()
		if m != "notifications/tasks" || p["taskId"] != id {
			t.Fatalf("%s %v", m, p)
		}
		statuses = append(statuses, p["status"].(string))
		if p["status"] == "completed" && !strings.Contains(fmt.Sprint(p["result"]), "finished") {
			t.Fatalf("the completed task's notification: %v", p)
		}
	}
	if statuses[0] != "working" {
		t.Errorf("notifications: %v", statuses)
	}
	// The client ends the stream; the listen gets no answer.
	jid, _ := jsonrpc.MakeID(float64(c.nextID))
	b, _ := json.Marshal(map[string]any{"requestId": jid.Raw()})
	c.conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: b})
	select {
	case r := <-listen:
		t.Fatalf("the listen was answered: %v", r)
	default:
	}
	// Without the extension declared: -32021.
	plain := newRawClient(t, srv, "2026-07-28", false)
	plain.callErr("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}, -32021)
}

// The data tools whose work is a run become tasks too: describe_data
// queued behind a task's run waits longer than the task wait.
func TestTaskDataTool(t *testing.T) {
	srv := taskServer(t, Config{})
	c := newRawClient(t, srv, "2026-07-28", true)
	warm(t, srv)
	first := c.call("tools/call", runArgs("import time, pandas as pd\ntime.sleep(1.5)\ndf = pd.DataFrame({'height': [1.0, 2.0, 3.0]})"))
	if first["resultType"] != "task" {
		t.Fatalf("%v", first)
	}
	desc := c.call("tools/call", map[string]any{"name": "describe_data", "arguments": map[string]any{"session_id": "t", "name": "df"}})
	if desc["resultType"] != "task" {
		t.Fatalf("describe_data behind a task: %v", desc)
	}
	done := c.poll(desc["taskId"].(string), "completed", "failed")
	if !strings.Contains(fmt.Sprint(done["result"]), "height") || done["result"].(map[string]any)["isError"] == true {
		t.Fatalf("describe_data's task: %v", done)
	}
}

// SEP-2663's streamable HTTP binding: the task id rides in Mcp-Name.
func TestTaskHTTPMcpName(t *testing.T) {
	srv := taskServer(t, Config{})
	h := srv.OrderedHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"abc"}}`
	for _, tc := range []struct {
		name string
		want int
	}{{"", 400}, {"other", 400}, {"abc", 204}} {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tasks/get")
		if tc.name != "" {
			req.Header.Set("Mcp-Name", tc.name)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || (tc.want == 400 && !strings.Contains(rec.Body.String(), "-32020")) {
			t.Errorf("Mcp-Name %q: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
}

// A server that restored sessions from its state directory answers at
// once: the restore's events came before its resource follower began, and
// a call's result does not wait for them (it waited followerWait, 2 s,
// each call until the first new event).
func TestRestoredSessionsAnswerAtOnce(t *testing.T) {
	dir := t.TempDir()
	srv1 := taskServer(t, Config{StateDir: dir})
	c := newRawClient(t, srv1, "2026-07-28", false)
	c.call("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "a", "code": "x = 1"}})
	srv1.Close()

	var log lockedLog
	srv2 := taskServer(t, Config{StateDir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	c2 := newRawClient(t, srv2, "2026-07-28", false)
	h := c2.call("tools/call", map[string]any{"name": "get_history", "arguments": map[string]any{"session_id": "a"}})
	if !strings.Contains(fmt.Sprint(h["content"]), "x = 1") {
		t.Fatalf("get_history after the restart: %v", h)
	}
	if strings.Contains(log.String(), "lag behind") {
		t.Errorf("a call after the restore waited for the resource follower:\n%s", log.String())
	}
}

// lockedLog is a log sink safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
