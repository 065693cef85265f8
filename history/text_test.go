package history

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutMiddle(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"short", 10, "short", false},
		{"exactly10!", 10, "exactly10!", false},
		{"0123456789abcdef", 10, "01234\n... [6 characters omitted] ...\nbcdef", true},
		{"ééééééééééxx", 4, "éé\n... [8 characters omitted] ...\nxx", true},
		{"anything", 0, "anything", false},
		{"xxéééééé", 4, "xx\n... [4 characters omitted] ...\néé", true},
		{"🙂🙂🙂ab🙂🙂🙂", 4, "🙂🙂\n... [4 characters omitted] ...\n🙂🙂", true},
	}
	for _, tt := range tests {
		got, cut := CutMiddle(tt.in, tt.limit)
		if got != tt.want || cut != tt.cut {
			t.Errorf("CutMiddle(%q, %d) = %q, %v; want %q, %v", tt.in, tt.limit, got, cut, tt.want, tt.cut)
		}
	}
}

// TestCutMiddleMatchesRunes checks the byte-walking CutMiddle against the
// obvious version on []rune, over strings mixing 1- to 4-byte characters.
func TestCutMiddleMatchesRunes(t *testing.T) {
	chars := []rune{'a', 'é', '€', '🙂', '\n'}
	for n := 0; n < 40; n++ {
		r := make([]rune, n)
		for i := range r {
			r[i] = chars[(i*7+n)%len(chars)]
		}
		s := string(r)
		for limit := 1; limit <= n+1; limit++ {
			want, wantCut := s, false
			if n > limit {
				h := limit / 2
				want, wantCut = string(r[:h])+omittedNote(n-limit)+string(r[n-(limit-h):]), true
			}
			if got, cut := CutMiddle(s, limit); got != want || cut != wantCut {
				t.Fatalf("CutMiddle(%q, %d) = %q, %v; want %q, %v", s, limit, got, cut, want, wantCut)
			}
		}
	}
}

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b[0;31mred\x1b[0m plain", "red plain"},
		{"10%\r50%\r100%\ndone\n", "100%\ndone\n"},
		{"a\r\nb\r\n", "a\nb\n"},
		{"frame 1\rframe 2\r", "frame 2"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"\x1b]0;title\x07text", "text"},
	}
	for _, tt := range tests {
		if got := PlainText(tt.in); got != tt.want {
			t.Errorf("PlainText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// runeCount counts as utf8.RuneCountInString does, invalid UTF-8 included.
func FuzzRuneCount(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld, 12345678", "\xff\xfe abcdefgh \xe2\x82", strings.Repeat("日本", 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
	})
}
