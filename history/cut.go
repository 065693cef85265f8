package history

import (
	"strings"
	"unicode/utf8"
)

// CutAcross is CutMiddle for parts taken as one text, within limit
// characters: the head and the tail of the whole are kept, and the note of
// how much was left out goes where the cut begins. Parts wholly inside the
// cut become empty (or hold just the note).
func CutAcross(parts []string, limit int) ([]string, bool) {
	if limit <= 0 {
		return parts, false
	}
	counts := make([]int, len(parts))
	n := 0
	for i, p := range parts {
		counts[i] = utf8.RuneCountInString(p)
		n += counts[i]
	}
	if n <= limit {
		return parts, false
	}
	head := limit / 2
	tailFrom := n - (limit - head)
	out := make([]string, len(parts))
	o := 0
	for i, p := range parts {
		l := counts[i]
		keepHead := min(max(head-o, 0), l)
		keepTailFrom := min(max(tailFrom-o, 0), l)
		var b strings.Builder
		b.WriteString(runePrefix(p, keepHead))
		if o <= head && head < o+l {
			b.WriteString(omittedNote(n - limit))
		}
		b.WriteString(runeSuffix(p, l-keepTailFrom))
		out[i] = b.String()
		o += l
	}
	return out, true
}

// runePrefix is the first n runes of s.
func runePrefix(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// runeSuffix is the last n runes of s.
func runeSuffix(s string, n int) string {
	j := len(s)
	for ; n > 0 && j > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
	}
	return s[j:]
}
