package kernel

import (
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// A shutdown_reply asking for a restart ends the connection only when the
// kernel process it talks to sent it: a late one from a process the server
// already replaced (on the same ports) is left alone. Seen on a loaded CI
// machine as "another client restarted it" right after this client's own
// restart of a kernel that had exited.
func TestWatchIgnoresAnEarlierProcessShutdownReply(t *testing.T) {
	c := &wsConn{gone: make(chan struct{})}
	msg := func(typ, session, content string) *wire.Message {
		m := &wire.Message{Content: []byte(content)}
		m.Header.MsgType, m.Header.Session = typ, session
		return m
	}
	c.watch(Shell, msg("kernel_info_reply", "process-2", `{"status":"ok"}`))
	c.watch(IOPub, msg("shutdown_reply", "process-1", `{"restart":true}`))
	select {
	case <-c.gone:
		t.Fatalf("an earlier process's shutdown_reply ended the connection: %v", c.goneErr)
	default:
	}
	c.watch(IOPub, msg("shutdown_reply", "process-2", `{"restart":true}`))
	select {
	case <-c.gone:
		if !c.restarted.Load() {
			t.Error("a restart by another client not marked as one")
		}
	default:
		t.Fatal("the live process's shutdown_reply (another client's restart) did not end the connection")
	}
}
