package kernel

import (
	"context"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// chanConn is a Conn that only delivers the messages a test puts in.
type chanConn struct{ c chan Received }

func (c chanConn) Send(context.Context, Channel, *wire.Message) error { return nil }
func (c chanConn) Messages() <-chan Received                          { return c.c }
func (c chanConn) Heartbeat(context.Context) error                    { return nil }
func (c chanConn) Close() error                                       { return nil }

// TestRouterStateIgnoresControl: the busy and idle of requests handled on
// the control thread (a subshell's creation, jupyter-resource-usage's
// usage_request) leave the main shell's state alone.
func TestRouterStateIgnoresControl(t *testing.T) {
	c := chanConn{c: make(chan Received)}
	r := newRouter(c, nil)
	status := func(parentType, state string) {
		m := &wire.Message{Header: wire.Header{MsgType: "status"}, Content: []byte(`{"execution_state": "` + state + `"}`)}
		m.ParentHeader.MsgType = parentType
		c.c <- Received{Channel: IOPub, Msg: m}
	}
	status("execute_request", "busy")
	for _, typ := range []string{"usage_request", "create_subshell_request", "interrupt_request"} {
		status(typ, "busy")
		status(typ, "idle")
	}
	close(c.c)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the router did not end")
	}
	if st := r.state.Load(); st != "busy" {
		t.Errorf("state after control requests' statuses: %v, want busy", st)
	}
}
