package mcpserver

import (
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// followEvents keeps the server's resources in step with the engine: each
// session's history is a listed resource from its creation to its
// deletion, and a change of it is a resources/updated notification to the
// clients subscribed. It follows the engine's event stream, on one
// goroutine that ends when the engine closes; a buffer that overflowed
// (Missed) is caught up from the registry, and every history is then
// reported updated.
func (s *Server) followEvents() {
	s.eventsDone = make(chan struct{})
	s.followedCh = make(chan struct{})
	// Every event, so that the Seq it has reached says how far it is
	// (awaitFollower); those it does nothing with cost a comparison.
	s.events = s.eng.Events().Subscribe(4096, nil)
	// Sessions restored from the state dir were registered before the
	// subscription, and their events are as good as followed: a call's
	// result need not wait for them.
	s.followedMu.Lock()
	s.followed = s.events.From()
	s.followedMu.Unlock()
	listed := map[string]bool{}
	for _, ss := range s.eng.Sessions() {
		s.addResource(ss.ID())
		listed[ss.ID()] = true
	}
	go func() {
		defer close(s.eventsDone)
		defer s.events.Close()
		for {
			e, err := s.events.Next(s.eng.Context())
			if err != nil {
				return
			}
			switch e.Kind {
			case engine.SessionCreated:
				s.addResource(e.Session)
				listed[e.Session] = true
			case engine.SessionDeleted:
				s.mcp.RemoveResources(historyURI(e.Session))
				delete(listed, e.Session)
			case engine.HistoryChanged:
				s.historyUpdated(e.Session)
			case engine.Missed:
				s.catchUp(listed)
			}
			s.followedMu.Lock()
			s.followed = e.Seq
			close(s.followedCh)
			s.followedCh = make(chan struct{})
			s.followedMu.Unlock()
		}
	}()
}

// followerWait bounds how long a call's result waits for followEvents.
const followerWait = 2 * time.Second

// awaitFollower waits until followEvents has handled every event published
// so far (at most followerWait), so that a call's result comes after the
// resource changes and notifications its work caused, as clients expect.
func (s *Server) awaitFollower() {
	target := s.eng.Events().Seq()
	t := time.NewTimer(followerWait)
	defer t.Stop()
	for {
		s.followedMu.Lock()
		done, ch := s.followed >= target, s.followedCh
		s.followedMu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-s.eventsDone:
			return
		case <-t.C:
			s.cfg.Logger.Warn("resource notifications lag behind a call's result", "waited", followerWait)
			return
		}
	}
}

// catchUp lists the resources of the sessions that exist and only those,
// and reports every history updated, after the event stream dropped events.
func (s *Server) catchUp(listed map[string]bool) {
	now := map[string]bool{}
	for _, ss := range s.eng.Sessions() {
		now[ss.ID()] = true
		if !listed[ss.ID()] {
			s.addResource(ss.ID())
			listed[ss.ID()] = true
		}
		s.historyUpdated(ss.ID())
	}
	for id := range listed {
		if !now[id] {
			s.mcp.RemoveResources(historyURI(id))
			delete(listed, id)
		}
	}
}

func (s *Server) addResource(id string) {
	s.mcp.AddResource(&mcp.Resource{
		URI:         historyURI(id),
		Name:        id + "-history",
		Title:       "History of session " + id,
		Description: "Numbered transcript of the code run in session " + id + " and its outputs",
		MIMEType:    "text/plain",
	}, s.readHistoryResource)
}

// historyUpdated notifies the subscribed clients of a session's history.
func (s *Server) historyUpdated(id string) {
	if s.subscriptions.Load() <= 0 {
		return
	}
	s.mcp.ResourceUpdated(s.eng.Context(), &mcp.ResourceUpdatedNotificationParams{URI: historyURI(id)})
}
