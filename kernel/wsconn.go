package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// wsConn is Conn over a gateway's kernel WebSocket. One reader goroutine
// always reads, so the server's pings are answered while nobody waits for
// output. A socket that drops is redialled with the same session_id, so the
// server replays what it buffered meanwhile; Send waits for the new socket.
//
// It also watches for the kernel's end, which a gateway signals inside the
// stream rather than by closing it: iopub status "restarting" (the kernel
// died and the server is starting a new one, with an empty namespace) or
// "dead", a shutdown_reply nobody here asked for, or a 404 on reconnect.
// After DELETE the socket stays open, so only those say the kernel is gone.
type wsConn struct {
	gc       *gatewayClient
	kernelID string
	session  string // the WebSocket's session_id, kept across reconnects
	limit    int64  // the largest message read (Options.MaxMessageSize)

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu      sync.Mutex
	ws      *websocket.Conn
	v1      bool
	swapped chan struct{} // closed and replaced when ws is replaced

	writeMu sync.Mutex
	out     chan Received
	done    chan struct{} // the reader has ended

	// ack is signalled by the reader for each message it reads; acker
	// answers with a pong (see acker). ackerDone is closed when it ends.
	ack       chan struct{}
	ackerDone chan struct{}

	gone     chan struct{}
	goneOnce sync.Once
	goneErr  error

	// expectShutdown is set before this client shuts the kernel down or
	// restarts it, so the shutdown_reply that follows is not taken for
	// someone else's doing.
	expectShutdown atomic.Bool
	// restarted says the kernel was marked gone because the server
	// restarted it (a "restarting" status or a shutdown_reply asking for a
	// restart): the kernel id still names a kernel, a fresh one.
	restarted atomic.Bool
	// kernelSession is the session id in the headers of the kernel
	// process this connection talks to, from its first shell reply: a
	// shutdown_reply of an earlier process (a late message of one the
	// server replaced, on the same ports) does not end this one.
	kernelSession atomic.Pointer[string]
	reconnects    atomic.Int64
	rejected      atomic.Int64
}

var _ Conn = (*wsConn)(nil)

func dialWS(ctx context.Context, gc *gatewayClient, kernelID, session string, limit int64) (*wsConn, error) {
	ws, v1, err := gc.dialChannels(ctx, kernelID, session, limit)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &wsConn{
		gc: gc, kernelID: kernelID, session: session, limit: limit, ctx: cctx, cancel: cancel,
		ws: ws, v1: v1, swapped: make(chan struct{}),
		out: make(chan Received, 1024), done: make(chan struct{}), gone: make(chan struct{}),
		ack: make(chan struct{}, 1), ackerDone: make(chan struct{}),
	}
	go c.read()
	go c.acker()
	return c, nil
}

func (c *wsConn) current() (*websocket.Conn, bool, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws, c.v1, c.swapped
}

func (c *wsConn) markGone(err error) {
	c.goneOnce.Do(func() {
		c.goneErr = err
		close(c.gone)
	})
}

func (c *wsConn) read() {
	defer close(c.done)
	defer close(c.out)
	// A reconnect that raced with Close leaves a socket nobody closed.
	defer func() {
		ws, _, _ := c.current()
		ws.CloseNow()
	}()
	for {
		ws, v1, _ := c.current()
		typ, data, err := ws.Read(c.ctx)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			if errors.Is(err, websocket.ErrMessageTooBig) {
				// The server relays what the kernel sent; a message
				// this large is the kernel's doing, and reconnecting
				// would only replay it.
				c.markGone(&DiedError{ExitCode: -1, Protocol: &ProtocolError{Channel: "websocket", Limit: c.limit, What: "message"}})
				<-c.ctx.Done()
				return
			}
			if !c.reconnect(err) {
				<-c.ctx.Done()
				return
			}
			continue
		}
		select {
		case c.ack <- struct{}{}:
		default: // a pong is already due
		}
		var (
			ch  Channel
			msg *wire.Message
		)
		if v1 && typ == websocket.MessageBinary {
			ch, msg, err = decodeWSv1(data)
		} else {
			ch, msg, err = decodeWSLegacy(data, typ == websocket.MessageBinary)
		}
		if err != nil {
			c.rejected.Add(1)
			continue
		}
		c.watch(ch, msg)
		select {
		case c.out <- Received{Channel: ch, Msg: msg}:
		case <-c.ctx.Done():
			return
		}
	}
}

// acker answers what the server sent with an empty pong frame, which the
// server ignores, so that the server's data is acknowledged at once even
// through a proxy. Tornado (every Jupyter server, Kernel Gateway and
// Enterprise Gateway) leaves Nagle's algorithm on, so each small frame it
// writes waits until the one before is acknowledged. Talking to it
// directly, quickACK acknowledges at once; behind a proxy such as
// JupyterHub's configurable-http-proxy the proxy's socket does, and Linux
// holds that ACK back up to 40 ms unless the proxy has data to send the
// server: which the pong is. That made each round trip through
// JupyterHub's proxy 44-48 ms instead of 6-8 ms. A pong, unlike a ping,
// gets no answer, which would itself wait for an ACK and hold up the frames
// behind it. While Send writes, its frame does the same, so no pong then.
func (c *wsConn) acker() {
	defer close(c.ackerDone)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.ack:
		}
		if !c.writeMu.TryLock() {
			continue
		}
		ws, _, _ := c.current()
		_ = sendPong(c.ctx, ws) // a broken socket is the reader's to find
		c.writeMu.Unlock()
	}
}

