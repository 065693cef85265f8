//go:build unix

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeNotebook writes an nbformat 4 notebook with the given cells
// ({"markdown", text} or {"code", source}) and language.
func writeNotebook(t *testing.T, dir, name, language string, cells [][2]string) string {
	t.Helper()
	var cs []map[string]any
	for _, c := range cells {
		cell := map[string]any{"cell_type": c[0], "metadata": map[string]any{}, "source": c[1]}
		if c[0] == "code" {
			cell["outputs"] = []any{}
			cell["execution_count"] = nil
		}
		cs = append(cs, cell)
	}
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 4, "cells": cs,
		"metadata": map[string]any{"language_info": map[string]any{"name": language}}}
	b, _ := json.Marshal(nb)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run_notebook runs the cells in order, one history block per code cell,
// keeps markdown cells, returns the plot, and stops at a deliberate error
// naming the cell; the namespace has what ran before it.
func TestRunNotebook(t *testing.T) {
	t.Parallel()
	requirePython(t, "matplotlib")
	dir := t.TempDir()
	nb := writeNotebook(t, dir, "analysis.ipynb", "python", [][2]string{
		{"markdown", "# Analysis\nA plot, then a mistake."},
		{"code", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"},
		{"code", "x = 41"},
		{"markdown", "Now the mistake:"},
		{"code", "y = x + 1\n1 / 0"},
		{"code", "never = True"},
	})
	s := startServer(t)
	res := s.call("run_notebook", map[string]any{"session_id": "nb", "path": nb})
	txt := text(res)
	if !res.IsError || !strings.HasPrefix(txt, "Stopped at code cell 2 of analysis.ipynb: ZeroDivisionError on line 2") || !strings.Contains(txt, "3 of 4 code cells ran") {
		t.Fatalf("run_notebook with an error in code cell 2:\n%s", txt)
	}
	images := 0
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			images++
		}
	}
	if images != 1 {
		t.Errorf("%d images in the result, want the plot", images)
	}
	if _, out := s.run("nb", "(x, y, 'never' in dir())"); out.Result != "(41, 42, False)" {
		t.Errorf("namespace after the notebook: %+v", out)
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "nb", "end": 5}))
	for _, want := range []string{"[1] (markdown) # Analysis", "[2] import matplotlib", "[3] x = 41", "[4] (markdown) Now the mistake:", "[5] y = x + 1"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}

	// A py:percent script runs the same way; start/end pick code cells.
	py := filepath.Join(dir, "steps.py")
	os.WriteFile(py, []byte("# %% [markdown]\n# Steps\n\n# %%\na = 1\n\n# %% second\nb = a + 1\n\n# %%\nc = b * 10\nc\n"), 0o644)
	res = s.call("run_notebook", map[string]any{"session_id": "pct", "path": py})
	if out := structured[runOutput](t, res); res.IsError || out.Result != "20" || !strings.Contains(text(res), "Ran 3 code cells of steps.py (0 to 2)") {
		t.Fatalf("py:percent script: %+v\n%s", out, text(res))
	}
	res = s.call("run_notebook", map[string]any{"session_id": "pct", "path": py, "start": -1})
	if res.IsError || !strings.Contains(text(res), "Ran 1 code cells of steps.py (2 to 2)") {
		t.Fatalf("py:percent, last code cell only: %s", text(res))
	}
	if hist := text(s.call("get_history", map[string]any{"session_id": "pct"})); !strings.HasPrefix(hist, "[1] (markdown) Steps\n\n[2] a = 1") {
		t.Errorf("py:percent history:\n%q", hist)
	}
}

// execute=false enters the cells, with the notebook's outputs, into the
// history without running them; save_notebook writes a notebook that
// nbformat validates, with the same cells; run_code start/end runs them.
func TestLoadNotebookWithoutRunning(t *testing.T) {
	t.Parallel()
	requirePython(t, "nbformat")
	dir := t.TempDir()
	src := filepath.Join(dir, "given.ipynb")
	os.WriteFile(src, []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
 "cells": [
  {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Given\n", "Someone else's work."]},
  {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 3, "source": ["total = sum(range(5))\n", "total"],
   "outputs": [{"output_type": "execute_result", "execution_count": 3, "metadata": {}, "data": {"text/plain": ["10"]}}]},
  {"cell_type": "code", "id": "c2", "metadata": {}, "execution_count": 4, "source": "print('half', total / 2)",
   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["half 5.0\n"]}]}
 ]}`), 0o644)
	s := startServer(t)
	res := s.call("run_notebook", map[string]any{"session_id": "ld", "path": src, "execute": false})
	if res.IsError || !strings.Contains(text(res), "without running them") {
		t.Fatalf("load: %s", text(res))
	}
	if st := s.sessions(); len(st) != 1 || st[0].Pid != 0 {
		t.Errorf("loading should start no kernel: %+v", st)
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "ld"}))
	if !strings.Contains(hist, "[1] (markdown) # Given") || !strings.Contains(hist, "[2] total = sum(range(5))") || !strings.Contains(hist, "half 5.0") || !strings.Contains(hist, "[loaded from a notebook, not run here]") {
		t.Fatalf("history after loading:\n%s", hist)
	}
	out := filepath.Join(dir, "saved.ipynb")
	if r := s.call("save_notebook", map[string]any{"session_id": "ld", "path": out}); r.IsError {
		t.Fatal(text(r))
	}
	check := exec.Command("python3", "-c", `import sys, nbformat
