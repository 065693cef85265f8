package kernel

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// zmtpStream builds what a ZMTP 3 peer writes: the greeting, then frames.
type zmtpStream struct{ bytes.Buffer }

func newZMTPStream() *zmtpStream {
	s := &zmtpStream{}
	g := make([]byte, zmtpGreeting)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:], "NULL")
	s.Write(g)
	return s
}

// frame writes one frame header announcing size, and body (which may be
// shorter than size, to announce without sending).
func (s *zmtpStream) frame(flags byte, size uint64, body []byte) *zmtpStream {
	if size > 255 {
		flags |= 0x02
	}
	s.WriteByte(flags)
	if flags&0x02 != 0 {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], size)
		s.Write(b[:])
	} else {
		s.WriteByte(byte(size))
	}
	s.Write(body)
	return s
}

func (s *zmtpStream) ready(props ...[2]string) *zmtpStream {
	body := []byte{5}
	body = append(body, "READY"...)
	for _, p := range props {
		body = append(body, byte(len(p[0])))
		body = append(body, p[0]...)
		body = binary.BigEndian.AppendUint32(body, uint32(len(p[1])))
		body = append(body, p[1]...)
	}
	return s.frame(0x04, uint64(len(body)), body)
}

// readAll reads through a guard as zmq4 does (small reads for headers,
// exact reads for bodies), returning what passed and the error that ended it.
func readAll(t *testing.T, r io.Reader, lim *frameLimit) ([]byte, []*ProtocolError, error) {
	t.Helper()
	var reports []*ProtocolError
	lim.report = func(e *ProtocolError) { reports = append(reports, e) }
	g := newFrameGuard(r, lim)
	var out bytes.Buffer
	buf := make([]byte, 7)
	for {
		n, err := g.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.Bytes(), reports, err
		}
	}
}

func TestFrameGuardPassesAStream(t *testing.T) {
	s := newZMTPStream().ready([2]string{"Socket-Type", "ROUTER"}, [2]string{"Identity", ""})
	s.frame(0x01, 3, []byte("abc")).frame(0x01, 0, nil).frame(0x00, 1000, bytes.Repeat([]byte("x"), 1000))
	want := append([]byte(nil), s.Bytes()...)
	for name, r := range map[string]io.Reader{
		"whole":    bytes.NewReader(want),
		"one byte": iotest.OneByteReader(bytes.NewReader(want)),
		"half":     iotest.HalfReader(bytes.NewReader(want)),
	} {
		got, reports, err := readAll(t, r, &frameLimit{channel: "iopub", max: 1003})
		if err != io.EOF || !bytes.Equal(got, want) || len(reports) != 0 {
			t.Errorf("%s: got %d bytes (equal: %v), err %v, reports %v; want the whole stream and EOF", name, len(got), bytes.Equal(got, want), err, reports)
		}
	}
}

func TestFrameGuardStopsOversizedFrames(t *testing.T) {
	okPart := newZMTPStream().ready().frame(0x00, 5, []byte("hello"))
	okLen := okPart.Len()
	cases := []struct {
		name   string
		tail   func(s *zmtpStream)
		passed int // bytes of the tail that pass
		want   ProtocolError
	}{
		{"a 2^50-byte frame", func(s *zmtpStream) { s.frame(0x00, 1<<50, nil) }, 0,
			ProtocolError{Channel: "iopub", Size: 1 << 50, Limit: 1 << 20, What: "frame"}},
		{"a frame one byte over", func(s *zmtpStream) { s.frame(0x00, 1<<20+1, []byte("x")) }, 0,
			ProtocolError{Channel: "iopub", Size: 1<<20 + 1, Limit: 1 << 20, What: "frame"}},
		{"a message over in its frames", func(s *zmtpStream) {
			s.frame(0x01, 1<<19, make([]byte, 1<<19)).frame(0x01, 1<<19, make([]byte, 1<<19)).frame(0x00, 1, nil)
		}, 2 * (9 + 1<<19), ProtocolError{Channel: "iopub", Size: 1<<20 + 1, Limit: 1 << 20, What: "message"}},
		{"a command over its size", func(s *zmtpStream) { s.frame(0x04, 1<<17, nil) }, 0,
			ProtocolError{Channel: "iopub", Size: 1 << 17, Limit: maxCommandSize, What: "ZMTP command"}},
		{"a READY whose property runs past it", func(s *zmtpStream) {
			s.frame(0x04, 9, []byte("\x05READY\x09ab"))
		}, 0, ProtocolError{Channel: "iopub", What: "a malformed ZMTP command (property name beyond the command)"}},
		{"a READY whose value runs past it", func(s *zmtpStream) {
			s.frame(0x04, 12, []byte("\x05READY\x01a\xff\xff\xff\xff"))
		}, 0, ProtocolError{Channel: "iopub", What: "a malformed ZMTP command (property value beyond the command)"}},
		{"a command whose name runs past it", func(s *zmtpStream) { s.frame(0x04, 2, []byte("\x09R")) }, 0,
			ProtocolError{Channel: "iopub", What: "a malformed ZMTP command (name longer than the command)"}},
	}
	for _, c := range cases {
		s := newZMTPStream().ready().frame(0x00, 5, []byte("hello"))
		c.tail(s)
		want := s.Bytes()[:okLen+c.passed]
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(s.Bytes()),
			"one byte": iotest.OneByteReader(bytes.NewReader(s.Bytes())),
		} {
			got, reports, err := readAll(t, r, &frameLimit{channel: "iopub", max: 1 << 20})
			var pe *ProtocolError
			if !errors.As(err, &pe) || *pe != c.want {
				t.Errorf("%s, %s: err %v, want %+v", c.name, name, err, c.want)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %s: %d bytes passed, want the %d before the violation", c.name, name, len(got), len(want))
			}
			if len(reports) != 1 || reports[0] != pe {
				t.Errorf("%s, %s: reported %v, want the error once", c.name, name, reports)
			}
		}
	}
}

