//go:build unix

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// The soak's task clients (issue 31): clients of MCP tasks that speak raw
// JSON-RPC, each driving one session with run_code calls of varied lengths
// and following every task they are handed to its end.
//
//   - tk1 and tk2 speak protocol 2026-07-28 with the tasks extension
//     (SEP-2663) declared in each request's _meta, over the stdio of a server
//     of their own (tasks, --task-wait 2): the server decides, so a short run
//     returns its result and a long one becomes a task, polled with
//     tasks/get, answered with tasks/update, cancelled with tasks/cancel.
//   - tl1 speaks 2025-11-25 over streamable HTTP as alice on the users
//     server: every call asks for a task (params.task) and gets one at once;
//     it is followed with tasks/get, tasks/result (blocking) and tasks/list,
//     input() is answered with send_input, tasks/cancel returns the task.
//
// The faults of the soak apply to them: their servers are SIGKILLed and
// restarted (server_kill on the users server, task_server_kill on the tasks
// server, which the injector aims at a moment a task is going), their
// kernels killed or exiting, interrupt storms, frame bombs, a kernel that
// ignores SIGINT past its timeout, and the client going away mid-call
// (over stdio that stops the server in order; over HTTP the connection is
// torn down and a new one follows the task). Their invariants are the
// invTask* ones.

const (
	invTaskOnce    = "every task reaches exactly one terminal status (completed, failed or cancelled), keeps it, and outlives its connection"
	invTaskResult  = "a completed task's result is the one wait_run returns for its run, and what its work asks for"
	invTaskRestart = "a task whose server was killed or stopped under it answers failed with the restart message, never unknown"
	invTaskWorking = "no task stays working after its run ended"
	invTaskCancel  = "a cancelled task says whether its namespace was kept, and that holds"
)

const (
	protoSEP    = "2026-07-28"
	protoLegacy = "2025-11-25"
	// taskRestartMsg is tasks.RestartMessage: what a task whose run a
	// server's stop cut short answers after the restart.
	taskRestartMsg = "the server restarted while this task's run %s in session %q was going; the run was cut short, and what it printed is in the session's history (get_history) unless the server crashed"
)

var taskMarkerRe = regexp.MustCompile(`TASK-([a-z]+[0-9]+)-([0-9]+)`)

// sepMeta dresses a request as a 2026-07-28 client that declared the tasks
// extension does: protocol, capabilities and client info in every
// request's _meta.
func sepMeta(in map[string]any) map[string]any {
	params := map[string]any{}
	for k, v := range in {
		params[k] = v
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protoSEP,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "soak-tasks", "version": "1"},
	}
	return params
}

// rpcError is a JSON-RPC error answer: the server's word, not a transport
// failure.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type rpcReply struct {
	result json.RawMessage
	err    *rpcError
}

// rpcConn is JSON-RPC over a server process's stdin and stdout, one
// message a line; calls may be concurrent. A request from the server is
// refused (the task clients declare no capability that asks for one).
type rpcConn struct {
	gen     int64 // the server generation it talks to
	in      io.WriteCloser
	wmu     sync.Mutex
	mu      sync.Mutex
	next    int64
	pending map[int64]chan rpcReply
	dead    chan struct{}
}

// startRaw starts a raw stdio server's process (s.cmd, with s.mu held) and
// waits until it answers server/discover with the tasks extension.
func (s *soakServer) startRaw(ctx context.Context, gen int64) error {
	cmd := s.cmd
	cmd.Stderr = s.log
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c := &rpcConn{gen: gen, in: in, pending: map[int64]chan rpcReply{}, dead: make(chan struct{})}
	done := make(chan struct{})
	s.rc, s.done = c, done
	go func() {
		c.read(out)
		cmd.Wait()
		close(done)
	}()
	res, err := c.call(ctx, "server/discover", sepMeta(nil))
	if err != nil {
		return fmt.Errorf("%s: server/discover: %v", s.name, err)
	}
	if !bytes.Contains(res, []byte(`"io.modelcontextprotocol/tasks"`)) {
		return fmt.Errorf("%s: server/discover lists no tasks extension: %.300s", s.name, res)
	}
	return nil
}

func (c *rpcConn) read(out io.Reader) {
	defer close(c.dead)
	br := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  *rpcError       `json:"error"`
			}
			if json.Unmarshal(line, &m) == nil {
				switch {
				case m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null":
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "the soak's task client takes no requests"}})
					c.wmu.Lock()
					c.in.Write(append(b, '\n'))
					c.wmu.Unlock()
				case m.Method != "":
					// A notification: the task clients poll.
				default:
					var id int64
					if json.Unmarshal(m.ID, &id) == nil {
						c.mu.Lock()
						ch := c.pending[id]
						delete(c.pending, id)
						c.mu.Unlock()
						if ch != nil {
							ch <- rpcReply{result: m.Result, err: m.Error}
						}
					}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *rpcConn) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	ch := make(chan rpcReply, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.wmu.Lock()
	_, err := c.in.Write(append(b, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errConnGone, err)
	}
	reply := func(r rpcReply) (json.RawMessage, error) {
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	}
	select {
	case r := <-ch:
		return reply(r)
	case <-c.dead:
		select {
		case r := <-ch:
			return reply(r)
		default:
		}
		return nil, fmt.Errorf("%w: the server's stdout closed", errConnGone)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// rpcConn is the running generation's connection.
func (s *soakServer) rpcConn() *rpcConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rc
}

// legacyConn is a raw streamable HTTP client of protocol 2025-11-25 for
// one user's token. It initializes a new MCP session when it has none or
// the server no longer knows its own (a restart), and remembers its TCP
// connections so that it can vanish as a client does.
type legacyConn struct {
	url, token string
	tr         *http.Transport
	next       atomic.Int64
	initMu     sync.Mutex
	mu         sync.Mutex
	sessn      string
	conns      []net.Conn
}

var errHTTPSession = errors.New("HTTP 404: the server does not know this MCP session")

func newLegacyConn(url, token string) *legacyConn {
	c := &legacyConn{url: url, token: token}
	d := &net.Dialer{}
	c.tr = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
		}
		return conn, err
	}}
	return c
}

func (c *legacyConn) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessn
}

