package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK runs every tools/call on its own goroutine, so two run_code calls
// for one session can reach their handlers in either order. Order is still
// known where requests are read one after another: OrderedTransport (and
// OrderedHTTP for streamable HTTP) stamps each queued tool call with a
// per-session ticket there. The handler waits for its ticket's turn, joins
// the session's queue (queue.go) and gives the ticket back at once; the
// ticket is also given back when the response is written, which covers
// calls that fail validation and never reach a handler.

// metaTicketPrefix begins the _meta key carrying a call's ticket to its
// handler. Each Server adds a random suffix, so a client cannot forge a
// ticket and make a call wait for a turn that never comes.
const metaTicketPrefix = "kernel-mcp/ticket-"

// queuedTools run one at a time per session, in arrival order. The rest
// (list_sessions, interrupt_session, get_history ...) never wait.
var queuedTools = map[string]bool{
	"run_code": true, "run_file": true, "rerun_code": true,
	"reset_session": true, "reset_run_context": true, "delete_session": true,
	"install_package": true, "create_session": true, "delete_history": true, "run_notebook": true,
	// The data tools read or change the namespace and the history: a
	// describe_data sent after a load_data must run after it.
	"get_value": true, "list_variables": true, "save_figure": true,
	"load_data": true, "describe_data": true, "estimate_ols": true, "plot_data": true,
}

// answersInput are stamped with a ticket too, though they join no queue:
// send_input gives its ticket back only once it has answered, so a
// get_value or run_code sent after it joins when the question is answered
// instead of finding it open. It does not wait for its own ticket's turn.
var answersInput = map[string]bool{"send_input": true}

// OrderedTransport wraps a transport whose messages arrive in order (stdio,
// or one streamable HTTP session) so that queued tool calls of one session
// reach the kernel in the order they were sent. Without it, calls of one
// session still run one at a time, in no promised order.
func (s *Server) OrderedTransport(t mcp.Transport) mcp.Transport {
	return &orderedTransport{t: t, srv: s}
}

type orderedTransport struct {
	t   mcp.Transport
	srv *Server
}

func (o *orderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := o.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	oc := &orderedConn{Connection: c, srv: o.srv, turns: o.srv.turns, calls: make(map[jsonrpc.ID]inflightCall), closed: make(chan struct{})}
	oc.id = o.srv.addConn(oc) // tasks_notify.go: task status notifications
	return oc, nil
}

// orderedConn stamps tickets. The turnstile is the server's, shared by every
// connection: session ids are global to the server, whichever client uses them.
type orderedConn struct {
	mcp.Connection
	srv   *Server
	turns *engine.Turnstile
	id    string // the server's name for it (Server.addConn)

	mu       sync.Mutex
	calls    map[jsonrpc.ID]inflightCall // every request read, until answered
	inflight int                         // requests read and not yet answered
	idle     chan struct{}               // closed when inflight drops to 0, if someone waits

	closed    chan struct{} // closed by Close: nothing more will be written
	closeOnce sync.Once
}

// drainWait bounds how long the end of input waits for calls in flight to
// be answered: a client that writes its requests and closes stdin still gets
// its answers, and a run that never ends does not keep the server alive.
const drainWait = 5 * time.Second

func (c *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	for err == nil && c.srv.taskStream(c, msg) { // answered here (tasks_notify.go)
		msg, err = c.Connection.Read(ctx)
	}
	if err != nil {
		// Only the end of input leaves calls to answer: after a close or
		// a cancellation their answers could not be written anyway.
		select {
		case <-c.closed:
		default:
			if errors.Is(err, io.EOF) {
				c.drain(ctx)
			}
		}
		return msg, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return msg, nil
	}
	c.mu.Lock()
	c.inflight++
	_, dup := c.calls[req.ID]
	if !dup {
		c.calls[req.ID] = inflightCall{}
	}
	c.mu.Unlock()
	if dup {
		// A client reusing the id of a call still in flight breaks the
		// protocol (the SDK refuses the second); it gets no ticket, which
		// would never be given back.
		return req, nil
	}
	if tk, ok := c.srv.stamp(req, c.id); ok {
		c.mu.Lock()
		_, open := c.calls[req.ID] // Close may have let go of every call
		if open {
			c.calls[req.ID] = inflightCall{tk: tk, stamped: true}
		}
		c.mu.Unlock()
		if !open {
			c.turns.Done(tk)
		}
	}
	return req, nil
}

