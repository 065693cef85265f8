package kernel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// A kernel's WebSocket at /api/kernels/{id}/channels carries Jupyter
// messages in one of two framings. The server signs and verifies them on
// its side of the socket, so no framing here carries a signature.
//
// v1 (subprotocol v1.kernel.websocket.jupyter.org) is one binary frame per
// message: a little-endian uint64 count n, n uint64 offsets, then the
// channel name, header, parent_header, metadata, content and any buffers,
// each running from its offset to the next (the last to the end).
//
// Legacy (no subprotocol) is a text frame holding the message as one JSON
// object with a "channel" field; a message with buffers is a binary frame
// instead: a big-endian uint32 count n, n uint32 offsets, the JSON, then
// the buffers.

// wsSubprotocolV1 is the subprotocol name a server offering v1 answers with.
const wsSubprotocolV1 = "v1.kernel.websocket.jupyter.org"

// errBadFrame is wrapped by every framing error.
var errBadFrame = errors.New("kernel: malformed websocket frame")

// wsChannelNames maps the channels a client may address by name.
var wsChannelNames = map[string]Channel{"shell": Shell, "control": Control, "stdin": Stdin, "iopub": IOPub}

func parseWSChannel(name string) (Channel, error) {
	ch, ok := wsChannelNames[name]
	if !ok {
		return 0, fmt.Errorf("%w: unknown channel %q", errBadFrame, name)
	}
	return ch, nil
}

// rawOrEmpty is the JSON of a message part, "{}" when it is missing.
func rawOrEmpty(r json.RawMessage) []byte {
	if len(r) == 0 {
		return []byte("{}")
	}
	return r
}

// encodeWSv1 frames msg for the v1 subprotocol.
func encodeWSv1(ch Channel, msg *wire.Message) ([]byte, error) {
	header, err := json.Marshal(msg.Header)
	if err != nil {
		return nil, err
	}
	parent, err := json.Marshal(msg.ParentHeader)
	if err != nil {
		return nil, err
	}
	parts := append([][]byte{[]byte(ch.String()), header, parent, rawOrEmpty(msg.Metadata), rawOrEmpty(msg.Content)}, msg.Buffers...)
	// Offsets: where each part starts, plus where the last one ends.
	n := len(parts) + 1
	size := 8 * (1 + n)
	for _, p := range parts {
		size += len(p)
	}
	b := make([]byte, 8*(1+n), size)
	binary.LittleEndian.PutUint64(b, uint64(n))
	off := uint64(8 * (1 + n))
	for i, p := range parts {
		binary.LittleEndian.PutUint64(b[8*(1+i):], off)
		off += uint64(len(p))
	}
	binary.LittleEndian.PutUint64(b[8*n:], off)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b, nil
}

// decodeWSv1 parses one v1 frame. It checks every offset against the frame,
// so a corrupt frame is an error, never a panic.
func decodeWSv1(b []byte) (Channel, *wire.Message, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: %d bytes", errBadFrame, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	// channel, header, parent, metadata, content: at least 6 offsets.
	if n < 6 || n > uint64(len(b))/8-1 {
		return 0, nil, fmt.Errorf("%w: %d offsets in %d bytes", errBadFrame, n, len(b))
	}
	offs := make([]uint64, n)
	for i := range offs {
		offs[i] = binary.LittleEndian.Uint64(b[8*(1+i):])
		if offs[i] > uint64(len(b)) || (i > 0 && offs[i] < offs[i-1]) || (i == 0 && offs[0] < 8*(1+n)) {
			return 0, nil, fmt.Errorf("%w: offset %d out of order or range", errBadFrame, i)
		}
	}
	part := func(i int) []byte { return b[offs[i]:offs[i+1]] }
	ch, err := parseWSChannel(string(part(0)))
	if err != nil {
		return 0, nil, err
	}
	msg := &wire.Message{Metadata: json.RawMessage(part(3)), Content: json.RawMessage(part(4))}
	if err := json.Unmarshal(part(1), &msg.Header); err != nil {
		return 0, nil, fmt.Errorf("%w: header: %v", errBadFrame, err)
	}
	if err := json.Unmarshal(part(2), &msg.ParentHeader); err != nil {
		return 0, nil, fmt.Errorf("%w: parent_header: %v", errBadFrame, err)
	}
	for i := 5; i < int(n)-1; i++ {
		msg.Buffers = append(msg.Buffers, part(i))
	}
	return ch, msg, nil
}

// legacyMessage is a message as the legacy framing's JSON has it.
type legacyMessage struct {
	Channel      string          `json:"channel"`
	Header       wire.Header     `json:"header"`
	ParentHeader wire.Header     `json:"parent_header"`
	Metadata     json.RawMessage `json:"metadata"`
	Content      json.RawMessage `json:"content"`
	Buffers      []any           `json:"buffers"`
}

// encodeWSLegacy frames msg for a server without the v1 subprotocol. It
// reports whether the frame is binary (the message has buffers).
func encodeWSLegacy(ch Channel, msg *wire.Message) (frame []byte, binaryFrame bool, err error) {
	lm := legacyMessage{
		Channel: ch.String(), Header: msg.Header, ParentHeader: msg.ParentHeader,
		Metadata: rawOrEmpty(msg.Metadata), Content: rawOrEmpty(msg.Content), Buffers: []any{},
	}
	js, err := json.Marshal(lm)
	if err != nil {
		return nil, false, err
	}
	if len(msg.Buffers) == 0 {
		return js, false, nil
	}
	parts := append([][]byte{js}, msg.Buffers...)
	n := len(parts)
	b := make([]byte, 4*(1+n))
	binary.BigEndian.PutUint32(b, uint32(n))
	off := uint32(4 * (1 + n))
	for i, p := range parts {
		binary.BigEndian.PutUint32(b[4*(1+i):], off)
		off += uint32(len(p))
	}
	for _, p := range parts {
		b = append(b, p...)
	}
	return b, true, nil
}

// decodeWSLegacy parses one legacy frame, text (JSON) or binary.
func decodeWSLegacy(b []byte, binaryFrame bool) (Channel, *wire.Message, error) {
	js := b
	var bufs [][]byte
	if binaryFrame {
		if len(b) < 4 {
			return 0, nil, fmt.Errorf("%w: %d bytes", errBadFrame, len(b))
		}
		n := binary.BigEndian.Uint32(b)
		if n < 1 || uint64(n) > uint64(len(b))/4-1 {
			return 0, nil, fmt.Errorf("%w: %d offsets in %d bytes", errBadFrame, n, len(b))
		}
		offs := make([]uint32, n+1)
		for i := range n {
			offs[i] = binary.BigEndian.Uint32(b[4*(1+i):])
			if uint64(offs[i]) > uint64(len(b)) || (i > 0 && offs[i] < offs[i-1]) || (i == 0 && uint64(offs[0]) < 4*(1+uint64(n))) {
				return 0, nil, fmt.Errorf("%w: offset %d out of order or range", errBadFrame, i)
			}
		}
		offs[n] = uint32(len(b))
		js = b[offs[0]:offs[1]]
		for i := 1; i < int(n); i++ {
			bufs = append(bufs, b[offs[i]:offs[i+1]])
		}
	}
	var lm legacyMessage
	if err := json.Unmarshal(js, &lm); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errBadFrame, err)
	}
	ch, err := parseWSChannel(lm.Channel)
	if err != nil {
		return 0, nil, err
	}
	return ch, &wire.Message{Header: lm.Header, ParentHeader: lm.ParentHeader, Metadata: lm.Metadata, Content: lm.Content, Buffers: bufs}, nil
}
