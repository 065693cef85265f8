package mcpserver

import (
	"testing"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// TestRunListenersStack: when two calls wait on one run and the newer one
// leaves, progress goes to the older one again instead of to nobody.
func TestRunListenersStack(t *testing.T) {
	s := &Server{listeners: map[*engine.Run][]*attachment{}}
	r := new(engine.Run)
	newest := func() *attachment {
		s.listenMu.Lock()
		defer s.listenMu.Unlock()
		if l := s.listeners[r]; len(l) > 0 {
			return l[len(l)-1]
		}
		return nil
	}
	first, second := &attachment{token: "a"}, &attachment{token: "b"}
	leaveFirst := s.attach(r, first)
	leaveSecond := s.attach(r, second)
	if a, ticks := s.listener(r); a != second || ticks != 1 {
		t.Fatalf("attached %v (tick %d), want the newest call", a, ticks)
	}
	leaveSecond()
	if newest() != first {
		t.Fatalf("after the newer call left, attached %v, want the older one", newest())
	}
	leaveSecond() // leaving twice changes nothing
	if newest() != first {
		t.Fatalf("a second detach moved the listener to %v", newest())
	}
	leaveFirst()
	if newest() != nil || len(s.listeners) != 0 {
		t.Fatalf("after both left: attached %v, %d runs with listeners", newest(), len(s.listeners))
	}
	// Leaving out of order keeps the newest that is still there.
	leaveFirst, leaveSecond = s.attach(r, first), s.attach(r, second)
	leaveFirst()
	if newest() != second {
		t.Fatalf("the older call leaving moved the listener to %v", newest())
	}
	leaveSecond()
}
