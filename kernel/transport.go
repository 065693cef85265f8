package kernel

import (
	"context"
	"net"
	"strings"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// bufferedTCP names a zmq4 transport that is TCP with a buffered, guarded
// reader (frameGuard, in framelimit.go). zmq4 reads every frame header and
// body with its own read syscall; behind the guard's buffer one syscall
// brings in many frames, and no frame over the socket's limit reaches zmq4.
// Writes are untouched: the connection still is a *net.TCPConn underneath,
// so zmq4's multipart writes keep going out as one writev.
const bufferedTCP = "kmtcp"

// boundedIPC names zmq4's ipc transport (Unix domain sockets) with the
// connection bound to its socket's life and its reads guarded, as
// bufferedTCP's are.
const boundedIPC = "kmipc"

// readBufferSize is large enough to take a typical iopub burst (a status, a
// stream, a reply) in one read, and small next to a kernel's own buffers.
const readBufferSize = 64 << 10

func init() {
	if err := zmq4.RegisterTransport(bufferedTCP, bufferedTransport{}); err != nil {
		panic(err)
	}
	if err := zmq4.RegisterTransport(boundedIPC, boundedUnixTransport{}); err != nil {
		panic(err)
	}
}

// closeWithSocket closes c once ctx, the context zmq4 gives a transport's
// Dial (the dialling socket's own), ends. zmq4 sets no deadline on the ZMTP
// handshake, and a socket closed mid-handshake does not know the connection
// yet: without this, a peer that accepts and never greets (a stopped
// kernel, a stranger's listener) holds Dial, and its goroutine, for ever.
// zmq4 closes the connections it knows itself; closing twice is harmless.
func closeWithSocket(ctx context.Context, c net.Conn) {
	context.AfterFunc(ctx, func() { c.Close() })
}

type bufferedTransport struct{}

var _ transport.Transport = bufferedTransport{}

func (bufferedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	closeWithSocket(ctx, c)
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return &guardedConn{Conn: c, r: guardConn(ctx, c)}, nil
	}
	tc.SetNoDelay(true)
	return &bufferedConn{TCPConn: tc, r: guardConn(ctx, tc)}, nil
}

func (bufferedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}

func (bufferedTransport) Addr(ep string) (string, error) {
	return transport.New("tcp").Addr(ep)
}

// bufferedConn embeds *net.TCPConn so that every method, including the
// unexported one net.Buffers uses for writev, is the TCP connection's own;
// only Read goes through the guard.
type bufferedConn struct {
	*net.TCPConn
	r *frameGuard
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// guardedConn guards any other connection a dialer may return.
type guardedConn struct {
	net.Conn
	r *frameGuard
}

func (c *guardedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// guardedUnixConn is bufferedConn for a Unix domain socket.
type guardedUnixConn struct {
	*net.UnixConn
	r *frameGuard
}

func (c *guardedUnixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

type boundedUnixTransport struct{}

var _ transport.Transport = boundedUnixTransport{}

func (boundedUnixTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, err
	}
	closeWithSocket(ctx, c)
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return &guardedConn{Conn: c, r: guardConn(ctx, c)}, nil
	}
	return &guardedUnixConn{UnixConn: uc, r: guardConn(ctx, uc)}, nil
}

func (boundedUnixTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "unix", addr)
}

func (boundedUnixTransport) Addr(ep string) (string, error) {
	return transport.New("unix").Addr(ep)
}

// dialAddress is the address a socket dials for endpoint: an ipc endpoint
// goes through boundedIPC rather than zmq4's own ipc transport.
func dialAddress(endpoint string) string {
	if rest, ok := strings.CutPrefix(endpoint, "ipc://"); ok {
		return boundedIPC + "://" + rest
	}
	return endpoint
}
