package toolresult

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// render shows every error output in arrival order, leads with the reply's
// error, says when an ok cell showed tracebacks, shows an error the reply
// alone reported, and leaves out the server's own KeyboardInterrupt.
func TestRenderErrors(t *testing.T) {
	zde := kernel.Output{Type: kernel.OutputError, EName: "ZeroDivisionError", EValue: "division by zero", Traceback: []string{"Cell In[1], line 2", "ZeroDivisionError: division by zero"}}
	stdout := kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: "after\n"}
	texts := func(cs []Part) []string {
		var s []string
		for _, c := range cs {
			if !c.isText() {
				t.Fatalf("%+v is not text", c)
			}
			s = append(s, c.Text)
		}
		return s
	}

	out := RunOutput{Status: "ok"}
	got := texts(render(&kernel.ExecuteResult{Status: "ok", Outputs: []kernel.Output{zde, stdout}}, &out, 1000))
	want := []string{"The cell ran to the end (status ok) but showed a traceback: ZeroDivisionError on line 2: division by zero", "Cell In[1], line 2\nZeroDivisionError: division by zero\nafter"}
	if !slices.Equal(got, want) || out.Error != nil || len(out.Errors) != 1 || out.Errors[0].Line != 2 {
		t.Errorf("ok with a traceback:\n got %q\nwant %q\n%+v", got, want, out)
	}

	out = RunOutput{Status: "error"}
	died := &kernel.ExecError{EName: "KernelDied", EValue: "kernel died (signal 9)"}
	got = texts(render(&kernel.ExecuteResult{Outputs: []kernel.Output{stdout}, Error: died}, &out, 1000))
	want = []string{"KernelDied: kernel died (signal 9)", "after"}
	if !slices.Equal(got, want) || out.Error == nil || len(out.Errors) != 0 {
		t.Errorf("reply-only error:\n got %q\nwant %q", got, want)
	}

	out = RunOutput{Status: "timeout", Note: "Execution timed out."}
	ki := kernel.Output{Type: kernel.OutputError, EName: "KeyboardInterrupt", Traceback: []string{"KeyboardInterrupt"}}
	got = texts(render(&kernel.ExecuteResult{Outputs: []kernel.Output{stdout, ki}}, &out, 1000))
	want = []string{"Execution timed out.", "after"}
	if !slices.Equal(got, want) || len(out.Errors) != 0 {
		t.Errorf("timeout:\n got %q\nwant %q", got, want)
	}
}

// The structured content holds each thing once: a failed cell's traceback
// in error alone, several tracebacks in errors alone, an ok cell's shown
// traceback in errors, and the last re-run block without the result and
// traceback the top level gives.
func TestRunOutputOnce(t *testing.T) {
	zde := ErrorInfo{EName: "ZeroDivisionError", EValue: "division by zero", Line: 2, Traceback: "ZDE traceback"}
	val := ErrorInfo{EName: "ValueError", EValue: "second", Line: 6, Traceback: "VE traceback"}
	wire := func(o RunOutput) map[string]any {
		t.Helper()
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, tb := range []string{"ZDE traceback", "VE traceback", "the kernel stopped"} {
			if n := strings.Count(string(b), tb); n > 1 {
				t.Errorf("%q %d times in %s", tb, n, b)
			}
		}
		return m
	}

	m := wire(RunOutput{Status: "error", Error: &zde, Errors: []ErrorInfo{zde}})
	if _, ok := m["errors"]; ok || m["error"].(map[string]any)["traceback"] != "ZDE traceback" {
		t.Errorf("one error: %v", m)
	}

	m = wire(RunOutput{Status: "error", Error: &val, Errors: []ErrorInfo{zde, val}})
	errs, _ := m["errors"].([]any)
	if len(errs) != 2 || errs[1].(map[string]any)["traceback"] != "VE traceback" {
		t.Errorf("two errors: %v", m)
	}
	if e := m["error"].(map[string]any); e["ename"] != "ValueError" || e["line"] != 6.0 || e["traceback"] != nil {
		t.Errorf("two errors, the reply's: %v", e)
	}

	m = wire(RunOutput{Status: "ok", Errors: []ErrorInfo{zde}})
	if errs, _ := m["errors"].([]any); len(errs) != 1 || m["error"] != nil {
		t.Errorf("ok with a traceback: %v", m)
	}

	died := ErrorInfo{EName: "KernelDied", EValue: "kernel died", Traceback: "the kernel stopped"}
	m = wire(RunOutput{Status: "error", Error: &died})
	if m["error"].(map[string]any)["traceback"] != "the kernel stopped" {
		t.Errorf("reply-only error: %v", m)
	}

	m = wire(RunOutput{Status: "error", Result: "", Error: &zde, Errors: []ErrorInfo{zde},
		Blocks: []BlockSummary{{Block: 1, Status: "ok", Result: "41"}, {Block: 2, Status: "error", Error: &zde}}})
	blocks := m["blocks"].([]any)
	if b := blocks[0].(map[string]any); b["result"] != "41" {
		t.Errorf("first block: %v", b)
	}
	if b := blocks[1].(map[string]any); b["error"].(map[string]any)["ename"] != "ZeroDivisionError" || b["error"].(map[string]any)["traceback"] != nil {
		t.Errorf("last block: %v", b)
	}
	if m["error"].(map[string]any)["traceback"] != "ZDE traceback" {
		t.Errorf("the top level keeps the traceback: %v", m)
	}

	// The Go value is left whole for the code that reads it.
	o := RunOutput{Status: "error", Error: &zde, Errors: []ErrorInfo{zde}}
	wire(o)
	if len(o.Errors) != 1 || o.Error.Traceback == "" {
		t.Errorf("MarshalJSON changed its receiver: %+v", o)
	}
}

