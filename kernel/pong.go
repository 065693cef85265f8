package kernel

import (
	"context"
	_ "unsafe" // go:linkname

	"github.com/coder/websocket"
)

// opPong is RFC 6455's pong opcode, coder/websocket's opPong.
const opPong = 0xA

// writeControl is coder/websocket's own control-frame writer, which holds
// the connection's frame lock, so a pong never lands inside another frame.
// The library exports Ping but no way to send an unsolicited pong.
// TestPongFrame checks that it still writes one; its signature is
// (c *Conn) writeControl(ctx context.Context, opcode opcode, p []byte) error
// with `type opcode int` (github.com/coder/websocket v1.8.15, write.go).
//
//go:linkname writeControl github.com/coder/websocket.(*Conn).writeControl
func writeControl(c *websocket.Conn, ctx context.Context, opcode int, p []byte) error

// sendPong writes an unsolicited, empty pong (RFC 6455 5.5.3: the peer
// answers nothing). It exists for its TCP segment; see wsConn.acker.
func sendPong(ctx context.Context, ws *websocket.Conn) error {
	return writeControl(ws, ctx, opPong, nil)
}
