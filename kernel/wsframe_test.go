package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

func frameTestMessage(buffers ...[]byte) *wire.Message {
	return &wire.Message{
		Header:   wire.Header{MsgID: "m"},
		Metadata: json.RawMessage(`{}`),
		Content:  json.RawMessage(`{"a":1}`),
		Buffers:  buffers,
	}
}

// TestWSv1Frame checks the v1 subprotocol's layout byte for byte, as
// jupyter_server's serialize_msg_to_ws_v1 writes it: count, offsets (where
// each part starts, then where the last ends), channel, the four JSON
// parts, buffers.
func TestWSv1Frame(t *testing.T) {
	want := []byte("" +
		"\x07\x00\x00\x00\x00\x00\x00\x00" + // 7 offsets
		"\x40\x00\x00\x00\x00\x00\x00\x00" + // channel at 64
		"\x45\x00\x00\x00\x00\x00\x00\x00" + // header at 69
		"\x53\x00\x00\x00\x00\x00\x00\x00" + // parent_header at 83
		"\x55\x00\x00\x00\x00\x00\x00\x00" + // metadata at 85
		"\x57\x00\x00\x00\x00\x00\x00\x00" + // content at 87
		"\x5e\x00\x00\x00\x00\x00\x00\x00" + // buffer at 94
		"\x61\x00\x00\x00\x00\x00\x00\x00" + // end at 97
		`shell{"msg_id":"m"}{}{}{"a":1}BUF`)
	got, err := encodeWSv1(Shell, frameTestMessage([]byte("BUF")))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encode:\n got %q\nwant %q", got, want)
	}
	ch, msg, err := decodeWSv1(want)
	if err != nil {
		t.Fatal(err)
	}
	if ch != Shell || msg.Header.MsgID != "m" || string(msg.Content) != `{"a":1}` || len(msg.Buffers) != 1 || string(msg.Buffers[0]) != "BUF" {
		t.Fatalf("decode: channel %v, message %+v", ch, msg)
	}
	// Without buffers there is one offset fewer.
	got, _ = encodeWSv1(IOPub, frameTestMessage())
	if ch, msg, err := decodeWSv1(got); err != nil || ch != IOPub || msg.Buffers != nil {
		t.Fatalf("round trip without buffers: %v %v %+v", err, ch, msg)
	}
}

// TestWSLegacyFrame checks the legacy framing: plain JSON text with a
// channel field, or, with buffers, jupyter_server's serialize_binary_message
// layout (big-endian count and start offsets, JSON, buffers).
func TestWSLegacyFrame(t *testing.T) {
	js := `{"channel":"control","header":{"msg_id":"m"},"parent_header":{},"metadata":{},"content":{"a":1},"buffers":[]}`
	got, bin, err := encodeWSLegacy(Control, frameTestMessage())
	if err != nil || bin || string(got) != js {
		t.Fatalf("text frame: %v binary=%v\n got %s\nwant %s", err, bin, got, js)
	}
	want := append([]byte("\x00\x00\x00\x02"+"\x00\x00\x00\x0c"+"\x00\x00\x00\x79"), js+"BUF"...)
	got, bin, err = encodeWSLegacy(Control, frameTestMessage([]byte("BUF")))
	if err != nil || !bin || !bytes.Equal(got, want) {
		t.Fatalf("binary frame: %v binary=%v\n got %q\nwant %q", err, bin, got, want)
	}
	for _, tc := range []struct {
		frame []byte
		bin   bool
		bufs  int
	}{{[]byte(js), false, 0}, {want, true, 1}} {
		ch, msg, err := decodeWSLegacy(tc.frame, tc.bin)
		if err != nil || ch != Control || msg.Header.MsgID != "m" || string(msg.Content) != `{"a":1}` || len(msg.Buffers) != tc.bufs {
			t.Fatalf("decode binary=%v: %v %v %+v", tc.bin, err, ch, msg)
		}
	}
}

// TestWSFrameRejects makes sure corrupt frames are errors, not panics.
func TestWSFrameRejects(t *testing.T) {
	good, _ := encodeWSv1(Shell, frameTestMessage())
	bad := map[string][]byte{
		"empty":           nil,
		"short":           good[:7],
		"too many counts": append([]byte("\xff\x00\x00\x00\x00\x00\x00\x00"), good[8:]...),
		"offset past end": append(append([]byte{}, good[:8]...), append([]byte("\xff\xff\x00\x00\x00\x00\x00\x00"), good[16:]...)...),
		"truncated":       good[:len(good)-3],
	}
	unknown := append([]byte{}, good...)
	copy(unknown[56:], "xhell") // the channel
	bad["unknown channel"] = unknown
	for name, f := range bad {
		if _, _, err := decodeWSv1(f); !errors.Is(err, errBadFrame) {
			t.Errorf("v1 %s: err = %v, want errBadFrame", name, err)
		}
	}
	for name, f := range map[string][]byte{"empty": nil, "zero count": []byte("\x00\x00\x00\x00"), "offset past end": []byte("\x00\x00\x00\x01\x00\x00\x01\x00{}")} {
		if _, _, err := decodeWSLegacy(f, true); !errors.Is(err, errBadFrame) {
			t.Errorf("legacy %s: err = %v, want errBadFrame", name, err)
		}
	}
	if _, _, err := decodeWSLegacy([]byte(`{"channel":"hb"}`), false); !errors.Is(err, errBadFrame) {
		t.Errorf("legacy unknown channel: err = %v", err)
	}
}
