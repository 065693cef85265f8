package history

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestCapCutsTextInTheMiddle(t *testing.T) {
	long := strings.Repeat("a", 60) + strings.Repeat("b", 40)
	e := Entry{Code: "print(x)", Outputs: []Output{
		{OutputType: "stream", Name: "stdout", Text: long},
		{OutputType: "execute_result", Data: map[string]json.RawMessage{"text/plain": jsonString(long)}},
	}}
	got := Cap(e, 20, 0)
	if !got.Truncated {
		t.Error("Truncated not set")
	}
	want := strings.Repeat("a", 10) + "\n... [80 characters omitted] ...\n" + strings.Repeat("b", 10)
	if got.Outputs[0].Text != want {
		t.Errorf("stream text = %q, want %q", got.Outputs[0].Text, want)
	}
	if s, _ := mimeString(got.Outputs[1].Data, "text/plain"); s != want {
		t.Errorf("text/plain = %q, want %q", s, want)
	}
	if e.Outputs[0].Text != long || string(e.Outputs[1].Data["text/plain"]) != string(jsonString(long)) {
		t.Error("Cap modified its argument")
	}
}

func TestCapCountsCharactersNotBytes(t *testing.T) {
	s := strings.Repeat("é", 10)
	if got, cut := CutMiddle(s, 10); cut || got != s {
		t.Errorf("CutMiddle(10 × é, 10) = %q, %v; want it untouched", got, cut)
	}
	got, _ := CutMiddle(strings.Repeat("é", 12), 10)
	if want := "ééééé\n... [2 characters omitted] ...\nééééé"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCapReplacesBigImage(t *testing.T) {
	img := jsonString(strings.Repeat("A", 3_250_000))
	e := Entry{Outputs: []Output{{
		OutputType: "display_data",
		Data: map[string]json.RawMessage{
			"image/png":  img,
			"text/plain": jsonString("<Figure size 640x480 with 1 Axes>"),
		},
		Metadata: map[string]json.RawMessage{"image/png": json.RawMessage(`{"width":640}`)},
	}}}
	got := Cap(e, 0, 1<<20)
	if !got.Truncated {
		t.Error("Truncated not set")
	}
	o := got.Outputs[0]
	if _, ok := o.Data["image/png"]; ok {
		t.Error("image/png kept")
	}
	if _, ok := o.Metadata["image/png"]; ok {
		t.Error("image/png metadata kept")
	}
	plain, _ := mimeString(o.Data, "text/plain")
	if want := "<Figure size 640x480 with 1 Axes>\n[image/png, 3.1 MB, not kept in history]"; plain != want {
		t.Errorf("text/plain = %q, want %q", plain, want)
	}
	if _, ok := e.Outputs[0].Data["image/png"]; !ok {
		t.Error("Cap modified its argument")
	}
}

func TestCapTraceback(t *testing.T) {
	tb := []string{"-----", "RecursionError   Traceback (most recent call last)"}
	for i := 0; i < 1000; i++ {
		tb = append(tb, "Cell In[1], line 2, in f()\n----> 2     return f()\n")
	}
	tb = append(tb, "RecursionError: maximum recursion depth exceeded")
	got := Cap(Entry{Outputs: []Output{{OutputType: "error", EName: "RecursionError", Traceback: tb}}}, 500, 0)
	if !got.Truncated {
		t.Fatal("Truncated not set")
	}
	out := got.Outputs[0].Traceback
	total := 0
	note := false
	for _, f := range out {
		if strings.HasPrefix(f, "... [") && strings.HasSuffix(f, " characters omitted] ...") {
			note = true
			continue
		}
		total += len(f)
	}
	if !note || total > 500 {
		t.Errorf("capped traceback: %d characters kept, note %v", total, note)
	}
	if out[0] != tb[0] || out[len(out)-1] != tb[len(tb)-1] {
		t.Errorf("first or last frame lost: %q … %q", out[0], out[len(out)-1])
	}
}

func TestCapLeavesSmallEntriesAlone(t *testing.T) {
	e := goldenEntries()
	for i := range e {
		got := Cap(e[i], 10_000, 10_000)
		if !reflect.DeepEqual(got, e[i]) {
			t.Errorf("entry %d changed:\n got %+v\nwant %+v", i, got, e[i])
		}
	}
	if got := Cap(e[0], 0, 0); !reflect.DeepEqual(got, e[0]) {
		t.Error("no limits changed the entry")
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int]string{12: "12 bytes", 2048: "2.0 KB", 3_250_000: "3.1 MB", 5 << 30: "5.0 GB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
