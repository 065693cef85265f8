package history

import "testing"

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
	}
	for _, tt := range tests {
		got, cut := CutMiddle(tt.in, tt.limit)
		if got != tt.want || cut != tt.cut {
			t.Errorf("CutMiddle(%q, %d) = %q, %v; want %q, %v", tt.in, tt.limit, got, cut, tt.want, tt.cut)
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
