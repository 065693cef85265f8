package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task status notifications, which go-sdk cannot send (it sends no
// notification it does not know), so they are written on the ordered
// connection itself, whose transport serializes writes:
//   - 2025-11-25's notifications/tasks/status go to the connection whose
//     call made the task, each time its status changes;
//   - SEP-2663's notifications/tasks go to a subscriptions/listen stream
//     that asked for the task's id (notifications.taskIds). Such a listen is
//     answered here, not by go-sdk (which knows no taskIds), when task ids
//     are all it asks for; one that asks for more goes to go-sdk, and its
//     acknowledgement agrees to no task ids, so the client polls. Over
//     stdio the stream is the connection; over streamable HTTP it is the
//     listen's own POST, answered as an event stream (listenHTTP).
// 2025-11-25's notifications over HTTP (a session's GET stream, which is
// go-sdk's) are not sent: those clients poll, as that design allows.

// taskNotices is what the notifications need: the connections by name, and
// for each task the connection to tell and the status it was last told.
type taskNotices struct {
	conns map[string]*orderedConn
	to    map[string]string       // task id → connection name
	told  map[string]tasks.Status // task id → the status last sent
	// listens are the SEP-2663 streams: the connection, the listen's
	// request id, the tasks it agreed to and what each was last told.
	listens []*taskListen
}

type taskListen struct {
	conn  string // the ordered connection's name; an HTTP listen's own
	id    jsonrpc.ID
	write func(jsonrpc.Message) error
	told  map[string]tasks.Status
}

// addConn names a new ordered connection.
func (s *Server) addConn(c *orderedConn) string {
	id := uuid.NewString()
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	s.notices.conns[id] = c
	return id
}

// dropConn forgets a closed connection and the tasks it was to be told of.
func (s *Server) dropConn(id string) {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	delete(s.notices.conns, id)
	s.notices.listens = slices.DeleteFunc(s.notices.listens, func(l *taskListen) bool { return l.conn == id })
	for task, conn := range s.notices.to {
		if conn == id {
			delete(s.notices.to, task)
			delete(s.notices.told, task)
		}
	}
}

// noticeTo records that task's status goes to connection conn.
func (s *Server) noticeTo(task, conn string) {
	if conn == "" {
		return
	}
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	if s.notices.conns[conn] != nil {
		s.notices.to[task] = conn
		s.notices.told[task] = tasks.Working // the CreateTaskResult says so
	}
}

// notifyTask sends the task's status to its connection, and to the listens
// that follow it, where it changed since the last notification.
func (s *Server) notifyTask(id string) {
	s.notifyListens(id)
	s.noticeMu.Lock()
	c := s.notices.conns[s.notices.to[id]]
	last := s.notices.told[id]
	s.noticeMu.Unlock()
	if c == nil {
		return
	}
	v, err := s.tasks.Task(id)
	if err != nil || v.Status == last {
		return
	}
	s.noticeMu.Lock()
	s.notices.told[id] = v.Status
	if v.Status.Terminal() {
		delete(s.notices.to, id)
		delete(s.notices.told, id)
	}
	s.noticeMu.Unlock()
	b, err := json.Marshal(s.oldTaskOf(v))
	if err != nil {
		return
	}
	c.Connection.Write(context.Background(), &jsonrpc.Request{Method: "notifications/tasks/status", Params: b})
}

// taskStream answers what of a client's messages concerns SEP-2663's task
// notification streams, and reports whether it did (the message then goes
// no further): a subscriptions/listen for task ids only, and the
// notifications/cancelled that ends one.
func (s *Server) taskStream(c *orderedConn, msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	switch {
	case req.Method == "notifications/cancelled" && !req.ID.IsValid():
		var p struct {
			RequestID any `json:"requestId"`
		}
		json.Unmarshal(req.Params, &p)
		s.noticeMu.Lock()
		defer s.noticeMu.Unlock()
		n := len(s.notices.listens)
		s.notices.listens = slices.DeleteFunc(s.notices.listens, func(l *taskListen) bool {
			return l.conn == c.id && fmt.Sprint(l.id.Raw()) == fmt.Sprint(p.RequestID)
		})
		return len(s.notices.listens) < n
	case req.Method == "subscriptions/listen" && req.ID.IsValid():
		handled, _ := s.openListen(req, c.id, func(m jsonrpc.Message) error { return c.Connection.Write(context.Background(), m) })
		return handled
	}
	return false
}

// openListen answers a subscriptions/listen for task ids only, on a stream
// whose messages write sends. It reports whether it answered (one that asks
// for no task ids, or for more, is go-sdk's), and whether a listen is open
// (not when it refused it): that listen is conn's until dropConn or the
// client's notifications/cancelled ends it.
func (s *Server) openListen(req *jsonrpc.Request, conn string, write func(jsonrpc.Message) error) (handled, open bool) {
	var p struct {
		Meta          mcp.Meta                   `json:"_meta"`
		Notifications map[string]json.RawMessage `json:"notifications"`
	}
	json.Unmarshal(req.Params, &p)
	var ids []string
	if json.Unmarshal(p.Notifications["taskIds"], &ids) != nil || len(ids) == 0 || len(p.Notifications) != 1 {
		return false, false // go-sdk's: no task ids, or more than task ids
	}
	if !declaresTasks(p.Meta) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
		write(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
			Message: "Missing required client capability: task notifications need the " + tasksExtension + " extension declared", Data: data}})
		return true, false
	}
	l := &taskListen{conn: conn, id: req.ID, write: write, told: map[string]tasks.Status{}}
	agreed := []string{}
	for _, id := range ids {
		if _, err := s.tasks.Get(id); err == nil && !slices.Contains(agreed, id) {
			agreed = append(agreed, id)
			l.told[id] = ""
		}
	}
	ack, _ := json.Marshal(map[string]any{"_meta": map[string]any{mcp.MetaKeySubscriptionID: req.ID.Raw()}, "notifications": map[string]any{"taskIds": agreed}})
	write(&jsonrpc.Request{Method: "notifications/subscriptions/acknowledged", Params: ack})
	s.noticeMu.Lock()
	s.notices.listens = append(s.notices.listens, l)
	s.noticeMu.Unlock()
	for _, id := range agreed {
		s.notifyListens(id) // the state now, then each change
	}
	return true, true
}