// watch notices the messages by which a gateway says the kernel is gone.
func (c *wsConn) watch(ch Channel, msg *wire.Message) {
	if ch == Shell && msg.Header.Session != "" && c.kernelSession.Load() == nil {
		s := msg.Header.Session
		c.kernelSession.CompareAndSwap(nil, &s)
	}
	switch msg.Header.MsgType {
	case "status":
		if ch != IOPub {
			return
		}
		var st struct {
			ExecutionState string `json:"execution_state"`
		}
		if json.Unmarshal(msg.Content, &st) != nil || c.expectShutdown.Load() {
			return
		}
		switch st.ExecutionState {
		case "restarting":
			c.restarted.Store(true)
			c.markGone(&DiedError{ExitCode: -1, Remote: "the gateway reported it restarting: the kernel process ended and its state is lost"})
		case "dead":
			c.markGone(&DiedError{ExitCode: -1, Remote: "the gateway reported it dead"})
		}
	case "shutdown_reply":
		if c.expectShutdown.Load() {
			return
		}
		if s := c.kernelSession.Load(); s != nil && msg.Header.Session != "" && msg.Header.Session != *s {
			return // an earlier process's: the one this connection talks to lives
		}
		var r struct {
			Restart bool `json:"restart"`
		}
		json.Unmarshal(msg.Content, &r)
		if r.Restart {
			c.restarted.Store(true)
			c.markGone(&DiedError{ExitCode: -1, Remote: "another client restarted it; its state is lost"})
		} else {
			c.markGone(&DiedError{ExitCode: -1, Remote: "another client shut it down"})
		}
	}
}

// reconnect redials with the same session_id until ReconnectWindow ends.
// It reports false, having marked the kernel gone, when the server no
// longer has the kernel or stays unreachable.
func (c *wsConn) reconnect(cause error) bool {
	deadline := time.Now().Add(c.gc.window)
	backoff := 50 * time.Millisecond
	var last error = cause
	for {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		ws, v1, err := c.gc.dialChannels(ctx, c.kernelID, c.session, c.limit)
		cancel()
		if err == nil {
			c.mu.Lock()
			old := c.ws
			c.ws, c.v1 = ws, v1
			close(c.swapped)
			c.swapped = make(chan struct{})
			c.mu.Unlock()
			old.CloseNow()
			c.reconnects.Add(1)
			return true
		}
		if c.ctx.Err() != nil {
			return false
		}
		last = err
		if errors.Is(err, errNoSuchKernel) {
			c.markGone(&DiedError{ExitCode: -1, Remote: fmt.Sprintf("gateway %s no longer has kernel %s", c.gc, c.kernelID)})
			return false
		}
		if c.gc.stopped != nil {
			sctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			why := c.gc.stopped(sctx)
			cancel()
			if why != "" {
				c.markGone(&DiedError{ExitCode: -1, Remote: why})
				return false
			}
		}
		if time.Now().After(deadline) {
			why := last.Error()
			if oe := (*net.OpError)(nil); errors.As(last, &oe) {
				why = oe.Error() // the URL is named already
			}
			c.markGone(&DiedError{ExitCode: -1, Remote: fmt.Sprintf("lost the connection to gateway %s and could not reconnect for %v: %s", c.gc, c.gc.window, why)})
			return false
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (c *wsConn) Messages() <-chan Received { return c.out }

// Send writes one message. When the socket dropped, it waits for the
// reader to reconnect and writes on the new one.
func (c *wsConn) Send(ctx context.Context, ch Channel, msg *wire.Message) error {
	if ch == IOPub {
		return fmt.Errorf("kernel: cannot send on %v", ch)
	}
	for {
		if c.ctx.Err() != nil {
			return ErrClosed
		}
		ws, v1, swapped := c.current()
		var (
			data []byte
			typ  = websocket.MessageBinary
			err  error
		)
		if v1 {
			data, err = encodeWSv1(ch, msg)
		} else {
			var bin bool
			data, bin, err = encodeWSLegacy(ch, msg)
			if !bin {
				typ = websocket.MessageText
			}
		}
		if err != nil {
			return err
		}
		c.writeMu.Lock()
		err = ws.Write(ctx, typ, data)
		c.writeMu.Unlock()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-swapped:
			continue // the reader reconnected: send on the new socket
		case <-c.gone:
			return c.goneErr
		case <-c.ctx.Done():
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("kernel: send on %v to gateway %s: %w", ch, c.gc, err)
		}
	}
}

// Heartbeat pings the server over the WebSocket. A gateway has no
// heartbeat channel; the kernel's own death arrives as a status message.
func (c *wsConn) Heartbeat(ctx context.Context) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	ws, _, _ := c.current()
	return ws.Ping(ctx)
}

// Close closes the socket and waits for the reader. It does not shut the
// kernel down: that is a REST DELETE, the provisioner's business.
func (c *wsConn) Close() error {
	c.cancel()
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	ws.CloseNow()
	<-c.done
	<-c.ackerDone
	return nil
}