func TestFrameGuardCountsFrames(t *testing.T) {
	s := newZMTPStream()
	for range maxMessageFrames {
		s.frame(0x01, 0, nil)
	}
	s.frame(0x00, 0, nil)
	_, _, err := readAll(t, bytes.NewReader(s.Bytes()), &frameLimit{channel: "shell", max: 1 << 20})
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.What != "message of frames" {
		t.Fatalf("err = %v, want a message of too many frames", err)
	}
}

// TestFrameGuardLargeBody reads a body larger than the buffer in one call,
// as zmq4 does (io.ReadFull of the announced size).
func TestFrameGuardLargeBody(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100_000)
	s := newZMTPStream().frame(0x00, uint64(len(body)), body).frame(0x00, 3, []byte("end"))
	g := newFrameGuard(bytes.NewReader(s.Bytes()), &frameLimit{channel: "iopub", max: 1 << 21})
	head := make([]byte, zmtpGreeting+9)
	if _, err := io.ReadFull(g, head); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(body))
	if _, err := io.ReadFull(g, got); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("body: err %v, equal %v", err, bytes.Equal(got, body))
	}
	rest, err := io.ReadAll(g)
	if err != nil || string(rest) != "\x00\x03end" {
		t.Fatalf("after the body: %q, %v", rest, err)
	}
}

func FuzzFrameGuard(f *testing.F) {
	f.Add(newZMTPStream().ready([2]string{"Socket-Type", "PUB"}).frame(0x01, 2, []byte("ab")).frame(0, 0, nil).Bytes())
	f.Add(newZMTPStream().frame(0x04, 9, []byte("\x05READY\x09ab")).Bytes())
	f.Add(newZMTPStream().frame(0x00, 1<<50, nil).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := &frameLimit{channel: "iopub", max: 4096}
		got, reports, err := readAll(t, iotest.HalfReader(bytes.NewReader(data)), lim)
		if !bytes.HasPrefix(data, got) {
			t.Fatalf("the guard passed bytes that were not read")
		}
		var pe *ProtocolError
		if errors.As(err, &pe) != (len(reports) == 1) || len(reports) > 1 {
			t.Fatalf("err %v, %d reports", err, len(reports))
		}
	})
}

// benchStream is 2,000 small three-frame messages (a status, a stream) and
// 40 frames of 256 KiB (an image), as a kernel sends them.
func benchStream() []byte {
	s := newZMTPStream()
	for i := 0; i < 2000; i++ {
		s.frame(0x01, 0, nil).frame(0x01, 64, bytes.Repeat([]byte("h"), 64)).frame(0x00, 300, bytes.Repeat([]byte("c"), 300))
	}
	for i := 0; i < 40; i++ {
		s.frame(0x00, 256<<10, make([]byte, 256<<10))
	}
	return s.Bytes()
}

// drain reads a stream as zmq4 does: a 2-byte header (and the rest of a
// long one), then the body with ReadFull.
func drain(r io.Reader) {
	var h [9]byte
	body := make([]byte, 256<<10)
	io.ReadFull(r, make([]byte, 64))
	for {
		if _, err := io.ReadFull(r, h[:2]); err != nil {
			return
		}
		n := uint64(h[1])
		if h[0]&2 != 0 {
			io.ReadFull(r, h[2:9])
			n = uint64(h[2])<<48 | uint64(h[3])<<40 | uint64(h[4])<<32 | uint64(h[5])<<24 | uint64(h[6])<<16 | uint64(h[7])<<8 | uint64(h[8])
		}
		io.ReadFull(r, body[:n])
	}
}

// BenchmarkReadGuarded and BenchmarkReadBufio compare the guard with the
// plain buffered reader it replaced (docs/performance.md).
func BenchmarkReadGuarded(b *testing.B) {
	data := benchStream()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		drain(newFrameGuard(bytes.NewReader(data), &frameLimit{channel: "iopub", max: DefaultMaxMessageSize}))
	}
}

func BenchmarkReadBufio(b *testing.B) {
	data := benchStream()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		drain(bufio.NewReaderSize(bytes.NewReader(data), readBufferSize))
	}
}
