// Package wire converts between ZeroMQ multipart frames and Jupyter messages
// (messaging protocol v5.3+), and signs and verifies them. It knows nothing of
// sockets: Encode produces the frames to send, Decode checks and parses the
// frames received.
//
//	signer, _ := wire.NewSigner("hmac-sha256", key)
//	msg := wire.NewMessage("kernel_info_request", session, nil)
//	frames, _ := wire.Encode(msg, signer)
//	back, err := wire.Decode(frames, signer) // verifies the signature first
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ProtocolVersion is the Jupyter messaging protocol version this package speaks.
const ProtocolVersion = "5.3"

// Delimiter separates routing identities from the signed message frames.
var Delimiter = []byte("<IDS|MSG>")

// Header is a message header. The zero Header encodes as an empty JSON object,
// which is what an empty parent_header must look like on the wire.
type Header struct {
	MsgID    string `json:"msg_id,omitempty"`
	Session  string `json:"session,omitempty"`
	Username string `json:"username,omitempty"`
	Date     string `json:"date,omitempty"`
	MsgType  string `json:"msg_type,omitempty"`
	Version  string `json:"version,omitempty"`
	// SubshellID addresses a shell or stdin message to a kernel subshell
	// (JEP 91); empty means the main shell.
	SubshellID string `json:"subshell_id,omitempty"`
}

// Message is one Jupyter message. Metadata and Content stay raw JSON so that a
// message can be routed without decoding its body; callers unmarshal Content
// into the type that MsgType names.
type Message struct {
	Identities   [][]byte
	Header       Header
	ParentHeader Header
	Metadata     json.RawMessage
	Content      json.RawMessage
	Buffers      [][]byte
}

// NewMessage returns a request with a fresh msg_id, the current time and the
// given content, which is marshalled to JSON (nil becomes {}).
func NewMessage(msgType, session string, content any) (*Message, error) {
	raw := json.RawMessage("{}")
	if content != nil {
		b, err := json.Marshal(content)
		if err != nil {
			return nil, fmt.Errorf("wire: marshal %s content: %w", msgType, err)
		}
		raw = b
	}
	return &Message{
		Header: Header{
			MsgID:    uuid.NewString(),
			Session:  session,
			Username: "kernel-mcp",
			Date:     time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
			MsgType:  msgType,
			Version:  ProtocolVersion,
		},
		Metadata: json.RawMessage("{}"),
		Content:  raw,
	}, nil
}

// Errors returned by Decode. Each names one way a message can be malformed;
// callers test with errors.Is.
var (
	ErrNoDelimiter  = errors.New("wire: no <IDS|MSG> delimiter")
	ErrShortMessage = errors.New("wire: too few frames after <IDS|MSG>")
	ErrBadSignature = errors.New("wire: bad message signature")
	ErrBadJSON      = errors.New("wire: bad JSON in message frame")
)

// Encode signs msg and returns its frames: identities, delimiter, signature,
// header, parent_header, metadata, content, buffers.
func Encode(msg *Message, s *Signer) ([][]byte, error) {
	header, err := json.Marshal(msg.Header)
	if err != nil {
		return nil, fmt.Errorf("wire: marshal header: %w", err)
	}
	parent, err := json.Marshal(msg.ParentHeader)
	if err != nil {
		return nil, fmt.Errorf("wire: marshal parent_header: %w", err)
	}
	metadata := orEmptyObject(msg.Metadata)
	content := orEmptyObject(msg.Content)

	frames := make([][]byte, 0, len(msg.Identities)+6+len(msg.Buffers))
	frames = append(frames, msg.Identities...)
	frames = append(frames, Delimiter, s.Sign(header, parent, metadata, content), header, parent, metadata, content)
	frames = append(frames, msg.Buffers...)
	return frames, nil
}

// Decode verifies and parses frames received from a kernel. It refuses a
// message with no delimiter, fewer than five frames after it, a signature
// that does not match, a header, parent header or metadata that is not a
// JSON object, or content that does not look like one. The signature is
// checked before any JSON is parsed; content is left raw for its consumer to
// unmarshal (and reject) in one pass.
func Decode(frames [][]byte, s *Signer) (*Message, error) {
	delim := -1
	for i, f := range frames {
		if bytes.Equal(f, Delimiter) {
			delim = i
			break
		}
	}
	if delim < 0 {
		return nil, ErrNoDelimiter
	}
	rest := frames[delim+1:]
	if len(rest) < 5 {
		return nil, fmt.Errorf("%w: got %d, want at least 5", ErrShortMessage, len(rest))
	}
	sig, header, parent, metadata, content := rest[0], rest[1], rest[2], rest[3], rest[4]
	if !s.Verify(sig, header, parent, metadata, content) {
		return nil, ErrBadSignature
	}

	msg := &Message{
		Identities: frames[:delim:delim],
		Metadata:   json.RawMessage(metadata),
		Content:    json.RawMessage(content),
	}
	if len(rest) > 5 {
		msg.Buffers = rest[5:]
	}
	if err := json.Unmarshal(header, &msg.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadJSON, err)
	}
	if msg.Header.MsgType == "" {
		return nil, fmt.Errorf("%w: header has no msg_type", ErrBadJSON)
	}
	if err := json.Unmarshal(parent, &msg.ParentHeader); err != nil {
		return nil, fmt.Errorf("%w: parent_header: %v", ErrBadJSON, err)
	}
	if !isObject(metadata) {
		return nil, fmt.Errorf("%w: metadata is not an object", ErrBadJSON)
	}
	// Content can be megabytes of output: it is checked here only for being
	// an object, and fully when the consumer unmarshals it, once.
	if c := bytes.TrimSpace(content); len(c) < 2 || c[0] != '{' || c[len(c)-1] != '}' {
		return nil, fmt.Errorf("%w: content is not an object", ErrBadJSON)
	}
	return msg, nil
}

func orEmptyObject(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	return raw
}

// isObject reports whether b is one valid JSON object. Content is decoded
// later into typed structs; checking validity here keeps a corrupt frame from
// surfacing far from where it arrived.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && json.Valid(b)
}
