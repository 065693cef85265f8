package kernel

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeStream is the fast path for the iopub message that carries almost
// all output bytes: stream content, {"name": "stdout", "text": "..."}. A
// general JSON decoder spends most of its time on the escapes every printed
// line has ("\n"); this one copies runs between escapes. It accepts only an
// object whose values are all strings, with valid UTF-8 and well-formed
// escapes; on anything else it returns ok=false and the caller uses the
// general decoder, so its results are those of encoding/json or nothing.
func decodeStream(b []byte) (name, text string, ok bool) {
	b = skipSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return "", "", false
	}
	b = skipSpace(b[1:])
	if len(b) > 0 && b[0] == '}' {
		return "", "", len(skipSpace(b[1:])) == 0
	}
	for {
		if len(b) == 0 || b[0] != '"' {
			return "", "", false
		}
		key, rest, good := unquote(b[1:])
		if !good {
			return "", "", false
		}
		b = skipSpace(rest)
		if len(b) == 0 || b[0] != ':' {
			return "", "", false
		}
		b = skipSpace(b[1:])
		if len(b) == 0 || b[0] != '"' {
			return "", "", false // a non-string value: not a plain stream message
		}
		val, rest, good := unquote(b[1:])
		if !good {
			return "", "", false
		}
		switch key {
		case "name":
			name = val
		case "text":
			text = val
		}
		b = skipSpace(rest)
		if len(b) == 0 {
			return "", "", false
		}
		switch b[0] {
		case ',':
			b = skipSpace(b[1:])
		case '}':
			if len(skipSpace(b[1:])) != 0 {
				return "", "", false
			}
			return name, text, true
		default:
			return "", "", false
		}
	}
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// unquote decodes a JSON string whose opening quote was consumed, returning
// it and what follows the closing quote. Text with escapes is written into
// a strings.Builder grown once to the most it can need: its buffer is not
// zeroed first and becomes the string without a copy, which matters for
// the megabytes a stream message can carry.
func unquote(b []byte) (s string, rest []byte, ok bool) {
	var (
		out     strings.Builder
		escaped bool
		ascii   = true // everything written so far; escapes write ASCII or valid UTF-8
	)
	for {
		i, runASCII := plainRun(b)
		if i == len(b) || b[i] < 0x20 {
			return "", nil, false // unterminated, or a raw control character
		}
		ascii = ascii && runASCII
		if b[i] == '"' && !escaped {
			// No escapes at all: the common case for keys.
			if !ascii && !utf8.Valid(b[:i]) {
				return "", nil, false
			}
			return string(b[:i]), b[i+1:], true
		}
		if !escaped {
			out.Grow(i + len(b[i:]))
			escaped = true
		}
		out.Write(b[:i])
		if b[i] == '"' {
			s = out.String()
			if !ascii && !utf8.ValidString(s) {
				return "", nil, false
			}
			return s, b[i+1:], true
		}
		if i+1 >= len(b) {
			return "", nil, false
		}
		switch c := b[i+1]; c {
		case '"', '\\', '/':
			out.WriteByte(c)
		case 'n':
			out.WriteByte('\n')
		case 't':
			out.WriteByte('\t')
		case 'r':
			out.WriteByte('\r')
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'u':
			r, n := unicodeEscape(b[i:])
			if n == 0 {
				return "", nil, false
			}
			out.WriteRune(r)
			b = b[i+n:]
			continue
		default:
			return "", nil, false
		}
		b = b[i+2:]
	}
}

// unicodeEscape decodes \uXXXX, or a surrogate pair \uXXXX\uXXXX, at the
// start of b. n is the bytes consumed, 0 when malformed or a lone surrogate
// (which the general decoder handles its own way).
func unicodeEscape(b []byte) (r rune, n int) {
	r1, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6
	}
	if len(b) < 12 || !bytes.HasPrefix(b[6:], []byte(`\u`)) {
		return 0, 0
	}
	r2, ok := hex4(b[6:])
	if !ok {
		return 0, 0
	}
	r = utf16.DecodeRune(r1, r2)
	if r == utf8.RuneError {
		return 0, 0
	}
	return r, 12
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// plainRun returns the length of the run at the start of b that needs no
// decoding: no quote, no backslash, no control character; ascii reports
// that the run is all ASCII, so that it needs no UTF-8 validation either.
// Output text has an escape about once a line, so the run is found with
// IndexByte (which is vectorized) and then checked eight bytes at a time.
func plainRun(b []byte) (n int, ascii bool) {
	// The backslash first: it is near (one a line), while the closing
	// quote may be the whole string away, and looking for it at every
	// escape would make decoding quadratic.
	end := len(b)
	if e := bytes.IndexByte(b, '\\'); e >= 0 {
		end = e
	}
	if q := bytes.IndexByte(b[:end], '"'); q >= 0 {
		end = q
	}
	var high uint64 // the OR of the words checked: its high bits say non-ASCII
	i := 0
	for ; i+8 <= end; i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// Set the high bit of each byte below 0x20 (has-less-than trick);
		// bytes of 0x80 and above are masked out by &^w.
		if (w-0x2020202020202020)&^w&0x8080808080808080 != 0 {
			break
		}
		high |= w
	}
	ascii = high&0x8080808080808080 == 0
	for ; i < end; i++ {
		if b[i] < 0x20 {
			return i, ascii
		}
		if b[i] >= 0x80 {
			ascii = false
		}
	}
	return end, ascii
}
