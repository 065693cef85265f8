package history

import (
	"strings"
	"testing"
)

func TestPreviewText(t *testing.T) {
	long := strings.Repeat("x", 250)
	for _, c := range []struct{ in, want string }{
		{"a\nb\nc\n", "a\nb\nc"},
		{"a\nb\nc\nd\ne", "a\nb\nc\n[… 2 more lines]"},
		{strings.Repeat("y", 90) + "\n" + strings.Repeat("z", 90) + "\n" + strings.Repeat("w", 90), strings.Repeat("y", 90) + "\n" + strings.Repeat("z", 90) + "\n[… 1 more line]"},
		{long, strings.Repeat("x", 200) + "\n[… 50 more characters]"},
		{long + "\nb", strings.Repeat("x", 200) + "\n[… the rest of the line and 1 more line]"},
	} {
		got, cut := previewText(c.in)
		if got != c.want || cut != (got != strings.TrimRight(c.in, "\n")) {
			t.Errorf("previewText(%q) = %q, %v; want %q", c.in, got, cut, c.want)
		}
	}
}

func TestPreviewKeepsEntries(t *testing.T) {
	in := []Entry{{Code: "1/0", Outputs: []Output{
		{OutputType: "stream", Name: "stdout", Text: "1\n2\n"}, {OutputType: "stream", Name: "stdout", Text: "3\n4\n"},
		{OutputType: "error", EName: "ZeroDivisionError", EValue: "division by zero", Traceback: []string{"Traceback", "ZeroDivisionError: division by zero"}},
	}}}
	out, cut := Preview(in)
	if got, want := Transcript(out, 1), "[1] 1/0\n1\n2\n3\n[… 1 more line]\nZeroDivisionError: division by zero\n"; got != want || !cut {
		t.Errorf("preview transcript %q, %v; want %q", got, cut, want)
	}
	if len(in[0].Outputs) != 3 || in[0].Outputs[0].Text != "1\n2\n" {
		t.Errorf("Preview changed its input: %+v", in[0].Outputs)
	}
}