nb = nbformat.read(sys.argv[1], 4)
nbformat.validate(nb)
print(",".join(c.cell_type for c in nb.cells), nb.cells[1].outputs[0]["data"]["text/plain"], nb.cells[2].outputs[0]["text"].strip())`, out)
	got, err := check.CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "markdown,code,code 10 half 5.0" {
		t.Fatalf("saved notebook: %v\n%s", err, got)
	}
	// The loaded cells run later, in the live kernel.
	res = s.call("run_code", map[string]any{"session_id": "ld", "start": 0})
	if res.IsError || !strings.Contains(text(res), "half 5.0") {
		t.Fatalf("running the loaded cells: %s", text(res))
	}
}

// A notebook that runs longer than --max-wait hands off like any run.
func TestRunNotebookHandsOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var cells [][2]string
	for range 4 {
		cells = append(cells, [2]string{"code", "import time\ntime.sleep(1)\nprint('cell done', flush=True)"})
	}
	nb := writeNotebook(t, dir, "slow.ipynb", "python", cells)
	s := startServer(t, "--max-wait", "2")
	st := structured[runState](t, s.call("run_notebook", map[string]any{"session_id": "slow", "path": nb}))
	if st.Status != "running" || st.RunID == "" {
		t.Fatalf("a 4 s notebook with --max-wait 2: %+v", st)
	}
	var texts []string
	final, fst := s.waitRunDone("slow", st.RunID, &texts)
	if fst.Status != "ok" || !strings.Contains(text(final), "Ran 4 code cells of slow.ipynb") {
		t.Fatalf("final: %+v\n%s", fst, text(final))
	}
	if n := len(regexp.MustCompile(`(?m)^cell done$`).FindAllString(text(s.call("get_history", map[string]any{"session_id": "slow"})), -1)); n != 4 {
		t.Errorf("%d blocks printed 'cell done', want 4", n)
	}
}

// Bad input is one clear error, and the session goes on.
func TestRunNotebookBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notNB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notNB, []byte("just some text\n"), 0o644)
	badJSON := filepath.Join(dir, "broken.ipynb")
	os.WriteFile(badJSON, []byte(`{"cells": [`), 0o644)
	v3 := filepath.Join(dir, "old.ipynb")
	os.WriteFile(v3, []byte(`{"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}`), 0o644)
	r := writeNotebook(t, dir, "stats.ipynb", "R", [][2]string{{"code", "summary(cars)"}})
	empty := writeNotebook(t, dir, "prose.ipynb", "python", [][2]string{{"markdown", "no code"}})
	s := startServer(t)
	s.run("bad", "kept = 'yes'")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": filepath.Join(dir, "missing.ipynb")}, "cannot read " + filepath.Join(dir, "missing.ipynb") + ": no such file or directory"},
		{map[string]any{"path": notNB}, "is neither an nbformat 4 notebook (.ipynb) nor a py:percent script"},
		{map[string]any{"path": badJSON}, "broken.ipynb is not a notebook"},
		{map[string]any{"path": v3}, "is an nbformat 3 notebook; run_notebook reads nbformat 4: convert it with `jupyter nbconvert --to notebook --nbformat 4 old.ipynb`"},
		{map[string]any{"path": r}, `is a R notebook, but session "bad" runs python`},
		{map[string]any{"path": empty}, "has no code cells"},
		{map[string]any{"path": r, "start": 5}, "no code cells in that range"},
	} {
		tc.args["session_id"] = "bad"
		res := s.call("run_notebook", tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("run_notebook %v: %q, want %q", tc.args, text(res), tc.want)
		}
	}
	if _, out := s.run("bad", "kept"); out.Result != "'yes'" {
		t.Errorf("session after bad input: %+v", out)
	}
}