// initialize makes a new MCP session unless another call made one since
// stale was found wanting.
func (c *legacyConn) initialize(ctx context.Context, stale string) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if s := c.session(); s != stale && s != "" {
		return nil
	}
	c.mu.Lock()
	c.sessn = ""
	c.mu.Unlock()
	if _, _, err := c.post(ctx, "initialize", map[string]any{"protocolVersion": protoLegacy, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "soak-tasks-http", "version": "1"}}); err != nil {
		return err
	}
	_, _, err := c.post(ctx, "notifications/initialized", nil)
	return err
}

func (c *legacyConn) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if s := c.session(); s == "" {
		if err := c.initialize(ctx, s); err != nil {
			return nil, err
		}
	}
	res, used, err := c.post(ctx, method, params)
	if errors.Is(err, errHTTPSession) {
		// The server restarted: a new session; the request was not taken.
		if err := c.initialize(ctx, used); err != nil {
			return nil, err
		}
		res, _, err = c.post(ctx, method, params)
	}
	return res, err
}

// post sends one request (a notification when params is nil) and returns
// its result and the MCP session it was sent in.
func (c *legacyConn) post(ctx context.Context, method string, params map[string]any) (json.RawMessage, string, error) {
	id := c.next.Add(1)
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["id"], msg["params"] = id, params
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	sessn := c.session()
	if sessn != "" {
		req.Header.Set("Mcp-Session-Id", sessn)
		req.Header.Set("Mcp-Protocol-Version", protoLegacy)
	}
	resp, err := (&http.Client{Transport: c.tr}).Do(req)
	if err != nil {
		return nil, sessn, fmt.Errorf("%w: %v", errConnGone, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, sessn, fmt.Errorf("%w: reading the answer: %v", errConnGone, err)
	}
	if resp.StatusCode == http.StatusNotFound && sessn != "" {
		return nil, sessn, errHTTPSession
	}
	if resp.StatusCode/100 != 2 {
		return nil, sessn, fmt.Errorf("%s: HTTP %d: %.300s", method, resp.StatusCode, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && method == "initialize" {
		c.mu.Lock()
		c.sessn = s
		c.mu.Unlock()
	}
	if params == nil {
		return nil, sessn, nil
	}
	var lines [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				lines = append(lines, bytes.TrimSpace(data))
			}
		}
	} else {
		lines = [][]byte{b}
	}
	for _, l := range lines {
		var m struct {
			ID     *int64          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if json.Unmarshal(l, &m) != nil || m.ID == nil || *m.ID != id {
			continue
		}
		if m.Error != nil {
			return nil, sessn, m.Error
		}
		return m.Result, sessn, nil
	}
	return nil, sessn, fmt.Errorf("%w: %s: no answer in %.300s", errConnGone, method, b)
}

// vanish drops the connection as a client that went away does: its TCP
// connections closed, its MCP session left behind; the next call makes a
// new one.
func (c *legacyConn) vanish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
	c.sessn = ""
}

// taskWire sends one JSON-RPC request in a task client's design and says
// which server generation answered it (-1 when it cannot know).
type taskWire interface {
	req(ctx context.Context, method string, params map[string]any) (json.RawMessage, int64, error)
}

type sepWire struct{ srv *soakServer }

func (w sepWire) req(ctx context.Context, method string, params map[string]any) (json.RawMessage, int64, error) {
	c := w.srv.rpcConn()
	res, err := c.call(ctx, method, sepMeta(params))
	return res, c.gen, err
}

type legacyWire struct{ c *legacyConn }

func (w legacyWire) req(ctx context.Context, method string, params map[string]any) (json.RawMessage, int64, error) {
	res, err := w.c.call(ctx, method, params)
	return res, -1, err
}

// taskState is what a task client reads of a task.
type taskState struct {
	Status   string
	Message  string
	Result   json.RawMessage // completed or cancelled: the CallToolResult (legacy: tasks/result's)
	Error    json.RawMessage // failed: the JSON-RPC error
	InputKey string          // SEP: the open input request's key
}

func (st taskState) terminal() bool {
	switch st.Status {
	case "completed", "failed", "cancelled":
		return true
	}
	return false
}

func (st taskState) String() string {
	s := st.Status
	if st.Message != "" {
		s += fmt.Sprintf(" %.200q", st.Message)
	}
	if len(st.Result) > 0 {
		s += fmt.Sprintf(" result %.300s", st.Result)
	}
	if len(st.Error) > 0 {
		s += fmt.Sprintf(" error %.300s", st.Error)
	}
	return s
}

// canonical re-encodes JSON, so that equal values compare equal.
func canonical(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func sameTerminal(a, b taskState) bool {
	return a.Status == b.Status && a.Message == b.Message && canonical(a.Result) == canonical(b.Result) && canonical(a.Error) == canonical(b.Error)
}

// toolResultOf reads a CallToolResult's JSON as the soak reads results
// (what is not a result reads as an empty one).
func toolResultOf(raw json.RawMessage) soakRes {
	res, _ := parseToolResult(raw)
	return res
}

// parseToolResult reads a CallToolResult's JSON as the soak reads results.
func parseToolResult(raw json.RawMessage) (soakRes, error) {
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured map[string]any `json:"structuredContent"`
		IsError    bool           `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return soakRes{}, err
	}
	out := soakRes{IsError: res.IsError, Structured: res.Structured}
	var texts []string
	for _, p := range res.Content {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image":
			out.Images++
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out, nil
}

// sameToolResult compares what a client reads of two CallToolResults:
// content, structuredContent and isError.
func sameToolResult(a, b json.RawMessage) (bool, string, string) {
	pick := func(raw json.RawMessage) string {
		var m map[string]json.RawMessage
		json.Unmarshal(raw, &m)
		isErr := m["isError"]
		if len(isErr) == 0 {
			isErr = json.RawMessage("false")
		}
		return canonical(m["content"]) + "|" + canonical(m["structuredContent"]) + "|" + canonical(isErr)
	}
	pa, pb := pick(a), pick(b)
	return pa == pb, pa, pb
}

// taskHandle is one task a client was handed, and what it saw of it.
type taskHandle struct {
	id, sid, runID string
	op             string
	gen            int64 // the server generation that made it; -1 unknown
	cancelAsked    bool
	// created is a terminal status the CreateTaskResult already gave (a
	// run that ended before the result was made): the task keeps it.
	created  string
	final    *taskState // its first terminal status
	finalGen int64
}

// taskOp is one call of a task client and what its result must be.
type taskOp struct {
	kind     string
	code     string
	args     map[string]any
	marker   string
	want     []string // structuredContent.status of a result its work asks for
	wantText string   // and a text it holds
	mustTask bool     // the run cannot end within --task-wait
	faulted  bool     // a fault touched it: its result is the fault's
	valueVar string   // a variable the code sets first, for the cancel check
}

type taskClient struct {
	s     *soak
	key   string // markers are TASK-<key>-<n>
	sid   string
	proto string
	srv   *soakServer
	user  string
	wire  taskWire
	http  *legacyConn // the 2025-11-25 client's
	rng   *rand.Rand

	faultReq chan string
	n        int
	expected []string // markers of runs that ended ok, in history order
	live     atomic.Int32
	// dropping is set while the client drops its own connection: what
	// fails then is that fault's.
	dropping  atomic.Bool
	unsettled bool
	// upGen is the server generation in which the session's kernel last
	// ran code to its end (0: not known to be up).
	upGen int64

	mu      sync.Mutex
	handles []*taskHandle
	calls   []string
}

func (s *soak) addTaskClient(key, sid, proto string, srv *soakServer, user string) {
	tc := &taskClient{s: s, key: key, sid: sid, proto: proto, srv: srv, user: user, faultReq: make(chan string, 1),
		rng: rand.New(rand.NewSource(s.cfg.seed + int64(len(s.taskClients)+101)*7919))}
	if proto == protoSEP {
		tc.wire = sepWire{srv: srv}
	} else {
		tc.http = newLegacyConn(srv.url(), s.tokens[user])
		tc.wire = legacyWire{c: tc.http}
	}
	s.taskClients = append(s.taskClients, tc)
}

func (tc *taskClient) note(format string, args ...any) {
	tc.mu.Lock()
	tc.calls = append(tc.calls, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	if len(tc.calls) > 25 {
		tc.calls = tc.calls[len(tc.calls)-25:]
	}
	tc.mu.Unlock()
}

func (tc *taskClient) fail(inv, format string, args ...any) {
	tc.mu.Lock()
	recent := append([]string{}, tc.calls...)
	tc.mu.Unlock()
	tc.s.failWith(inv, fmt.Sprintf("task client %s (%s, session %q on %s): ", tc.key, tc.proto, tc.sid, tc.srv.name)+fmt.Sprintf(format, args...),
		fmt.Sprintf("last calls of task client %s:", tc.key), recent)
}

func (tc *taskClient) outcome(what string) {
	tc.s.count(tc.s.taskOut, tc.proto+" "+what)
}

// rpc sends one request and checks what every request must hold: an
// answer within the bound (tasks/result, which blocks until the run ends,
// excepted), no transport failure a fault does not explain, no output of
// another session. gen is the server generation that answered (-1 when a
// restart makes it unknown); faulted says a fault touched the request.
func (tc *taskClient) rpc(method string, params map[string]any) (raw json.RawMessage, gen int64, faulted bool, err error) {
	srv := tc.srv
	srv.waitUp()
	g0 := srv.gen.Load()
	dropping := tc.dropping.Load()
	bound := tc.s.cfg.maxWait + 5*time.Second
	limit := bound + 60*time.Second
	if method == "tasks/result" {
		limit = 150 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	raw, wgen, err := tc.wire.req(ctx, method, params)
	d := time.Since(start)
	g1 := srv.gen.Load()
	faulted = g1 != g0 || srv.down.Load() || dropping || tc.dropping.Load()
	gen = wgen
	if gen < 0 {
		gen = g0
		if g1 != g0 {
			gen = -1
		}
	}
	name := method
	if method == "tools/call" {
		name, _ = params["name"].(string)
	}
	tc.s.mu.Lock()
	tc.s.calls[name]++
	if method != "tasks/result" {
		tc.s.slowest = max(tc.s.slowest, d)
	}
	tc.s.mu.Unlock()
	outcome := fmt.Sprintf("%.200s", raw)
	if err != nil {
		outcome = "error: " + err.Error()
	}
	tc.note("%s %s -> %v gen %d %s", name, jsonString(params), d.Round(time.Millisecond), gen, outcome)
	tc.s.check(invBound)
	if method != "tasks/result" && d > bound && !faulted {
		tc.fail(invBound, "%s took %v", name, d.Round(time.Millisecond))
	}
	var rerr *rpcError
	if err != nil && !errors.As(err, &rerr) {
		tc.s.check(invProtocol)
		if !faulted {
			tc.fail(invProtocol, "%s: %v", name, err)
		}
		return raw, gen, true, err
	}
	tc.s.check(invCross)
	text := string(raw)
	for _, m := range markerRe.FindAllString(text, -1) {
		if name != "list_sessions" {
			tc.fail(invCross, "%s shows %s, a marker of a soak worker", name, m)
		}
	}
	for _, m := range taskMarkerRe.FindAllStringSubmatch(text, -1) {
		if m[1] != tc.key && name != "list_sessions" {
			tc.fail(invCross, "%s shows %s, a marker of task client %s", name, m[0], m[1])
		}
	}
	return raw, gen, faulted, err
}

// tool makes a plain tool call (one that never becomes a task).
func (tc *taskClient) tool(name string, args map[string]any) (soakRes, json.RawMessage, int64, bool, error) {
	if args == nil {
		args = map[string]any{}
	}
	if _, ok := args["session_id"]; !ok && name != "list_sessions" {
		args["session_id"] = tc.sid
	}
	raw, gen, faulted, err := tc.rpc("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		var rerr *rpcError
		if errors.As(err, &rerr) && !faulted {
			tc.s.check(invProtocol)
			tc.fail(invProtocol, "%s: %v", name, err)
		}
		return soakRes{}, nil, gen, faulted, err
	}
	return toolResultOf(raw), raw, gen, faulted, nil
}

func (tc *taskClient) add(h *taskHandle) {
	tc.mu.Lock()
	tc.handles = append(tc.handles, h)
	tc.mu.Unlock()
	tc.live.Add(1)
}

func (tc *taskClient) allHandles() []*taskHandle {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return append([]*taskHandle{}, tc.handles...)
}

// get reads a task as its design shows it, and checks the observation
// against what was seen of it before (observe).
func (tc *taskClient) get(h *taskHandle) (taskState, int64, bool, error) {
	raw, gen, faulted, err := tc.rpc("tasks/get", map[string]any{"taskId": h.id})
	var rerr *rpcError
	if errors.As(err, &rerr) {
		tc.s.check(invTaskRestart)
		tc.fail(invTaskRestart, "tasks/get of task %s (%s, run %s, made by server generation %d, now %d): %v", h.id, h.op, h.runID, h.gen, tc.srv.gen.Load(), err)
		return taskState{}, gen, faulted, err
	}
	if err != nil {
		return taskState{}, gen, faulted, err
	}
	var t struct {
		Status        string                     `json:"status"`
		StatusMessage string                     `json:"statusMessage"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		Result        json.RawMessage            `json:"result"`
		Error         json.RawMessage            `json:"error"`
	}
	json.Unmarshal(raw, &t)
	st := taskState{Status: t.Status, Message: t.StatusMessage, Result: t.Result, Error: t.Error}
	for k := range t.InputRequests {
		st.InputKey = k
	}
	if tc.proto == protoLegacy && st.terminal() {
		// 2025-11-25's tasks/get carries no result: tasks/result does, at
		// once for a task that is over.
		res, g2, f2, err := tc.rpc("tasks/result", map[string]any{"taskId": h.id})
		faulted = faulted || f2
		if g2 != gen {
			gen = -1
		}
		if errors.As(err, &rerr) {
			st.Error, _ = json.Marshal(rerr)
		} else if err != nil {
			return taskState{}, gen, faulted, err
		} else {
			// Its _meta names the task, the same each time.
			st.Result = res
		}
	}
	tc.observe(h, st, gen)
	return st, gen, faulted, nil
}

// observe checks one observation of a task: it is never anything but
// working or input_required before its one terminal status, which then
// never changes; a task made by an earlier server generation is over; each
// terminal status says what it must.
func (tc *taskClient) observe(h *taskHandle, st taskState, gen int64) {
	tc.s.check(invTaskOnce)
	switch st.Status {
	case "working", "input_required", "completed", "failed", "cancelled":
	default:
		tc.fail(invTaskOnce, "task %s (%s) has status %q", h.id, h.op, st.Status)
		return
	}
	if h.final != nil {
		if !sameTerminal(*h.final, st) {
			tc.fail(invTaskOnce, "task %s (%s, run %s) ended %s (server generation %d), and is now %s (generation %d)", h.id, h.op, h.runID, h.final, h.finalGen, st, gen)
		}
		return
	}
	restarted := h.gen >= 0 && gen > h.gen
	if !st.terminal() {
		if h.created != "" {
			tc.fail(invTaskOnce, "task %s (%s) was %s when it was made, and is now %s", h.id, h.op, h.created, st)
		}
		if restarted {
			tc.s.check(invTaskRestart)
			tc.fail(invTaskRestart, "task %s (%s, run %s) of server generation %d is %s in generation %d", h.id, h.op, h.runID, h.gen, st, gen)
		}
		if !strings.Contains(st.Message, fmt.Sprintf("run %s in session %q", h.runID, h.sid)) {
			tc.s.check(invTaskResult)
			tc.fail(invTaskResult, "task %s is %s, and its message does not name its run %s (its _meta[kernel-mcp/run])", h.id, st, h.runID)
		}
		return
	}
	h.final, h.finalGen = &st, gen
	tc.live.Add(-1)
	if h.created != "" && st.Status != h.created {
		tc.fail(invTaskOnce, "task %s (%s) was %s when it was made, and is now %s", h.id, h.op, h.created, st)
	}
	restartMsg := fmt.Sprintf(taskRestartMsg, h.runID, h.sid)
	switch st.Status {
	case "failed":
		tc.s.check(invTaskRestart)
		var e rpcError
		json.Unmarshal(st.Error, &e)
		switch {
		case h.gen >= 0 && tc.srv.gen.Load() == h.gen:
			tc.fail(invTaskRestart, "task %s (%s, run %s) failed, though its server never restarted: %s", h.id, h.op, h.runID, st)
		case st.Message != restartMsg || e.Message != restartMsg || e.Code != -32603:
			tc.fail(invTaskRestart, "task %s (%s) failed after a restart without the restart message %q: %s", h.id, h.op, restartMsg, st)
		}
		tc.outcome("failed (restart)")
	case "cancelled":
		tc.s.check(invTaskCancel)
		switch {
		case !h.cancelAsked:
			tc.fail(invTaskCancel, "task %s (%s) is cancelled, though no one cancelled it: %s", h.id, h.op, st)
		case st.Message == restartMsg && (h.gen < 0 || tc.srv.gen.Load() > h.gen):
			tc.outcome("cancelled (restart)")
		case !strings.HasPrefix(st.Message, fmt.Sprintf("cancelled (tasks/cancel): run %s in session %q was interrupted.", h.runID, h.sid)):
			tc.fail(invTaskCancel, "task %s (%s)'s cancellation does not name its run %s: %s", h.id, h.op, h.runID, st)
		case !strings.Contains(st.Message, "namespace was kept") && !strings.Contains(st.Message, "namespace is as it was") && !strings.Contains(st.Message, "variables were lost"):
			tc.fail(invTaskCancel, "task %s (%s)'s cancellation does not say whether the namespace was kept: %s", h.id, h.op, st)
		default:
			tc.outcome("cancelled")
		}
	case "completed":
		tc.s.check(invTaskResult)
		if len(st.Result) == 0 || !bytes.Contains(st.Result, []byte(`"content"`)) {
			tc.fail(invTaskResult, "task %s (%s) completed without a result: %s", h.id, h.op, st)
		}
		status := toolResultOf(st.Result).str("status")
		if status == "" {
			status = "?"
		}
		tc.outcome("completed " + status)
	}
}

func (tc *taskClient) loop(deadline time.Time) {
	for time.Now().Before(deadline) && tc.s.nfail.Load() < 10 {
		if tc.unsettled {
			tc.unsettled = false
			tc.settle()
		}
		select {
		case kind := <-tc.faultReq:
			tc.fault(kind)
			continue
		default:
		}
		tc.op()
	}
}

// marker is the next marker and the Python that prints it without the code
// containing it.
func (tc *taskClient) marker() (string, string) {
	tc.n++
	return fmt.Sprintf("TASK-%s-%d", tc.key, tc.n), fmt.Sprintf("print('TA' + 'SK-%s-%d', flush=True)", tc.key, tc.n)
}

// ticks is a loop printing a tick every half second, n times.
func ticks(n int) string {
	return fmt.Sprintf("import time\nfor i in range(%d):\n    print('tick', i, flush=True)\n    time.sleep(0.5)\n", n)
}

func (tc *taskClient) op() {
	sep := tc.proto == protoSEP
	r := tc.rng.Intn(20)
	switch {
	case r < 4: // short: returns directly (SEP) unless a kernel start holds it
		m, p := tc.marker()
		tc.runOp(&taskOp{kind: "short", code: fmt.Sprintf("tk_x = %d\n%s", tc.rng.Intn(1000), p), marker: m, want: []string{"ok"}, wantText: m}, "")
	case r < 9: // long: 1.5 to 7 s
		m, p := tc.marker()
		n := 3 + tc.rng.Intn(12)
		tc.runOp(&taskOp{kind: "long", code: ticks(n) + p, marker: m, want: []string{"ok"}, wantText: m, mustTask: sep && n >= 8}, "")
	case r < 12: // input(), answered through the task
		tc.n++
		answer := fmt.Sprintf("%s-%d", tc.key, tc.n)
		m := "TASK-" + answer
		code := "tk_answer = input('answer? ')\nprint('TA' + 'SK-' + tk_answer, flush=True)"
		if sep && tc.rng.Intn(4) == 0 {
			tc.runOp(&taskOp{kind: "input_declined", code: code, marker: m, want: []string{"error"}, wantText: "EOFError", mustTask: true}, "decline")
			return
		}
		tc.runOp(&taskOp{kind: "input", code: code, marker: m, want: []string{"ok"}, wantText: m, mustTask: sep}, "answer:"+answer)
	case r < 15: // tasks/cancel, at once or once it runs
		m, _ := tc.marker()
		code := fmt.Sprintf("tk_v = 'TA' + 'SK-%s-%d'\n", tc.key, tc.n) + ticks(20) + "print('finished', flush=True)"
		action := "cancel_running"
		if tc.rng.Intn(3) == 0 && tc.kernelUp() {
			// At once, but not while the session's kernel starts: a task
			// cancelled then ends with a kernel start error and a message
			// that does not say what became of the namespace (a server
			// defect, reported; cancel_running meets the run itself).
			action = "cancel_now"
		}
		tc.runOp(&taskOp{kind: "cancel", code: code, marker: m, want: []string{"ok"}, wantText: "finished", mustTask: sep, valueVar: "tk_v"}, action)
	case r < 17: // an exception: a completed task whose result has isError
		m, _ := tc.marker()
		code := fmt.Sprintf("import time\ntime.sleep(%.1f)\nraise ValueError('TA' + 'SK-%s-%d')", 1+2*tc.rng.Float64(), tc.key, tc.n)
		tc.runOp(&taskOp{kind: "exception", code: code, marker: m, want: []string{"error"}, wantText: m}, "")
	case r < 18 && sep: // background: a task at once
		m, p := tc.marker()
		tc.runOp(&taskOp{kind: "background", code: p, marker: m, want: []string{"ok"}, wantText: m, mustTask: true, args: map[string]any{"background": true}}, "")
	default: // a long one followed with wait_run first
		m, p := tc.marker()
		tc.runOp(&taskOp{kind: "long_wait_run", code: ticks(4+tc.rng.Intn(10)) + p, marker: m, want: []string{"ok"}, wantText: m}, "follow:wait_run")
	}
}

// runOp makes the call, does the op's action on the task it becomes, and
// follows the task to its end.
func (tc *taskClient) runOp(op *taskOp, action string) {
	args := map[string]any{"session_id": tc.sid, "code": op.code}
	for k, v := range op.args {
		args[k] = v
	}
	params := map[string]any{"name": "run_code", "arguments": args}
	if tc.proto == protoLegacy {
		params["task"] = map[string]any{}
	}
	raw, gen, faulted, err := tc.rpc("tools/call", params)
	op.faulted = op.faulted || faulted
	if err != nil {
		var rerr *rpcError
		if errors.As(err, &rerr) && !faulted {
			tc.s.check(invProtocol)
			tc.fail(invProtocol, "run_code (%s): %v", op.kind, err)
		}
		tc.unsettled = true
		return
	}
	var cr struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
		Task       *struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(raw, &cr)
	if cr.Task != nil {
		cr.TaskID, cr.Status = cr.Task.TaskID, cr.Task.Status
	}
	if cr.TaskID == "" {
		// The run ended within --task-wait: its result, directly.
		tc.s.check(invTaskResult)
		if tc.proto == protoLegacy {
			tc.fail(invTaskResult, "run_code with params.task (%s) returned no task: %.300s", op.kind, raw)
			return
		}
		if op.mustTask && !op.faulted {
			tc.fail(invTaskResult, "run_code (%s) cannot end within --task-wait, yet returned its result directly: %.300s", op.kind, raw)
		}
		tc.outcome("returned its result directly")
		tc.checkResult(op, toolResultOf(raw), "the direct result of "+op.kind)
		return
	}
	var run struct {
		SessionID string `json:"session_id"`
		RunID     string `json:"run_id"`
	}
	json.Unmarshal(cr.Meta["kernel-mcp/run"], &run)
	h := &taskHandle{id: cr.TaskID, sid: tc.sid, runID: run.RunID, op: op.kind, gen: gen}
	tc.add(h)
	tc.outcome("became a task")
	tc.s.check(invTaskResult)
	// 2025-11-25's tasks begin working. SEP-2663's CreateTaskResult shows
	// the task as it is: a run that ended meanwhile (background: true) is
	// already over, and tasks/get must say so too.
	created := taskState{Status: cr.Status}
	if tc.proto == protoSEP && created.terminal() {
		h.created = cr.Status
	}
	if len(h.id) != 32 || run.SessionID != tc.sid || run.RunID == "" || cr.Status != "working" && h.created == "" {
		tc.fail(invTaskResult, "a new task (%s) is not a task naming its run in _meta[kernel-mcp/run], working or over: %.400s", op.kind, raw)
		if run.RunID == "" {
			tc.unsettled = true
			return
		}
	}
	follow := "poll"
	if tc.proto == protoLegacy && tc.rng.Intn(3) == 0 {
		follow = "tasks/result"
	}
	kind, arg, _ := strings.Cut(action, ":")
	switch kind {
	case "follow":
		follow = arg
	case "answer", "decline":
		st, ok := tc.await(h, op, func(st taskState) bool { return st.Status == "input_required" || st.terminal() }, 90*time.Second)
		if !ok || st.terminal() {
			break
		}
		if tc.proto == protoSEP {
			resp := map[string]any{"action": "decline"}
			if kind == "answer" {
				resp = map[string]any{"action": "accept", "content": map[string]any{"answer": arg}}
			}
			_, _, f, err := tc.rpc("tasks/update", map[string]any{"taskId": h.id, "inputResponses": map[string]any{st.InputKey: resp}})
			op.faulted = op.faulted || f
			if err != nil && !f {
				tc.s.check(invProtocol)
				tc.fail(invProtocol, "tasks/update: %v", err)
			}
		} else {
			res, _, _, f, err := tc.tool("send_input", map[string]any{"run_id": h.runID, "text": arg})
			op.faulted = op.faulted || f
			if err == nil && res.IsError && !op.faulted {
				tc.s.check(invTaskResult)
				tc.fail(invTaskResult, "send_input to task %s's run %s: %.300s", h.id, h.runID, res.Text)
			}
		}
	case "cancel_now", "cancel_running":
		sawTick := false
		if kind == "cancel_running" {
			st, ok := tc.await(h, op, func(st taskState) bool { return strings.Contains(st.Message, "tick") || st.terminal() }, 90*time.Second)
			sawTick = ok && !st.terminal()
		}
		h.cancelAsked = true
		raw, _, f, err := tc.rpc("tasks/cancel", map[string]any{"taskId": h.id})
		op.faulted = op.faulted || f
		if err != nil {
			var rerr *rpcError
			// 2025-11-25 refuses a task already over; SEP acknowledges.
			if !(errors.As(err, &rerr) && tc.proto == protoLegacy && strings.Contains(rerr.Message, "cannot be cancelled")) && !f {
				tc.s.check(invProtocol)
				tc.fail(invProtocol, "tasks/cancel: %v", err)
			}
		} else if tc.proto == protoLegacy {
			var t struct {
				Status string `json:"status"`
			}
			json.Unmarshal(raw, &t)
			tc.s.check(invTaskCancel)
			if t.Status != "cancelled" && !f {
				tc.fail(invTaskCancel, "2025-11-25's tasks/cancel of a task going answered %.300s", raw)
			}
		}
		if !sawTick {
			op.valueVar = "" // it may not have set it yet
		}
	case "fault":
		tc.faultDuring(h, op, arg)
	}
	tc.follow(h, op, follow)
}

// await polls a task until cond holds or it ends, within d.
func (tc *taskClient) await(h *taskHandle, op *taskOp, cond func(taskState) bool, d time.Duration) (taskState, bool) {
	deadline := time.Now().Add(d)
	for {
		st, _, f, err := tc.get(h)
		op.faulted = op.faulted || f
		if err == nil && cond(st) {
			return st, true
		}
		var rerr *rpcError
		if errors.As(err, &rerr) {
			return st, false // unknown: reported
		}
		if time.Now().After(deadline) {
			return st, false
		}
		tc.pause()
	}
}

// pause is the poll interval: a task is polled at most every 300 ms (its
// pollIntervalMs says 1 s; the soak wants its ends seen soon).
func (tc *taskClient) pause() {
	t := time.NewTimer(300 * time.Millisecond)
	defer t.Stop()
	<-t.C
}

// follow drives a task to its terminal status and checks it: by polling
// tasks/get, by wait_run first (then tasks/get must say it is over), or,
// under 2025-11-25, by the blocking tasks/result.
func (tc *taskClient) follow(h *taskHandle, op *taskOp, how string) {
	deadline := time.Now().Add(150 * time.Second)
	var st taskState
	for h.final == nil {
		if time.Now().After(deadline) {
			tc.s.check(invTaskOnce)
			tc.fail(invTaskOnce, "task %s (%s, run %s) is still %s 150 s after it was made", h.id, h.op, h.runID, st)
			tc.unsettled = true
			return
		}
		switch how {
		case "wait_run":
			res, _, g, f, err := tc.tool("wait_run", map[string]any{"run_id": h.runID})
			op.faulted = op.faulted || f
			if err != nil || res.IsError || f {
				how = "poll"
				continue
			}
			if res.going() {
				continue
			}
			// The run ended: its task is over, at once.
			s, g2, f2, err := tc.get(h)
			op.faulted = op.faulted || f2
			how = "poll"
			if err != nil {
				continue
			}
			tc.s.check(invTaskWorking)
			if !s.terminal() && g == g2 && !f2 {
				tc.fail(invTaskWorking, "wait_run said run %s ended (%s), and then tasks/get said its task %s is %s", h.runID, res.str("status"), h.id, s)
			}
			continue
		case "tasks/result":
			_, g, f, err := tc.rpc("tasks/result", map[string]any{"taskId": h.id})
			op.faulted = op.faulted || f
			how = "poll"
			if err != nil {
				var rerr *rpcError
				if !errors.As(err, &rerr) {
					continue
				}
			}
			s, g2, f2, err := tc.get(h)
			op.faulted = op.faulted || f2
			if err != nil {
				continue
			}
			tc.s.check(invTaskWorking)
			if !s.terminal() && g == g2 && !f && !f2 {
				tc.fail(invTaskWorking, "tasks/result of task %s returned, and then tasks/get said it is %s", h.id, s)
			}
			continue
		}
		s, _, f, err := tc.get(h)
		op.faulted = op.faulted || f
		var rerr *rpcError
		if errors.As(err, &rerr) {
			tc.unsettled = true
			return
		}
		if err == nil {
			st = s
		}
		if h.final == nil {
			tc.pause()
		}
	}
	tc.checkEnd(h, op, *h.final, h.finalGen)
}

// checkEnd checks a task that has ended against its op and its run.
func (tc *taskClient) checkEnd(h *taskHandle, op *taskOp, st taskState, gen int64) {
	restarted := h.gen < 0 || gen < 0 || gen > h.gen || tc.srv.gen.Load() != h.gen
	switch st.Status {
	case "completed":
		res := toolResultOf(st.Result)
		if restarted && !slices.Contains(op.want, res.str("status")) {
			// A run that ended by itself before the restart is completed;
			// one the stop cut short is failed.
			tc.s.check(invTaskRestart)
			tc.fail(invTaskRestart, "task %s (%s, run %s) of server generation %d completed with a cut-short result after a restart, instead of failing with the restart message: %s", h.id, h.op, h.runID, h.gen, st)
		}
		tc.checkResult(op, res, fmt.Sprintf("task %s (%s)", h.id, op.kind))
		if restarted || gen != h.gen {
			return // the run is the earlier server's: wait_run knows it no more
		}
		res2, raw, g2, f, err := tc.tool("wait_run", map[string]any{"run_id": h.runID})
		if err != nil || f || g2 != h.gen {
			return
		}
		tc.s.check(invTaskResult)
		if res2.going() {
			tc.s.check(invTaskWorking)
			tc.fail(invTaskWorking, "task %s is completed, and wait_run says its run %s is %s", h.id, h.runID, res2.str("status"))
			return
		}
		if same, a, b := sameToolResult(st.Result, raw); !same {
			tc.fail(invTaskResult, "task %s's result differs from wait_run's for run %s:\n  task:     %.600s\n  wait_run: %.600s", h.id, h.runID, a, b)
		}
	case "cancelled":
		if op.valueVar == "" || restarted || !strings.Contains(st.Message, "variables defined before the interruption still exist") {
			return
		}
		res, _, g2, f, err := tc.tool("get_value", map[string]any{"expression": op.valueVar})
		if err != nil || f || g2 != h.gen {
			return
		}
		tc.s.check(invTaskCancel)
		if res.IsError || !strings.Contains(res.Text, op.marker) {
			tc.fail(invTaskCancel, "task %s was cancelled keeping the namespace, but %s is not what the run set first (%s): %.300s", h.id, op.valueVar, op.marker, res.Text)
		}
	}
}

// kernelUp reports whether the session's kernel is known to be up: the
// last op ran code to its end, with no fault and no restart since.
func (tc *taskClient) kernelUp() bool {
	return tc.upGen != 0 && tc.upGen == tc.srv.gen.Load() && !tc.unsettled
}

// checkResult checks a result (direct, or a completed task's) against what
// the op asks, and records the marker of a run that ended ok.
func (tc *taskClient) checkResult(op *taskOp, res soakRes, what string) {
	ok := slices.Contains(op.want, res.str("status")) && strings.Contains(res.Text, op.wantText)
	if ok && res.str("status") == "ok" && op.marker != "" && strings.Contains(res.Text, op.marker) {
		tc.expected = append(tc.expected, op.marker)
	}
	if ok && !op.faulted && (res.str("status") == "ok" || op.kind == "exception") {
		tc.upGen = tc.srv.gen.Load()
	}
	if op.faulted {
		return
	}
	tc.s.check(invTaskResult)
	if !ok {
		tc.fail(invTaskResult, "%s: want status %v with %q; got status %q isError=%v: %.400s", what, op.want, op.wantText, res.str("status"), res.IsError, res.Text)
	}
}

// settle waits for whatever the session still runs (interrupting an
// input() left open) and follows the tasks not yet over.
func (tc *taskClient) settle() {
	for i := 0; i < 20; i++ {
		res, _, _, _, err := tc.tool("wait_run", nil)
		if err != nil || res.IsError || !res.going() {
			break
		}
		if res.str("status") == "input_requested" {
			tc.tool("interrupt_session", nil)
		}
	}
	for _, h := range tc.allHandles() {
		if h.final == nil {
			tc.follow(h, &taskOp{kind: h.op, faulted: true}, "poll")
		}
	}
}

// pid is the session's kernel pid (0 when unknown).
func (tc *taskClient) pid() int {
	res, _, _, _, err := tc.tool("list_sessions", nil)
	if err != nil {
		return 0
	}
	return sessionPid(res, tc.sid)
}

// takes says which of the injector's faults a task client takes.
func (tc *taskClient) takes(kind string) bool {
	switch kind {
	case "kernel_sigkill", "kernel_os_exit", "interrupt_storm", "client_disconnect", "frame_bomb", "sigint_ignored_timeout":
		return true
	}
	return false
}

// fault runs a call that the fault meets while it is a task (or, for the
// ones whose run may end within --task-wait, its direct result).
func (tc *taskClient) fault(kind string) {
	tc.upGen = 0
	tc.s.count(tc.s.faults, kind)
	tc.note("FAULT %s", kind)
	tc.s.t.Logf("soak: %s task client %s (%s) takes fault %s", time.Now().Format("15:04:05.000"), tc.key, tc.proto, kind)
	sep := tc.proto == protoSEP
	m, p := tc.marker()
	switch kind {
	case "kernel_os_exit":
		tc.runOp(&taskOp{kind: kind, code: p + "\nimport time, os\ntime.sleep(2.5)\nos._exit(1)", marker: m, want: []string{"error"}, wantText: "died"}, "")
	case "frame_bomb":
		tc.runOp(&taskOp{kind: kind, code: "import time\ntime.sleep(2.5)\n" + ipytest.FrameBomb, want: []string{"interrupted"}, wantText: "broke the protocol"}, "")
	case "sigint_ignored_timeout":
		code := "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ignoring', flush=True)\nwhile True:\n    pass"
		tc.runOp(&taskOp{kind: kind, code: code, want: []string{"timeout"}, args: map[string]any{"timeout": 1}}, "")
	case "kernel_sigkill", "interrupt_storm", "client_disconnect":
		op := &taskOp{kind: kind, code: p + "\n" + ticks(16) + "print('finished', flush=True)", marker: m, want: []string{"ok"}, wantText: "finished"}
		if sep {
			op.args = map[string]any{"background": true}
		}
		switch kind {
		case "kernel_sigkill":
			op.want = []string{"error", "interrupted"}
			op.wantText = ""
		case "interrupt_storm":
			// interrupt_session's one SIGINT: a KeyboardInterrupt result,
			// not a cancelled run (reliability.md, the interrupt storm).
			op.want = []string{"error"}
			op.wantText = "KeyboardInterrupt"
		}
		tc.runOp(op, "fault:"+kind)
	}
	tc.unsettled = true
}

// faultDuring injects a fault into a task's run once it is running.
func (tc *taskClient) faultDuring(h *taskHandle, op *taskOp, kind string) {
	st, ok := tc.await(h, op, func(st taskState) bool { return strings.Contains(st.Message, "tick") || st.terminal() }, 90*time.Second)
	if !ok || st.terminal() {
		op.faulted = true
		return
	}
	switch kind {
	case "kernel_sigkill":
		pid := tc.pid()
		if pid <= 0 {
			op.faulted = true
			return
		}
		syscall.Kill(pid, syscall.SIGKILL)
	case "interrupt_storm":
		var wg sync.WaitGroup
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					tc.tool("interrupt_session", nil)
				}
			}()
		}
		wg.Wait()
	case "client_disconnect":
		if tc.proto == protoSEP {
			// Over stdio a client that goes away closes the server's stdin:
			// the server stops in order, and is started again on its state
			// directory. The task's run was going: it fails with the restart
			// message.
			op.faulted = true
			tc.s.restartServer(tc.srv, false)
			return
		}
		// Over HTTP the client vanishes in the middle of tasks/result; a new
		// connection of the same user follows the task, which goes on and
		// ends with its run's result: the fault does not excuse it.
		tc.dropping.Store(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			tc.rpc("tasks/result", map[string]any{"taskId": h.id})
		}()
		// tasks/result is in flight once the server has it: give the
		// request a moment to leave, then tear the connection down.
		t := time.NewTimer(time.Duration(200+tc.rng.Intn(800)) * time.Millisecond)
		<-t.C
		tc.http.vanish()
		<-done
		tc.dropping.Store(false)
		return
	}
}

