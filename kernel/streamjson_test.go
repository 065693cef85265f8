package kernel

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeStream(t *testing.T) {
	tests := []struct {
		in         string
		name, text string
		ok         bool
	}{
		{`{"name": "stdout", "text": "hi\n"}`, "stdout", "hi\n", true},
		{`{"text":"a\tb\u00e9\ud83d\ude00\"\\\/","name":"stderr"}`, "stderr", "a\tbé😀\"\\/", true},
		{` { "name" : "stdout" , "text" : "" } `, "stdout", "", true},
		{`{}`, "", "", true},
		{`{"name": "stdout", "text": "x", "extra": 1}`, "", "", false},
		{`{"name": "stdout", "text": "raw` + "\n" + `newline"}`, "", "", false},
		{`{"name": "stdout", "text": "lone \ud83d"}`, "", "", false},
		{`{"name": "stdout", "text": "bad \x"}`, "", "", false},
		{`{"name": "stdout", "text": "unterminated}`, "", "", false},
		{`{"name": "stdout" "text": "x"}`, "", "", false},
		{`{"name": "stdout"} trailing`, "", "", false},
		{"{\"text\": \"\xff\"}", "", "", false},
	}
	for _, tt := range tests {
		name, text, ok := decodeStream([]byte(tt.in))
		if ok != tt.ok || name != tt.name || text != tt.text {
			t.Errorf("decodeStream(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, text, ok, tt.name, tt.text, tt.ok)
		}
	}
}

// FuzzDecodeStream checks the fast path against encoding/json: whatever it
// accepts, encoding/json accepts with the same values.
func FuzzDecodeStream(f *testing.F) {
	for _, s := range []string{`{"name": "stdout", "text": "hi\n"}`, `{"text":"\u00e9\ud83d\ude00"}`, `{}`, `{"a":"b","name":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		name, text, ok := decodeStream(b)
		if !ok {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
		}
		for k, v := range m {
			if _, isString := v.(string); !isString {
				t.Fatalf("fast path accepted non-string value %q in %q", k, b)
			}
		}
		if n, _ := m["name"].(string); n != name {
			t.Fatalf("name %q, encoding/json %q", name, n)
		}
		if tx, _ := m["text"].(string); tx != text {
			t.Fatalf("text %q, encoding/json %q", text, tx)
		}
	})
}

// A raw control character anywhere in a long run is refused, whichever
// eight-byte word it falls in; bytes of 0x80 and above are not mistaken for
// one.
func TestPlainRunControlCharacters(t *testing.T) {
	base := []byte(`{"text": "` + strings.Repeat("é", 12) + strings.Repeat("x", 20) + `"}`)
	if _, text, ok := decodeStream(base); !ok || text != strings.Repeat("é", 12)+strings.Repeat("x", 20) {
		t.Fatalf("plain text refused: %q %v", text, ok)
	}
	start := len(`{"text": "`)
	for i := start; i < len(base)-2; i++ {
		for _, c := range []byte{0x00, 0x01, 0x1f} {
			b := append([]byte(nil), base...)
			b[i] = c
			if _, _, ok := decodeStream(b); ok {
				t.Fatalf("control byte %#x at %d accepted", c, i)
			}
		}
	}
}

// BenchmarkDecodeStream10MB decodes the content of one 10 MiB stream
// message as ipykernel sends it for the 10 MB workload (1 KiB lines).
func BenchmarkDecodeStream10MB(b *testing.B) {
	line := strings.Repeat("x", 1023) + "\n"
	text := strings.Repeat(line, 10240)
	content, err := json.Marshal(map[string]string{"name": "stdout", "text": text})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, got, ok := decodeStream(content); !ok || len(got) != len(text) {
			b.Fatal("decode failed")
		}
	}
}

// Invalid UTF-8 is refused wherever it falls: in an eight-byte word that
// the ASCII check skips validation for, or in the bytes after the words.
func TestDecodeStreamInvalidUTF8Anywhere(t *testing.T) {
	body := strings.Repeat("abcdefgh", 3) + `\n` + strings.Repeat("x", 13)
	for i := range body {
		if body[i] == '\\' || body[i] == 'n' && i > 0 && body[i-1] == '\\' {
			continue
		}
		b := []byte(`{"text": "` + body[:i] + "\xff" + body[i+1:] + `"}`)
		if _, _, ok := decodeStream(b); ok {
			t.Fatalf("invalid byte at %d accepted: %q", i, b)
		}
	}
}
