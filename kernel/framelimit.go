// Size limits on what a kernel sends: a ZMTP guard in front of zmq4's
// reader, and the error that ends a connection when a kernel breaks them.

package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// DefaultMaxMessageSize is the largest message a kernel may send when
// Options.MaxMessageSize is zero: far above any real output (a 50 MB image
// travels as about 67 MB of base64), far below what would hurt the server.
const DefaultMaxMessageSize = 256 << 20

// maxMessageFrames bounds the frames of one ZeroMQ message. A Jupyter
// message has its identities, the delimiter, the signature, four JSON parts
// and its buffers: a handful. Without a bound, a stream of empty frames
// marked "more" would grow one message's frame list without end, 24 bytes
// of slice header for every 2 bytes on the wire.
const maxMessageFrames = 1 << 16

// maxCommandSize bounds a ZMTP command (READY, PING, ERROR): they carry a
// few short properties.
const maxCommandSize = 64 << 10

// zmtpGreeting is the size of the ZMTP 3 greeting that opens a connection.
const zmtpGreeting = 64

// ProtocolError says that a kernel broke the messaging protocol in a way
// that ends its connection: it announced a frame or a message over the size
// limit, or sent a malformed ZMTP command. The kernel is stopped; calls in
// flight return a *DiedError whose Protocol is this.
type ProtocolError struct {
	// Channel is where it happened: shell, control, stdin, iopub,
	// heartbeat, or "websocket" for a gateway kernel.
	Channel string
	// Size is the size announced, when the error is about a size (0 when
	// a gateway only said it was over Limit).
	Size uint64
	// Limit is the limit it broke, in bytes (or frames, for Frames).
	Limit int64
	// What names what was too large or malformed: "frame", "message",
	// "message of frames", "command", or a description.
	What string
}

func (e *ProtocolError) Error() string {
	switch {
	case e.What == "message of frames":
		return fmt.Sprintf("the kernel broke the protocol on %s: a message of more than %d frames", e.Channel, e.Limit)
	case e.Size > 0:
		return fmt.Sprintf("the kernel broke the protocol on %s: it announced a %d-byte %s, over the %d-byte limit", e.Channel, e.Size, e.What, e.Limit)
	case e.Limit > 0:
		return fmt.Sprintf("the kernel broke the protocol on %s: it sent a %s over the %d-byte limit", e.Channel, e.What, e.Limit)
	default:
		return fmt.Sprintf("the kernel broke the protocol on %s: %s", e.Channel, e.What)
	}
}

// frameLimit is what the transports of transport.go apply to a socket's
// connections. It travels in the socket's context, which zmq4 hands to a
// transport's Dial, so one registered transport serves every kernel with
// its own limit and its own report.
type frameLimit struct {
	channel string
	max     int64
	// report is called once per connection, from zmq4's reader goroutine,
	// when the guard stops a connection.
	report func(*ProtocolError)
}

type frameLimitKey struct{}

func withFrameLimit(ctx context.Context, l *frameLimit) context.Context {
	return context.WithValue(ctx, frameLimitKey{}, l)
}

// guardConn wraps a dialled connection's reads in a frameGuard. A socket
// dialled without a limit in its context gets the default one.
func guardConn(ctx context.Context, c net.Conn) *frameGuard {
	l, _ := ctx.Value(frameLimitKey{}).(*frameLimit)
	if l == nil {
		l = &frameLimit{channel: "a socket", max: DefaultMaxMessageSize}
	}
	return newFrameGuard(c, l)
}

// frameGuard reads a ZMTP 3 stream ahead of zmq4 and stops it before a
// frame whose announced size, or whose message's size so far, is over the
// limit: zmq4 allocates whatever a peer announces (make([]byte, size)), and
// an announced 2^50 bytes would panic its reader and with it the process.
// It also holds each command frame back until it is whole and well-formed,
// since zmq4 parses a READY command's properties without checking their
// lengths against the frame.
//
// Bytes reach zmq4 only once checked: a frame header once its size is
// within the limits, a command once parsed, body bytes of a message frame
// as they come. After a violation, Read returns what was checked before it,
// then the *ProtocolError for good; report is called once.
//
// It also buffers reads, as bufio would: zmq4 reads every header and body
// with a syscall of its own.
type frameGuard struct {
	r   io.Reader
	lim *frameLimit

	// buf[start:end] is read and not yet delivered; buf[start:ok] is
	// checked and may be delivered; buf[ok:scan] is parsed but held (a
	// header being read, a command not yet whole); cmdAt is where the held
	// command frame's body starts.
	buf                  []byte
	start, ok, scan, end int
	cmdAt                int
	err                  error // the violation, once delivered bytes run out
	rerr                 error // the underlying reader's error, likewise
	greeting             int   // greeting bytes still to pass
	body                 uint64
	command              bool
	msgBytes             uint64
	msgFrames            int
}

func newFrameGuard(r io.Reader, lim *frameLimit) *frameGuard {
	return &frameGuard{r: r, lim: lim, buf: make([]byte, readBufferSize+maxCommandSize+16), greeting: zmtpGreeting}
}

