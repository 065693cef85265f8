package kernel

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// Channel names one of a kernel's message channels.
type Channel int

// The kernel's channels. Heartbeat carries no Jupyter messages and is reached
// through Conn.Heartbeat.
const (
	Shell Channel = iota
	Control
	Stdin
	IOPub
)

func (c Channel) String() string {
	switch c {
	case Shell:
		return "shell"
	case Control:
		return "control"
	case Stdin:
		return "stdin"
	case IOPub:
		return "iopub"
	}
	return fmt.Sprintf("channel(%d)", int(c))
}

// Received is one message that arrived on a channel.
type Received struct {
	Channel Channel
	Msg     *wire.Message
}

// Conn carries Jupyter messages between the client and one kernel process.
// The ZeroMQ sockets of a connection file are one implementation; a kernel
// gateway over WebSocket would be another.
//
// Send and Heartbeat may be called concurrently, and return when their ctx
// ends even if the kernel reads nothing. Messages delivers every
// verified message from every channel, in order per channel; the channel is
// closed after Close. Close unblocks every pending call and may be called more
// than once.
type Conn interface {
	Send(ctx context.Context, ch Channel, msg *wire.Message) error
	Messages() <-chan Received
	// Heartbeat checks that the kernel answers at all, independent of whether
	// it is busy. It returns nil on an answer.
	Heartbeat(ctx context.Context) error
	Close() error
}

// ErrClosed is returned by calls on a closed connection or kernel.
var ErrClosed = errors.New("kernel: closed")

// zmqConn is Conn over the five ZeroMQ sockets of a connection file.
type zmqConn struct {
	signer *wire.Signer
	ci     ConnectionInfo

	shell, control, stdin zmq4.Socket // DEALER
	iopub                 zmq4.Socket // SUB

	// hbSem is held by the heartbeat in progress, since REQ carries one
	// request at a time; a beat queued behind a stuck one gives up when
	// its ctx ends. hbMu guards hb and hbClosed only, never across I/O.
	hbSem    chan struct{}
	hbMu     sync.Mutex
	hb       zmq4.Socket // REQ; nil after a failed beat, until the next beat dials a new one
	hbClosed bool

	ctx     context.Context // cancelled by Close; parent of every socket
	cancel  context.CancelFunc
	out     chan Received
	readers sync.WaitGroup
	// BadMessages counts frames that failed verification or parsing and were
	// dropped (a forged or corrupt message).
	badMu  sync.Mutex
	badN   int
	badErr error
	// lost holds, per channel, the last error a socket's connection ended
	// with while the kernel was expected to be there.
	lostMu sync.Mutex
	lost   map[Channel]error

	// sendSem holds one token per socket while a send is in progress:
	// zmq4 sockets are not safe for concurrent Send, and a channel (unlike
	// a mutex) lets a caller stop waiting when its ctx ends. sends counts
	// the goroutines that write, so Close can wait for them.
	sendSem   [3]chan struct{}
	sends     sync.WaitGroup
	closeOnce sync.Once

	limits connLimits
}

// connLimits is what every socket of a zmqConn holds the kernel to (see
// frameGuard): the largest message, and whom to tell when a socket's
// connection is stopped for breaking it. report may be nil.
type connLimits struct {
	maxMessage int64
	report     func(*ProtocolError)
}

// socketContext is the context of one socket: ctx, carrying the limit its
// connections are guarded by.
func (l connLimits) socketContext(ctx context.Context, channel string) context.Context {
	limit := l.maxMessage
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	return withFrameLimit(ctx, &frameLimit{channel: channel, max: limit, report: l.report})
}

