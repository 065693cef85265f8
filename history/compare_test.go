package history

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func img(b []byte, wrap bool) json.RawMessage {
	s := base64.StdEncoding.EncodeToString(b)
	if wrap {
		s = s[:4] + "\n" + s[4:] + "\n"
	}
	v, _ := json.Marshal(s)
	return v
}

func TestSameOutputs(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nsome image bytes")
	plain := func(s string) map[string]json.RawMessage {
		v, _ := json.Marshal(s)
		return map[string]json.RawMessage{"text/plain": v}
	}
	base := []Output{
		{OutputType: "stream", Name: "stdout", Text: "a\nb\n"},
		{OutputType: "execute_result", ExecutionCount: 3, Data: plain("<Foo at 0x7f3a12345678>")},
		{OutputType: "display_data", Data: map[string]json.RawMessage{"image/png": img(png, false)}},
	}
	for _, c := range []struct {
		name string
		outs []Output
		diff string
	}{
		{"streams cut elsewhere, another count, address and base64 wrapping", []Output{
			{OutputType: "stream", Name: "stdout", Text: "a\n"},
			{OutputType: "stream", Name: "stdout", Text: "b\n"},
			{OutputType: "execute_result", ExecutionCount: 9, Data: plain("<Foo at 0x7f00deadbeef>")},
			{OutputType: "display_data", Data: map[string]json.RawMessage{"image/png": img(png, true)}, Metadata: map[string]json.RawMessage{"w": json.RawMessage("3")}},
		}, ""},
		{"other stdout", []Output{
			{OutputType: "stream", Name: "stdout", Text: "a\nc\n"},
			base[1], base[2],
		}, "stdout"},
		{"another image", []Output{
			base[0], base[1],
			{OutputType: "display_data", Data: map[string]json.RawMessage{"image/png": img(append(png, 'x'), false)}},
		}, "image/png"},
		{"an error instead", []Output{
			base[0], base[1],
			{OutputType: "error", EName: "ValueError", EValue: "no"},
		}, "the kinds of outputs"},
		{"one output fewer", base[:2], "the number of outputs"},
	} {
		if got := DiffOutputs(base, c.outs); got != c.diff {
			t.Errorf("%s: DiffOutputs = %q, want %q", c.name, got, c.diff)
		}
		if SameOutputs(base, c.outs) != (c.diff == "") {
			t.Errorf("%s: SameOutputs disagrees with DiffOutputs", c.name)
		}
	}
}

func TestNormalise(t *testing.T) {
	in := "File /tmp/ipykernel_4242/123.py in /work/x: <obj at 0xdeadbeef12>\nWall time: 1.2 ms\n"
	want := "File /tmp/ipykernel_<pid>/123.py in <cwd>: <obj at 0x<address>>\nWall time: <time>\n"
	if got := Normalise(in, "/work/x"); got != want {
		t.Errorf("Normalise = %q, want %q", got, want)
	}
	// IPython's %g: a time of exactly 1000 µs is "1e+03 µs".
	if got, want := Normalise("CPU times: user 2 ms, sys: 1e+03 µs, total: 3 ms\n", ""), "CPU times: user <time>, sys: <time>, total: <time>\n"; got != want {
		t.Errorf("Normalise = %q, want %q", got, want)
	}
	if got := Normalise("abc", ""); got != "abc" {
		t.Errorf("Normalise without a cwd = %q", got)
	}
	if !strings.Contains(Normalise(in, ""), "/work/x") {
		t.Error("an empty cwd replaced something")
	}
}