// finalTaskChecks, after the final restarts: every task a client was
// handed answers as it ended (the same status, message and result), from a
// new server process; 2025-11-25's tasks/list lists them; the runs that
// ended ok are in the session's history, in order.
func (tc *taskClient) finalTaskChecks() {
	for _, h := range tc.allHandles() {
		before := h.final
		st, _, _, err := tc.get(h)
		if err != nil {
			continue
		}
		tc.s.check(invTaskOnce)
		if before == nil {
			tc.fail(invTaskOnce, "task %s (%s, run %s) had not ended when the load was over and the runs settled; after the final restart it is %s", h.id, h.op, h.runID, st)
		}
	}
	if tc.proto == protoLegacy {
		raw, _, _, err := tc.rpc("tasks/list", map[string]any{})
		if err == nil {
			var l struct {
				Tasks []struct {
					TaskID        string `json:"taskId"`
					Status        string `json:"status"`
					StatusMessage string `json:"statusMessage"`
				} `json:"tasks"`
			}
			json.Unmarshal(raw, &l)
			listed := map[string]string{}
			for _, t := range l.Tasks {
				listed[t.TaskID] = t.Status + " " + t.StatusMessage
			}
			for _, h := range tc.allHandles() {
				tc.s.check(invTaskOnce)
				if h.final != nil && listed[h.id] != h.final.Status+" "+h.final.Message {
					tc.fail(invTaskOnce, "tasks/list shows task %s (%s) as %q; it ended %s", h.id, h.op, listed[h.id], h.final)
				}
			}
		}
	}
	tc.checkHistory()
	if tc.proto == protoSEP {
		// The last generation runs code: its kernel's start sweeps the
		// runtime dirs of the generation the final restart SIGKILLed (as
		// the pooled kernels of the other servers do at their start), and
		// a run works after the restart.
		m, p := tc.marker()
		tc.runOp(&taskOp{kind: "short", code: p, marker: m, want: []string{"ok"}, wantText: m}, "")
	}
}