// stamp gives a queued tool call its session's next ticket, carried to the
// handler in _meta. ok is false for anything that is not a queued tool call
// with a usable session_id. conn names the connection it came on ("" over
// HTTP), for the status notifications of a task it makes.
func (s *Server) stamp(req *jsonrpc.Request, conn string) (tk engine.Ticket, ok bool) {
	if req.Method != "tools/call" {
		return engine.Ticket{}, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil {
		return engine.Ticket{}, false
	}
	var name string
	json.Unmarshal(params["name"], &name)
	if !queuedTools[name] && !answersInput[name] {
		if task, asked := params["task"]; asked {
			// A task asked of a tool that takes none: tasksMiddleware
			// refuses it.
			s.carryTaskParam(req, params, task, conn)
		}
		return engine.Ticket{}, false
	}
	sid, ok := ticketSession(params["arguments"])
	if !ok {
		return engine.Ticket{}, false // fails validation; nothing to order
	}
	meta := map[string]any{}
	json.Unmarshal(params["_meta"], &meta)
	if meta == nil {
		meta = map[string]any{}
	}
	if task, ok := params["task"]; ok {
		// 2025-11-25's task request, which the SDK's params drop: its
		// handler finds it here (taskModeOf).
		meta[s.taskParamKey] = map[string]any{"task": task, "conn": conn}
	}
	tk = s.turns.Take(sid)
	meta[s.ticketKey] = tk.N
	b, err := json.Marshal(meta)
	if err != nil {
		s.turns.Done(tk)
		return engine.Ticket{}, false
	}
	params["_meta"] = b
	p, err := json.Marshal(params)
	if err != nil {
		s.turns.Done(tk)
		return engine.Ticket{}, false
	}
	req.Params = p
	return tk, true
}

// carryTaskParam puts a call's params.task in its _meta, as stamp does for
// queued tools.
func (s *Server) carryTaskParam(req *jsonrpc.Request, params map[string]json.RawMessage, task json.RawMessage, conn string) {
	meta := map[string]any{}
	json.Unmarshal(params["_meta"], &meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[s.taskParamKey] = map[string]any{"task": task, "conn": conn}
	b, err := json.Marshal(meta)
	if err != nil {
		return
	}
	params["_meta"] = b
	if p, err := json.Marshal(params); err == nil {
		req.Params = p
	}
}

// ticketSession is the session whose queue a call's ticket is for: the
// handlers read a missing or empty session_id as "default". ok is false for
// a session_id that is not a string (it fails validation).
func ticketSession(arguments json.RawMessage) (sid string, ok bool) {
	var args struct {
		SessionID any `json:"session_id"`
	}
	json.Unmarshal(arguments, &args)
	sid, isString := args.SessionID.(string)
	if args.SessionID != nil && !isString {
		return "", false
	}
	return sessionOr(sid), true
}

// awaitTicket waits, before a queued tool's handler acts at all, until the
// calls of the same session sent before it have joined the session's queue
// (or ended). So the handler finds the registry as they left it: a run_code
// sent after a create_session runs in the session created, with its cwd,
// and a create_session sent after a delete_session finds the delete queued.
// The wait is bounded by Config.MaxWait; a call resuming a run (multi
// round-trip) does not wait, since runTool gives its ticket back at once.
func (s *Server) awaitTicket(ctx context.Context, req *mcp.CallToolRequest) error {
	if req == nil || req.Params == nil || req.Params.RequestState != "" {
		return nil
	}
	sid, ok := ticketSession(req.Params.Arguments)
	if !ok {
		return nil
	}
	tk, ok := s.ticketOf(sid, req.Params.Meta)
	if !ok {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.MaxWait)
	defer cancel()
	if err := s.turns.Wait(wctx, tk); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", sid, ctx.Err())
		}
		return fmt.Errorf("session %q stayed busy for %v with earlier calls; nothing was done. Try again later", sid, s.cfg.MaxWait)
	}
	return nil
}