// dialZMQ connects the five sockets. Dial retries are short and end with ctx,
// so a kernel that is still binding its ports costs milliseconds, not zmq4's
// default 250 ms steps.
func dialZMQ(ctx context.Context, ci ConnectionInfo, limits connLimits) (*zmqConn, error) {
	key := []byte(ci.Key)
	signer, err := wire.NewSigner(ci.SignatureScheme, key)
	if err != nil {
		return nil, err
	}
	retries := 200
	if dl, ok := ctx.Deadline(); ok {
		retries = max(int(time.Until(dl)/(10*time.Millisecond)), 1)
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &zmqConn{signer: signer, ci: ci, ctx: cctx, cancel: cancel, out: make(chan Received, 1024), hbSem: make(chan struct{}, 1), limits: limits}
	for i := range c.sendSem {
		c.sendSem[i] = make(chan struct{}, 1)
	}

	opts := func(extra ...zmq4.Option) []zmq4.Option {
		return append([]zmq4.Option{
			zmq4.WithDialerRetry(10 * time.Millisecond),
			zmq4.WithDialerMaxRetries(retries),
			zmq4.WithDialerTimeout(5 * time.Second),
			zmq4.WithLogger(discardLogger),
		}, extra...)
	}
	// shell and stdin share one identity, or input_request goes nowhere.
	ident := zmq4.SocketIdentity(uuid.NewString())
	c.shell = zmq4.NewDealer(limits.socketContext(cctx, "shell"), opts(zmq4.WithID(ident))...)
	c.stdin = zmq4.NewDealer(limits.socketContext(cctx, "stdin"), opts(zmq4.WithID(ident))...)
	c.control = zmq4.NewDealer(limits.socketContext(cctx, "control"), opts(zmq4.WithID(zmq4.SocketIdentity(uuid.NewString())))...)
	c.iopub = zmq4.NewSub(limits.socketContext(cctx, "iopub"), opts()...)
	c.hb = zmq4.NewReq(limits.socketContext(cctx, "heartbeat"), opts()...)

	dials := []struct {
		s    zmq4.Socket
		port int
	}{{c.shell, ci.ShellPort}, {c.control, ci.ControlPort}, {c.stdin, ci.StdinPort}, {c.iopub, ci.IOPubPort}, {c.hb, ci.HBPort}}
	// zmq4 retries a dial until the socket's own context ends, not ctx: end
	// it when ctx does, so a kernel that died or a start that timed out
	// stops the retries at once. That also ends a ZMTP handshake with a
	// peer that never answers (see closeWithSocket).
	dialed := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ctx.Done():
			cancel()
		case <-dialed:
		}
	}()
	errc := make(chan error, len(dials))
	for _, d := range dials {
		go func() { errc <- d.s.Dial(dialAddress(ci.endpoint(d.port))) }()
	}
	var derr error
	for range dials {
		if err := <-errc; err != nil && derr == nil {
			derr = err
		}
	}
	close(dialed)
	<-watchDone
	if cctx.Err() != nil {
		derr = ctx.Err()
	}
	if derr != nil {
		c.closeSockets()
		cancel()
		return nil, fmt.Errorf("kernel: connect to %s: %w", ci.IP, derr)
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		c.closeSockets()
		cancel()
		return nil, fmt.Errorf("kernel: subscribe to iopub: %w", err)
	}
	for ch, s := range map[Channel]zmq4.Socket{Shell: c.shell, Control: c.control, Stdin: c.stdin, IOPub: c.iopub} {
		c.readers.Add(1)
		go c.read(ch, s)
	}
	go func() {
		c.readers.Wait()
		close(c.out)
	}()
	return c, nil
}

// read drains one socket until Close. It never stops reading early: zmq4
// leaks its own goroutine when a socket is closed while nobody reads it.
func (c *zmqConn) read(ch Channel, s zmq4.Socket) {
	defer c.readers.Done()
	for {
		zm, err := s.Recv()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.lostMu.Lock()
			if c.lost == nil {
				c.lost = map[Channel]error{}
			}
			c.lost[ch] = err
			c.lostMu.Unlock()
			// io.EOF once per dead peer; keep draining until Close.
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		msg, err := wire.Decode(zm.Frames, c.signer)
		if err != nil {
			c.badMu.Lock()
			c.badN++
			c.badErr = err
			c.badMu.Unlock()
			continue
		}
		select {
		case c.out <- Received{Channel: ch, Msg: msg}:
		case <-c.ctx.Done():
			return
		}
	}
}

// lostSummary names the channels whose connection ended, for an error
// message: "; shell connection lost: EOF".
func (c *zmqConn) lostSummary() string {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	var b strings.Builder
	for _, ch := range []Channel{Shell, IOPub, Control, Stdin} {
		if err, ok := c.lost[ch]; ok {
			fmt.Fprintf(&b, "; %v connection lost: %v", ch, err)
		}
	}
	return b.String()
}

// Rejected reports how many received messages were dropped because their
// signature or framing was bad, and the last such error.
func (c *zmqConn) Rejected() (int, error) {
	c.badMu.Lock()
	defer c.badMu.Unlock()
	return c.badN, c.badErr
}

func (c *zmqConn) Messages() <-chan Received { return c.out }

