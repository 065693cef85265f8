//go:build unix

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A cell's success follows execute_reply, as in a notebook, and every
// traceback it showed is kept: in the result, in order, in the history, in
// the saved notebook; rerun_code goes on past a cell that only showed one.
func TestTracebacksFollowTheReply(t *testing.T) {
	t.Parallel()
	requirePython(t, "nbformat")
	s := startServer(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad_script.py"), []byte("print('script ran')\n1/0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := s.call("create_session", map[string]any{"session_id": "tb", "cwd": dir}); res.IsError {
		t.Fatal(text(res))
	}
	errNames := func(out runOutput) []string {
		var n []string
		for _, e := range out.Errors {
			n = append(n, e.EName)
		}
		return n
	}

	// [1] A handled exception whose traceback is shown is not a failure.
	res, out := s.run("tb", "try:\n    1/0\nexcept Exception:\n    get_ipython().showtraceback()\nprint('handled')")
	if res.IsError || out.Status != "ok" || out.Error != nil || out.Stdout != "handled\n" {
		t.Fatalf("showtraceback: isError %v, %+v\n%s", res.IsError, out, text(res))
	}
	if got := errNames(out); !slices.Equal(got, []string{"ZeroDivisionError"}) {
		t.Fatalf("errors %+v", out.Errors)
	}
	body := text(res)
	if !strings.HasPrefix(body, "The cell ran to the end (status ok) but showed a traceback: ZeroDivisionError: division by zero") {
		t.Fatalf("headline: %q", body)
	}
	if i, j := strings.Index(body, "ZeroDivisionError Traceback"), strings.Index(body, "handled"); i < 0 || j < i {
		t.Fatalf("the traceback must come before 'handled', in arrival order:\n%s", body)
	}

	// [2] %run of a failing script, then the cell goes on.
	res, out = s.run("tb", "%run bad_script.py\nx = 41")
	if res.IsError || out.Status != "ok" || !slices.Equal(errNames(out), []string{"ZeroDivisionError"}) {
		t.Fatalf("%%run: isError %v, %+v\n%s", res.IsError, out, text(res))
	}
	if _, out := s.run("tb", "x + 1"); out.Result != "42" {
		t.Fatalf("the cell after %%run must have run to its end: %+v", out)
	}

	// [4] A cell that shows one traceback and then fails with another: the
	// reply's error leads; the ZeroDivisionError before it is still shown
	// and named. (%pdb on no longer makes such a cell: the debugger reads
	// its commands through input(), which a run now answers; see below.)
	res, out = s.run("tb", "%xmode Minimal\ntry:\n    1/0\nexcept Exception:\n    get_ipython().showtraceback()\nraise ValueError('second')")
	if !res.IsError || out.Status != "error" || out.Error == nil || out.Error.EName != "ValueError" {
		t.Fatalf("two tracebacks: isError %v, %+v\n%s", res.IsError, out, text(res))
	}
	if got, want := errNames(out), []string{"ZeroDivisionError", "ValueError"}; !slices.Equal(got, want) {
		t.Fatalf("errors %q, want %q", got, want)
	}
	lines := strings.SplitN(text(res), "\n", 3)
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "ValueError") || lines[1] != "Earlier in the cell: ZeroDivisionError: division by zero" {
		t.Fatalf("headline:\n%s", text(res))
	}
	if !strings.Contains(lines[2], "ZeroDivisionError: division by zero") {
		t.Fatalf("the ZeroDivisionError must be shown:\n%s", text(res))
	}
	s.run("tb", "%xmode Context")

	// The history keeps every error output, in the transcript and the notebook.
	hist := text(s.call("get_history", map[string]any{"session_id": "tb", "start": 3, "end": 4}))
	if !strings.Contains(hist, "ValueError: second") || !strings.Contains(hist, "ZeroDivisionError: division by zero") {
		t.Fatalf("get_history of [4]:\n%s", hist)
	}
	path := filepath.Join(dir, "tb.ipynb")
	if res := s.call("save_notebook", map[string]any{"session_id": "tb", "path": path}); res.IsError {
		t.Fatal(text(res))
	}
	check := `import nbformat, sys
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
for c in nb.cells:
    print(",".join(o.output_type + ("/" + o.ename if o.output_type == "error" else "") for o in c.outputs))`
	got, err := exec.Command("python3", "-c", check, path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat: %v\n%s", err, got)
	}
	cells := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(cells) != 5 || cells[0] != "error/ZeroDivisionError,stream" ||
		!strings.Contains(cells[3], "error/ZeroDivisionError,error/ValueError") {
		t.Fatalf("notebook outputs per cell:\n%s", got)
	}

	// rerun_code goes past blocks that only showed tracebacks, and stops
	// at the one whose reply was an error.
	if res := s.call("reset_run_context", map[string]any{"session_id": "tb"}); res.IsError {
		t.Fatal(text(res))
	}
	res = s.call("rerun_code", map[string]any{"session_id": "tb"})
	if !res.IsError || !strings.HasPrefix(text(res), "Stopped at block [4]: ValueError") {
		t.Fatalf("rerun_code:\n%s", text(res))
	}
	if _, out := s.run("tb", "x"); out.Result != "41" {
		t.Fatalf("blocks [1]-[3] must have re-run: %+v", out)
	}

	// With %pdb on, the post-mortem debugger asks for commands as a
	// notebook's would; "q" quits it and the cell fails with its error.
	res, _ = s.run("tb", "%pdb on\n1/0")
	st := structured[runState](t, res)
	if st.Status == "running" {
		st = s.waitRunUntil("tb", st.RunID, "the debugger's prompt", func(p runState) bool { return p.Status == "input_requested" })
	}
	if st.Status != "input_requested" || !strings.Contains(st.Prompt, "ipdb>") {
		t.Fatalf("%%pdb on: %+v\n%s", st, text(res))
	}
	s.call("send_input", map[string]any{"session_id": "tb", "run_id": st.RunID, "text": "q"})
	var texts []string
	if _, fin := s.waitRunDone("tb", st.RunID, &texts); fin.Status != "error" || fin.Error == nil || fin.Error.EName != "ZeroDivisionError" {
		t.Fatalf("after quitting the debugger: %+v", fin)
	}
	s.run("tb", "%pdb off")
}

