package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

type vector struct {
	Name      string   `json:"name"`
	KeyHex    string   `json:"key_hex"`
	Frames    []string `json:"frames"`
	Signature string   `json:"signature"`
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	return vs
}

// TestSignMatchesPython checks our signatures against ones computed by
// Python's hmac module (testdata/gen_vectors.py).
func TestSignMatchesPython(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			key, err := hex.DecodeString(v.KeyHex)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSigner("hmac-sha256", key)
			if err != nil {
				t.Fatal(err)
			}
			f := v.Frames
			got := s.Sign([]byte(f[0]), []byte(f[1]), []byte(f[2]), []byte(f[3]))
			if string(got) != v.Signature {
				t.Fatalf("signature = %s, want %s", got, v.Signature)
			}
			frames := [][]byte{[]byte("peer-id"), Delimiter, []byte(v.Signature), []byte(f[0]), []byte(f[1]), []byte(f[2]), []byte(f[3])}
			msg, err := Decode(frames, s)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(msg.Identities) != 1 || string(msg.Identities[0]) != "peer-id" {
				t.Fatalf("identities = %q", msg.Identities)
			}
			// One flipped bit anywhere in the signed frames must be refused.
			for i := 3; i < 7; i++ {
				bad := append([][]byte(nil), frames...)
				bad[i] = append([]byte(nil), frames[i]...)
				bad[i][0] ^= 0x01
				if _, err := Decode(bad, s); !errors.Is(err, ErrBadSignature) {
					t.Fatalf("frame %d flipped: err = %v, want ErrBadSignature", i, err)
				}
			}
		})
	}
}

func TestNewSignerRefusesOtherSchemes(t *testing.T) {
	for _, scheme := range []string{"hmac-md5", "hmac-sha1", "none", "HMAC-SHA256", ""} {
		if _, err := NewSigner(scheme, []byte("key")); err == nil {
			t.Errorf("NewSigner(%q) succeeded", scheme)
		}
	}
	if _, err := NewSigner("", nil); err != nil {
		t.Errorf("empty scheme with empty key (signing off): %v", err)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s, _ := NewSigner("hmac-sha256", []byte("k"))
	msg, err := NewMessage("execute_request", "sess", map[string]any{"code": "1+1"})
	if err != nil {
		t.Fatal(err)
	}
	msg.Identities = [][]byte{[]byte("a"), []byte("b")}
	msg.Buffers = [][]byte{{0, 1, 2}}
	frames, err := Encode(msg, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(frames[5]); got != "{}" {
		t.Fatalf("empty parent_header encodes as %s, want {}", got)
	}
	back, err := Decode(frames, s)
	if err != nil {
		t.Fatal(err)
	}
	if back.Header != msg.Header || back.ParentHeader != (Header{}) {
		t.Fatalf("header %+v / parent %+v", back.Header, back.ParentHeader)
	}
	if string(back.Content) != `{"code":"1+1"}` || len(back.Buffers) != 1 || !bytes.Equal(back.Buffers[0], []byte{0, 1, 2}) {
		t.Fatalf("content %s buffers %v", back.Content, back.Buffers)
	}
	if len(back.Identities) != 2 {
		t.Fatalf("identities %q", back.Identities)
	}
}

func TestDecodeStrict(t *testing.T) {
	s, _ := NewSigner("hmac-sha256", []byte("k"))
	signed := func(h, p, m, c string) [][]byte {
		return [][]byte{Delimiter, s.Sign([]byte(h), []byte(p), []byte(m), []byte(c)), []byte(h), []byte(p), []byte(m), []byte(c)}
	}
	good := `{"msg_id":"1","msg_type":"status"}`
	tests := []struct {
		name   string
		frames [][]byte
		want   error
	}{
		{"no delimiter", [][]byte{[]byte("x"), []byte("{}")}, ErrNoDelimiter},
		{"empty", nil, ErrNoDelimiter},
		{"four frames", signed(good, "{}", "{}", "{}")[:5], ErrShortMessage},
		{"bad hex signature", append([][]byte{Delimiter, []byte("zz")}, signed(good, "{}", "{}", "{}")[2:]...), ErrBadSignature},
		{"empty signature", append([][]byte{Delimiter, {}}, signed(good, "{}", "{}", "{}")[2:]...), ErrBadSignature},
		{"header not JSON", signed(`{"msg_id":`, "{}", "{}", "{}"), ErrBadJSON},
		{"header without msg_type", signed(`{"msg_id":"1"}`, "{}", "{}", "{}"), ErrBadJSON},
		{"parent not JSON", signed(good, "[", "{}", "{}"), ErrBadJSON},
		{"metadata array", signed(good, "{}", "[]", "{}"), ErrBadJSON},
		{"content string", signed(good, "{}", "{}", `"x"`), ErrBadJSON},
		{"content truncated", signed(good, "{}", "{}", `{"a":`), ErrBadJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.frames, s); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := Decode(signed(good, "{}", "{}", "{}"), s); err != nil {
		t.Fatalf("valid message refused: %v", err)
	}
}

// FuzzDecode feeds arbitrary frames to Decode: it must never panic, and what
// it accepts must re-encode to a message it accepts again.
func FuzzDecode(f *testing.F) {
	s, _ := NewSigner("hmac-sha256", []byte("fuzz"))
	for _, v := range []string{`{"msg_id":"1","msg_type":"status"}`, `{}`, `{"msg_type":"x"}`} {
		f.Add([]byte(v), []byte("{}"), []byte("{}"), []byte(`{"execution_state":"idle"}`), true)
	}
	f.Fuzz(func(t *testing.T, h, p, m, c []byte, sign bool) {
		sig := []byte("00")
		if sign {
			sig = s.Sign(h, p, m, c)
		}
		msg, err := Decode([][]byte{[]byte("id"), Delimiter, sig, h, p, m, c}, s)
		if err != nil {
			return
		}
		if !sign {
			t.Fatalf("unsigned message accepted")
		}
		frames, err := Encode(msg, s)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := Decode(frames, s); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	s, _ := NewSigner("hmac-sha256", []byte("0123456789abcdef0123456789abcdef"))
	msg, _ := NewMessage("stream", "s", map[string]string{"name": "stdout", "text": "hello\n"})
	frames, _ := Encode(msg, s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frames, s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHeaderSubshellID: subshell_id is in the header only when set, so the
// main shell's messages are byte for byte what they were.
func TestHeaderSubshellID(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		want string
	}{
		{Header{MsgID: "a", MsgType: "execute_request"}, `{"msg_id":"a","msg_type":"execute_request"}`},
		{Header{MsgID: "a", MsgType: "execute_request", SubshellID: "s1"}, `{"msg_id":"a","msg_type":"execute_request","subshell_id":"s1"}`},
	} {
		b, err := json.Marshal(tc.h)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.h, b, err, tc.want)
		}
		var back Header
		if err := json.Unmarshal(b, &back); err != nil || back != tc.h {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
	}
}