// Send writes msg on ch. It returns when the message is written, when ctx
// ends, or when the connection closes. A write blocks while the kernel reads
// nothing (it is stopped, or a large message fills the socket buffers);
// when ctx ends first, Send returns ctx.Err() and the write goes on in the
// background, so the message may still reach the kernel later: a ZeroMQ
// message cannot be taken back half-written. Close ends such a write.
func (c *zmqConn) Send(ctx context.Context, ch Channel, msg *wire.Message) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var s zmq4.Socket
	switch ch {
	case Shell:
		s = c.shell
	case Control:
		s = c.control
	case Stdin:
		s = c.stdin
	default:
		return fmt.Errorf("kernel: cannot send on %v", ch)
	}
	frames, err := wire.Encode(msg, c.signer)
	if err != nil {
		return err
	}
	select {
	case c.sendSem[ch] <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
	done := make(chan error, 1)
	c.sends.Add(1)
	go func() {
		defer c.sends.Done()
		err := s.SendMulti(zmq4.NewMsgFrom(frames...))
		<-c.sendSem[ch]
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			if c.ctx.Err() != nil {
				return ErrClosed
			}
			return fmt.Errorf("kernel: send on %v: %w", ch, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

// Heartbeat sends a random payload on the REQ socket and waits for its echo.
// After a failure the REQ socket is in an unknown state, so it is closed and
// the next beat dials a new one. Everything, that dial included, ends with
// ctx: a kernel that accepts connections but never answers (it is stopped)
// costs each beat its ctx, never more.
func (c *zmqConn) Heartbeat(ctx context.Context) error {
	select {
	case c.hbSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
	defer func() { <-c.hbSem }()
	hb, err := c.heartbeatSocket(ctx)
	if err != nil {
		return err
	}
	payload := make([]byte, 16)
	rand.Read(payload)
	done := make(chan error, 1)
	go func() {
		if err := hb.Send(zmq4.NewMsg(payload)); err != nil {
			done <- err
			return
		}
		for {
			m, err := hb.Recv()
			if err != nil {
				done <- err
				return
			}
			if len(m.Frames) > 0 && bytes.Equal(m.Frames[0], payload) {
				done <- nil
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			c.dropHeartbeat(hb)
		}
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.ctx.Done():
		err = ErrClosed
	}
	// Closing the socket ends the goroutine, so none outlives the call.
	c.dropHeartbeat(hb)
	<-done
	return err
}

// heartbeatSocket returns the REQ socket, dialling a new one (within ctx)
// when the last beat dropped it.
func (c *zmqConn) heartbeatSocket(ctx context.Context) (zmq4.Socket, error) {
	c.hbMu.Lock()
	hb, closed := c.hb, c.hbClosed
	c.hbMu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if hb != nil {
		return hb, nil
	}
	s := zmq4.NewReq(c.limits.socketContext(c.ctx, "heartbeat"), zmq4.WithDialerRetry(10*time.Millisecond), zmq4.WithDialerMaxRetries(1), zmq4.WithLogger(discardLogger))
	if err := dialSocket(ctx, s, c.ci.endpoint(c.ci.HBPort)); err != nil {
		s.Close()
		if c.ctx.Err() != nil {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("kernel: heartbeat: %w", err)
	}
	c.hbMu.Lock()
	defer c.hbMu.Unlock()
	if c.hbClosed {
		s.Close()
		return nil, ErrClosed
	}
	c.hb = s
	return s, nil
}

// dropHeartbeat closes a REQ socket that failed a beat and forgets it.
func (c *zmqConn) dropHeartbeat(hb zmq4.Socket) {
	hb.Close()
	c.hbMu.Lock()
	if c.hb == hb {
		c.hb = nil
	}
	c.hbMu.Unlock()
}

// dialSocket dials one socket within ctx. When ctx ends first the socket
// is closed, which (through the transports of transport.go) also ends a
// ZMTP handshake in progress, and dialSocket returns once Dial has: no
// goroutine is left behind. The caller still owns, and closes, s.
func dialSocket(ctx context.Context, s zmq4.Socket, endpoint string) error {
	done := make(chan error, 1)
	go func() { done <- s.Dial(dialAddress(endpoint)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

func (c *zmqConn) closeSockets() {
	for _, s := range []zmq4.Socket{c.shell, c.control, c.stdin, c.iopub} {
		if s != nil {
			s.Close()
		}
	}
	c.hbMu.Lock()
	c.hbClosed = true
	if c.hb != nil {
		c.hb.Close()
	}
	c.hbMu.Unlock()
}

// Close closes every socket and waits for the readers to stop.
func (c *zmqConn) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		c.closeSockets()
		c.readers.Wait()
		// Closed sockets end any write still blocked.
		c.sends.Wait()
	})
	return nil
}