// render gives a rich output's text from outputtext (Markdown's source, the
// text of HTML whose text/plain is a bare repr) with ANSI codes stripped,
// says in the structured content where the text came from, and keeps a
// real text/plain as the kernel sent it.
func TestRenderRichText(t *testing.T) {
	data := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			b, _ := json.Marshal(kv[i+1])
			m[kv[i]] = b
		}
		return m
	}
	res := &kernel.ExecuteResult{Status: "ok", Outputs: []kernel.Output{
		{Type: kernel.OutputDisplayData, Data: data("text/plain", "<IPython.core.display.Markdown object>", "text/markdown", "# Title\n\x1b[1m*x*\x1b[0m")},
		{Type: kernel.OutputDisplayData, Data: data("text/plain", "3.5")},
		{Type: kernel.OutputExecuteResult, Data: data("text/plain", "<pandas.io.formats.style.Styler at 0x7feb1c2d3e40>", "text/html", "<style>td{}</style><table><tr><th></th><th>a</th></tr><tr><th>0</th><td>1</td></tr></table>")},
	}}
	out := RunOutput{Status: "ok"}
	content := render(res, &out, 1000)
	const wantText = "# Title\n*x*\n3.5\n   a\n0  1"
	if len(content) != 1 || !content[0].isText() || content[0].Text != wantText {
		t.Errorf("text content %q, want %q", content[0].Text, wantText)
	}
	want := []Display{
		{MimeTypes: []string{"text/markdown", "text/plain"}, Text: "# Title\n*x*", TextFrom: "text/markdown"},
		{MimeTypes: []string{"text/plain"}, Text: "3.5"},
	}
	if !reflect.DeepEqual(out.Displays, want) || out.Result != "   a\n0  1" || out.ResultFrom != "text/html" {
		t.Errorf("structured content:\n got %+v result %q from %q\nwant %+v", out.Displays, out.Result, out.ResultFrom, want)
	}
}