func (g *frameGuard) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for g.ok == g.start {
		if g.err != nil {
			return 0, g.err
		}
		if g.rerr != nil {
			return 0, g.rerr
		}
		// A large body with nothing buffered goes straight into p.
		if g.start == g.end && g.body > 0 && !g.command && uint64(len(p)) >= uint64(readBufferSize) {
			want := min(uint64(len(p)), g.body)
			n, err := g.r.Read(p[:want])
			g.body -= uint64(n)
			if n > 0 {
				return n, nil
			}
			g.rerr = err
			continue
		}
		g.fill()
	}
	n := copy(p, g.buf[g.start:g.ok])
	g.start += n
	return n, nil
}

// fill reads once into the buffer and parses what came.
func (g *frameGuard) fill() {
	if g.start == g.end {
		g.start, g.ok, g.scan, g.end, g.cmdAt = 0, 0, 0, 0, 0
	} else if g.start > 0 {
		// Held bytes (a header, a command) are at most maxCommandSize+9,
		// so moving them to the front always leaves room to read.
		n := copy(g.buf, g.buf[g.start:g.end])
		g.ok -= g.start
		g.scan -= g.start
		g.cmdAt -= g.start
		g.start, g.end = 0, n
	}
	n, err := g.r.Read(g.buf[g.end:])
	g.end += n
	g.parse()
	if err != nil {
		g.rerr = err
	}
}

// parse moves scan (and ok) forward over buf[scan:end].
func (g *frameGuard) parse() {
	for g.err == nil && g.scan < g.end {
		avail := g.end - g.scan
		switch {
		case g.greeting > 0:
			m := min(g.greeting, avail)
			g.greeting -= m
			g.scan += m
			g.ok = g.scan
		case g.body > 0:
			m := int(min(g.body, uint64(avail)))
			g.body -= uint64(m)
			g.scan += m
			if !g.command {
				g.ok = g.scan
			} else if g.body == 0 {
				g.endCommand()
			}
		default:
			if !g.header(avail) {
				return
			}
		}
	}
}

// header parses the frame header at scan; false when it is not whole yet.
func (g *frameGuard) header(avail int) bool {
	if avail < 2 {
		return false
	}
	flags := g.buf[g.scan]
	hl, size := 2, uint64(g.buf[g.scan+1])
	if flags&0x02 != 0 { // long frame: an 8-byte size
		if hl = 9; avail < hl {
			return false
		}
		size = binary.BigEndian.Uint64(g.buf[g.scan+1 : g.scan+9])
	}
	if flags&0x04 != 0 { // command
		if size > maxCommandSize {
			g.fail(&ProtocolError{Channel: g.lim.channel, Size: size, Limit: maxCommandSize, What: "ZMTP command"})
			return false
		}
		g.command, g.body = true, size
		g.scan += hl
		g.cmdAt = g.scan
		if size == 0 {
			g.endCommand()
		}
		return true
	}
	limit := uint64(g.lim.max)
	switch {
	case size > limit:
		g.fail(&ProtocolError{Channel: g.lim.channel, Size: size, Limit: g.lim.max, What: "frame"})
		return false
	case g.msgBytes+size > limit:
		g.fail(&ProtocolError{Channel: g.lim.channel, Size: g.msgBytes + size, Limit: g.lim.max, What: "message"})
		return false
	case g.msgFrames+1 > maxMessageFrames:
		g.fail(&ProtocolError{Channel: g.lim.channel, Limit: maxMessageFrames, What: "message of frames"})
		return false
	}
	if flags&0x01 != 0 { // more frames follow
		g.msgBytes += size
		g.msgFrames++
	} else {
		g.msgBytes, g.msgFrames = 0, 0
	}
	g.body = size
	g.scan += hl
	g.ok = g.scan
	return true
}

// endCommand checks the whole command at buf[cmdAt:scan] and releases it.
func (g *frameGuard) endCommand() {
	g.command = false
	if err := checkCommand(g.buf[g.cmdAt:g.scan]); err != "" {
		g.fail(&ProtocolError{Channel: g.lim.channel, What: "a malformed ZMTP command (" + err + ")"})
		return
	}
	g.ok = g.scan
}

func (g *frameGuard) fail(e *ProtocolError) {
	g.err = e
	if g.lim.report != nil {
		g.lim.report(e)
	}
}

// checkCommand checks a command body as ZMTP 3.0 lays it out: a name of
// 1+N bytes, and for READY a list of properties, each a 1-byte name length,
// the name, a 4-byte value length and the value, all within the body.
func checkCommand(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	n := int(b[0])
	if 1+n > len(b) {
		return "name longer than the command"
	}
	if string(b[1:1+n]) != "READY" {
		return ""
	}
	for p := b[1+n:]; len(p) > 0; {
		kl := int(p[0])
		if 1+kl+4 > len(p) {
			return "property name beyond the command"
		}
		vl := binary.BigEndian.Uint32(p[1+kl:])
		rest := uint64(len(p) - (1 + kl + 4))
		if uint64(vl) > rest {
			return "property value beyond the command"
		}
		p = p[1+kl+4+int(vl):]
	}
	return ""
}