// checkHistory pages through the session's history: the markers of the
// runs that ended ok are there, in order.
func (tc *taskClient) checkHistory() {
	var text strings.Builder
	const page = 5
	for start, total := 0, 1; start < total; start += page {
		res, _, _, _, err := tc.tool("get_history", map[string]any{"full": true, "start": start, "end": start + page})
		if err != nil || res.IsError {
			if len(tc.expected) > 0 {
				tc.s.check(invHistory)
				tc.fail(invHistory, "get_history: %v %.300s", err, res.Text)
			}
			return
		}
		t, _ := res.Structured["total"].(float64)
		total = int(t)
		if s := res.str("transcript"); strings.Contains(s, "characters omitted]") {
			for i := start; i < min(start+page, total); i++ {
				one, _, _, _, err := tc.tool("get_history", map[string]any{"full": true, "start": i, "end": i + 1})
				if err != nil {
					return
				}
				text.WriteString(one.str("transcript"))
			}
		} else {
			text.WriteString(s)
		}
	}
	tc.s.check(invHistory)
	var got []string
	for _, m := range taskMarkerRe.FindAllStringSubmatch(text.String(), -1) {
		if m[1] == tc.key {
			got = append(got, m[0])
		}
	}
	i := 0
	for _, g := range got {
		if i < len(tc.expected) && g == tc.expected[i] {
			i++
		}
	}
	if i < len(tc.expected) {
		tc.fail(invHistory, "get_history: %d of %d runs that ended ok found in order; the first missing is %s (expected %v, history has %v)", i, len(tc.expected), tc.expected[i], tail(tc.expected, 12), tail(got, 12))
	}
}