// A display formatter that raises as the last expression is shown (plotly
// without nbformat raises ValueError in _repr_mimebundle_): the cell fails
// as in a notebook, and its headline names that exception, not the
// "NoneType: None" of the reply, with its traceback shown once.
func TestFormatterErrorHeadline(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []struct{ method, evalue string }{
		{"_repr_mimebundle_(self, include=None, exclude=None)", "Mime type rendering requires nbformat>=4.2.0 but it is not installed"},
		{"_repr_html_(self)", "html broke"},
		{"_ipython_display_(self)", "display broke"},
	} {
		code := "class Fig:\n    def " + c.method + ":\n        raise ValueError(" + strconv.Quote(c.evalue) + ")\nFig()"
		res, out := s.run("fmt", code)
		body := text(res)
		if !res.IsError || out.Status != "error" || out.Error == nil || out.Error.EName != "ValueError" || out.Error.EValue != c.evalue {
			t.Errorf("%s: isError %v, status %s, error %+v\n%s", c.method, res.IsError, out.Status, out.Error, body)
			continue
		}
		if !strings.HasPrefix(body, "ValueError on line 3: "+c.evalue) || strings.Contains(body, "NoneType") {
			t.Errorf("%s: the headline must name the ValueError:\n%s", c.method, body)
		}
		if n := strings.Count(body, "ValueError Traceback"); n != 1 || !strings.Contains(out.Error.Traceback, "raise ValueError") {
			t.Errorf("%s: the traceback must be shown once (%d) and kept:\n%s", c.method, n, body)
		}
	}
}
