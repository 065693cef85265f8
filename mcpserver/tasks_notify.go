package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// 2025-11-25's optional task status notifications
// (notifications/tasks/status), sent to the connection whose call made the
// task each time its status changes. go-sdk sends no notification it does
// not know, so they are written on the ordered connection itself, whose
// transport serializes writes. Over HTTP (no connection of ours) and for
// SEP-2663 tasks (whose notifications need subscriptions/listen) none are
// sent: clients poll, as both designs allow.

// taskNotices is what the notifications need: the connections by name, and
// for each task the connection to tell and the status it was last told.
type taskNotices struct {
	conns map[string]*orderedConn
	to    map[string]string       // task id → connection name
	told  map[string]tasks.Status // task id → the status last sent
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

// notifyTask sends the task's status to its connection if it changed since
// the last notification.
func (s *Server) notifyTask(id string) {
	s.noticeMu.Lock()
	c := s.notices.conns[s.notices.to[id]]
	last := s.notices.told[id]
	s.noticeMu.Unlock()
	if c == nil {
		return
	}
	v, err := s.task(id)
	if err != nil || v.status == last {
		return
	}
	s.noticeMu.Lock()
	s.notices.told[id] = v.status
	if v.status.Terminal() {
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

// followTask notifies the task's status changes until its run ends (then
// records the end) or the server stops.
func (s *Server) followTask(id string, r *engine.Run) {
	for {
		changed := r.Changed()
		s.notifyTask(id)
		select {
		case <-r.Done():
			if _, err := s.finishTask(id, r); err != nil && !errors.Is(err, tasks.ErrExpired) {
				s.cfg.Logger.Warn("recording a task's end", "task", id, "err", err)
			}
			s.notifyTask(id)
			return
		case <-changed:
		case <-s.tasksStop:
			return
		}
	}
}
