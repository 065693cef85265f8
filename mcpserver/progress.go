package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications. While a run goes on, the call waiting on it gets
// notifications/progress every second with the newest line the code
// printed, when it asked for progress (a progress token). Calls waiting on
// one run at once (a run_code and a wait_run from another connection)
// stack: the newest listens, and when it leaves, the one before it again.
// The lines come from the engine's event stream.

// attachment is a call now waiting on a run: progress notifications and
// elicitation go to it.
type attachment struct {
	ctx     context.Context // the call's
	session *mcp.ServerSession
	token   any // progress token; nil when the call asked for none
	ticks   int
	// mu is held while a notification goes to the call; gone is set, under
	// it, when the call stops waiting, so that no progress follows the
	// call's response.
	mu   sync.Mutex
	gone bool
}

func attachmentOf(ctx context.Context, req *mcp.CallToolRequest) *attachment {
	if req == nil || req.Session == nil {
		return nil
	}
	return &attachment{ctx: ctx, session: req.Session, token: req.Params.GetProgressToken()}
}

// attach makes a call the run's listener until detach.
func (s *Server) attach(r *engine.Run, a *attachment) (detach func()) {
	if a == nil {
		return func() {}
	}
	s.listenMu.Lock()
	s.listeners[r] = append(s.listeners[r], a)
	s.listenMu.Unlock()
	return func() {
		a.mu.Lock()
		a.gone = true
		a.mu.Unlock()
		s.listenMu.Lock()
		l := slices.DeleteFunc(s.listeners[r], func(l *attachment) bool { return l == a })
		if len(l) == 0 {
			delete(s.listeners, r)
		} else {
			s.listeners[r] = l
		}
		s.listenMu.Unlock()
	}
}

// listener is the call that gets the run's progress now, with its tick
// counted: the newest waiting, or nil.
func (s *Server) listener(r *engine.Run) (a *attachment, ticks int) {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	l := s.listeners[r]
	if len(l) == 0 {
		return nil, 0
	}
	a = l[len(l)-1]
	a.ticks++
	return a, a.ticks
}

// watchProgress sends the run's progress to its listener every second
// while one of its blocks is in the kernel (engine.Engine.FollowLines),
// until it finishes or the engine closes.
func (s *Server) watchProgress(r *engine.Run) {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if s.closing {
		return
	}
	follow := s.eng.FollowLines(r)
	s.progress.Go(func() { follow(time.Second, func(line string) { s.sendProgress(r, line) }) })
}

// sendProgress sends one progress notification to the run's listener, if
// it asked for progress.
func (s *Server) sendProgress(r *engine.Run, line string) {
	a, ticks := s.listener(r)
	if a == nil || a.token == nil {
		return
	}
	v := r.View()
	msg := line
	if msg == "" {
		msg = fmt.Sprintf("running for %d s", v.ElapsedMS/1000)
	}
	if v.Progress != "" {
		msg = v.Progress + ": " + msg
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone {
		return
	}
	// The call's own context: it names the request the notification
	// belongs to, which a transport without a session of its own
	// (streamable HTTP under protocol 2026-07-28) needs to send it on that
	// request's response stream.
	nctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
	a.session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: a.token, Progress: float64(ticks), Message: msg})
	cancel()
}
