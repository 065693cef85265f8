package history

import (
	"slices"
	"testing"
)

// CutAcross keeps the head and tail of several parts taken as one text,
// with the note where the cut begins, and the whole within the limit.
func TestCutAcross(t *testing.T) {
	note := func(n int) string { return omittedNote(n) }
	for _, tc := range []struct {
		parts []string
		limit int
		want  []string
	}{
		{[]string{"abc", "def"}, 6, []string{"abc", "def"}},
		{[]string{"abc", "def"}, 0, []string{"abc", "def"}},
		{[]string{"abcdef"}, 4, []string{"ab" + note(2) + "ef"}},
		{[]string{"aaaa", "bbbb", "cccc", "dddd"}, 4, []string{"aa" + note(12), "", "", "dd"}},
		{[]string{"aa", "bbbb", "cc"}, 4, []string{"aa", note(4), "cc"}},
		{[]string{"aaa", "bbbbb"}, 4, []string{"aa" + note(4), "bb"}},
		{[]string{"ééé", "ßßß"}, 2, []string{"é" + note(4), "ß"}},
	} {
		got, cut := CutAcross(tc.parts, tc.limit)
		if !slices.Equal(got, tc.want) {
			t.Errorf("CutAcross(%q, %d) = %q, want %q", tc.parts, tc.limit, got, tc.want)
		}
		if cut != !slices.Equal(tc.parts, tc.want) {
			t.Errorf("CutAcross(%q, %d): cut %v", tc.parts, tc.limit, cut)
		}
	}
}
