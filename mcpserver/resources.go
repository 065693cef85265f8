package mcpserver

import (
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
	s.events = s.eng.Events().Subscribe(1024, func(e *engine.Event) bool {
		switch e.Kind {
		case engine.SessionCreated, engine.SessionDeleted, engine.HistoryChanged, engine.Missed:
			return true
		}
		return false
	})
	// Sessions restored from the state dir were registered before the
	// subscription.
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
		}
	}()
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