// Text made from a type other than text/plain stays next to the image of
// the same output (sympy's LaTeX beside its PNG, before it); a figure's
// text/plain repr does not.
func TestRenderTextBesideImage(t *testing.T) {
	data := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			b, _ := json.Marshal(kv[i+1])
			m[kv[i]] = b
		}
		return m
	}
	const png = "iVBORw0KGgo=" // the PNG signature: any bytes do here
	res := &kernel.ExecuteResult{Status: "ok", Outputs: []kernel.Output{
		{Type: kernel.OutputDisplayData, Data: data("text/plain", "<Figure size 640x480 with 1 Axes>", "image/png", png)},
		{Type: kernel.OutputExecuteResult, Data: data("text/plain", " 2\nx ", "text/latex", `$\displaystyle x^{2}$`, "image/png", png)},
	}}
	out := RunOutput{Status: "ok"}
	content := render(res, &out, 1000)
	var kinds []string
	for _, c := range content {
		switch {
		case c.Image != nil:
			kinds = append(kinds, "image:"+c.Image.MIME)
		case c.isText():
			kinds = append(kinds, "text:"+c.Text)
		}
	}
	want := []string{"image:image/png", `text:$\displaystyle x^{2}$` + "\n", "image:image/png"}
	if !slices.Equal(kinds, want) {
		t.Errorf("content %q, want %q", kinds, want)
	}
	if out.Result != `$\displaystyle x^{2}$` || out.ResultFrom != "text/latex" || out.Displays[0].Text != "<Figure size 640x480 with 1 Axes>" {
		t.Errorf("structured: result %q from %q, displays %+v", out.Result, out.ResultFrom, out.Displays)
	}
}

// rerun_code counts the code blocks it ran, never the text cells a
// notebook left in the history.
func TestReplayHeadlineCountsCodeBlocks(t *testing.T) {
	md := history.Entry{Code: "# Title", CellType: "markdown"}
	code := history.Entry{Code: "x = 1"}
	// [1] md, [2] code, [3] code, [4] md, [5] code, [6] md, [7] code
	entries := []history.Entry{md, code, code, md, code, md, code}
	ok := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "ok"}, {Block: 7, Status: "ok"}}
	if got, want := replayHeadline(entries, 1, ok), "Re-ran 4 block(s) ([1] to [7]); all succeeded. 3 text cell(s) among them were skipped."; got != want {
		t.Errorf("all ran: %q, want %q", got, want)
	}
	failed := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "error", Error: &ErrorInfo{EName: "NameError", EValue: "name 'x' is not defined"}}}
	if got := replayHeadline(entries, 1, failed); !strings.HasPrefix(got, "Stopped at block [5]: NameError") || !strings.HasSuffix(got, " 3 of 4 blocks ran.") {
		t.Errorf("stopped: %q, want block [5] and 3 of 4 blocks ran", got)
	}
	timedOut := []BlockSummary{{Block: 2, Status: "timeout"}}
	if got, want := replayHeadline(entries, 1, timedOut), "Stopped at block [2] (timeout); 1 of 4 blocks ran."; got != want {
		t.Errorf("timeout: %q, want %q", got, want)
	}
	if got := replayHeadline([]history.Entry{md}, 3, nil); got != "No code blocks in [3] to [3]; nothing ran. 1 text cell(s) among them were skipped." {
		t.Errorf("text only: %q", got)
	}
}

// rerun_code's headline counts code blocks only, names the blocks whose
// outputs differ, and says that the blocks after a failure did not run.
func TestRerunHeadline(t *testing.T) {
	md := history.Entry{Code: "# Title", CellType: "markdown"}
	code := history.Entry{Code: "x = 1"}
	entries := []history.Entry{md, code, code, md, code}
	ok := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "ok"}}
	if got, want := rerunHeadline(entries, 1, ok, []string{"[3]"}), "Re-ran 3 block(s) ([1] to [5]) in a fresh kernel, in place: 3 of 3 ran; outputs differ in [3]. 2 text cell(s) among them were skipped."; got != want {
		t.Errorf("all ran:\n%q, want\n%q", got, want)
	}
	if got, want := rerunHeadline(entries, 1, ok, nil), "Re-ran 3 block(s) ([1] to [5]) in a fresh kernel, in place: 3 of 3 ran; all outputs match those recorded before. 2 text cell(s) among them were skipped."; got != want {
		t.Errorf("all match:\n%q, want\n%q", got, want)
	}
	failed := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "error", Error: &ErrorInfo{EName: "NameError", EValue: "name 'y' is not defined"}}}
	got := rerunHeadline(entries, 1, failed, []string{"[3]"})
	if !strings.HasPrefix(got, "Stopped at block [3]: NameError") || !strings.HasSuffix(got, " 2 of 3 blocks ran; outputs differ in [3]. The blocks after [3] did not run and keep their earlier outputs.") {
		t.Errorf("stopped: %q", got)
	}
}