// notifyListens sends notifications/tasks with the task as tasks/get shows
// it to each listen that follows it and was not told this status yet.
func (s *Server) notifyListens(id string) {
	s.noticeMu.Lock()
	var ls []*taskListen
	for _, l := range s.notices.listens {
		if _, ok := l.told[id]; ok {
			ls = append(ls, l)
		}
	}
	s.noticeMu.Unlock()
	if len(ls) == 0 {
		return
	}
	v, err := s.tasks.Task(id)
	if err != nil {
		return
	}
	b, err := json.Marshal(s.sepTaskOf(v, "", true))
	if err != nil {
		return
	}
	for _, l := range ls {
		s.noticeMu.Lock()
		fresh := l.told[id] != v.Status
		l.told[id] = v.Status
		s.noticeMu.Unlock()
		if fresh {
			l.write(&jsonrpc.Request{Method: "notifications/tasks", Params: b})
		}
	}
}

// listenHTTP serves a subscriptions/listen for task ids that came over
// streamable HTTP (protocol 2026-07-28, no HTTP session): its POST's
// response is the stream, an event per message, until the client closes
// it or the server stops. It reports false, having written nothing, for a
// listen that is go-sdk's.
func (s *Server) listenHTTP(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request) bool {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return false
	}
	var mu sync.Mutex
	started := false
	write := func(m jsonrpc.Message) error {
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if !started {
			started = true
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", b); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	}
	conn := "http-" + uuid.NewString()
	handled, open := s.openListen(req, conn, write)
	if !open {
		return handled
	}
	drain, _ := r.Context().Value(drainKey{}).(<-chan struct{})
	select {
	case <-r.Context().Done():
	case <-s.tasks.Stopped():
	case <-drain:
	}
	s.dropConn(conn)
	return true
}

type drainKey struct{}

// WithDrain gives ctx (an HTTP request's) a channel that closes when the
// HTTP server begins to shut down: a task listen's stream ends then, so
// that it does not hold the shutdown for its grace period.
func WithDrain(ctx context.Context, drain <-chan struct{}) context.Context {
	return context.WithValue(ctx, drainKey{}, drain)
}