// callStartKey carries, in a queued tool's ctx, when its handler was called,
// so that the wait for its ticket counts against its --max-wait.
type callStartKey struct{}

// maxWaitLeft is what is left of Config.MaxWait for the call of ctx.
func (s *Server) maxWaitLeft(ctx context.Context) time.Duration {
	start, ok := ctx.Value(callStartKey{}).(time.Time)
	if !ok {
		return s.cfg.MaxWait
	}
	return max(s.cfg.MaxWait-time.Since(start), 0)
}

func (c *orderedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	// The id is free again before its answer is written, as in the SDK: a
	// client may reuse it as soon as it has the answer.
	c.mu.Lock()
	call, found := c.calls[resp.ID]
	delete(c.calls, resp.ID)
	c.inflight--
	if c.inflight <= 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
	c.mu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if found && call.stamped {
		c.turns.Done(call.tk)
	}
	return err
}

// inflightCall is a request read and not yet answered, with its ticket if
// it is a queued tool call.
type inflightCall struct {
	tk      engine.Ticket
	stamped bool
}

// drain waits, at most drainWait, until every request read so far has been
// answered.
func (c *orderedConn) drain(ctx context.Context) {
	c.mu.Lock()
	if c.inflight <= 0 {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	case <-c.closed:
	}
}

// Close releases the turns of calls that will never be answered.
func (c *orderedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.srv.dropConn(c.id)
	err := c.Connection.Close()
	c.mu.Lock()
	calls := c.calls
	c.calls = map[jsonrpc.ID]inflightCall{}
	c.mu.Unlock()
	for _, call := range calls {
		if call.stamped {
			c.turns.Done(call.tk)
		}
	}
	return err
}

// ticketOf reads the ticket OrderedTransport put in a call's _meta.
func (s *Server) ticketOf(session string, meta mcp.Meta) (engine.Ticket, bool) {
	n, ok := meta[s.ticketKey].(float64) // JSON numbers come back as float64
	if !ok {
		return engine.Ticket{}, false
	}
	return engine.Ticket{Session: session, N: uint64(n)}, true
}

// placeOf is the call's place in its session's line, from the ticket in its
// _meta; nil (join at once) when it has none.
func (s *Server) placeOf(session string, meta mcp.Meta) engine.Place {
	if tk, ok := s.ticketOf(session, meta); ok {
		return s.turns.Place(tk)
	}
	return nil
}

// OrderedHTTP wraps a streamable HTTP handler so that the queued tool calls
// of one session join its queue in the order their POSTs arrived, as
// OrderedTransport does for stdio: the SDK gives the HTTP transport no
// connection to wrap, so tickets are stamped on the request body. A ticket
// is given back when its POST is answered, if its handler has not already.
func (s *Server) OrderedHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxOrderedBody+1))
		if err != nil || len(body) > maxOrderedBody {
			// Too large to order (the SDK refuses it anyway) or unreadable:
			// hand on what there is, untouched.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			h.ServeHTTP(w, r)
			return
		}
		var tk engine.Ticket
		stamped := false
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if !checkTaskHeaders(w, r.Header, req) {
					return
				}
				if req.Method == "subscriptions/listen" && s.tasks != nil && s.listenHTTP(w, r, req) {
					return
				}
				before := req.Params
				if tk, stamped = s.stamp(req, ""); stamped || !bytes.Equal(before, req.Params) {
					if b, err := jsonrpc.EncodeMessage(req); err == nil {
						body = b
					} else if stamped {
						s.turns.Done(tk)
						stamped = false
					}
				}
			}
		}
		if stamped {
			defer s.turns.Done(tk)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

// maxOrderedBody is the largest POST body OrderedHTTP reads to stamp; it
// matches the SDK's own default limit.
const maxOrderedBody = mcp.DefaultMaxRequestBodyBytes
