package history

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// tinyPNG is a real 1×1 PNG, fixed so the golden files stay stable.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// goldenEntries is a short session: a result with a print, a progress bar
// and stderr, an exception with IPython's colours, a plot, a timeout, a
// kernel death, then after the restart a shell escape and a run_file.
func goldenEntries() []Entry {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	text := func(s string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"text/plain": jsonString(s)}
	}
	return []Entry{
		{
			Code: "import math\nresult = math.sqrt(144)\nprint('computing')\nresult",
			Outputs: []Output{
				{OutputType: "stream", Name: "stdout", Text: "computing\n"},
				{OutputType: "execute_result", Data: text("12.0"), ExecutionCount: 1},
			},
			Status: "ok", ExecutionCount: 1, Start: at(0), End: at(0.012), Generation: 1,
		},
		{
			Code: "import sys\nfor i in range(3):\n    print(f'{i}/3', end='\\r')\n\nprint('done <ok> & dusted')\nprint('careful', file=sys.stderr)",
			Outputs: []Output{
				{OutputType: "stream", Name: "stdout", Text: "0/3\r1/3"},
				{OutputType: "stream", Name: "stdout", Text: "\r2/3\rdone <ok> & dusted\n"},
				{OutputType: "stream", Name: "stderr", Text: "careful\n"},
			},
			Status: "ok", ExecutionCount: 2, Start: at(1), End: at(1.5), Generation: 1,
		},
		{
			Code: "1/0",
			Outputs: []Output{{
				OutputType: "error", EName: "ZeroDivisionError", EValue: "division by zero",
				Traceback: []string{
					"\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
					"\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
					"Cell \x1b[0;32mIn[3], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241;43m1\x1b[39;49m\x1b[38;5;241;43m/\x1b[39;49m\x1b[38;5;241;43m0\x1b[39;49m\n",
					"\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
				},
			}},
			Status: "error", ExecutionCount: 3, Start: at(2), End: at(2.003), Generation: 1,
		},
		{
			Code: "%matplotlib inline\nimport matplotlib.pyplot as plt\nfrom IPython.display import Image, display\ndisplay(Image(data=png))\nplt.plot([1, 2])",
			Outputs: []Output{
				{
					OutputType: "display_data",
					Data: map[string]json.RawMessage{
						"image/png":  jsonString(tinyPNG),
						"text/plain": jsonString("<IPython.core.display.Image object>"),
					},
				},
				{OutputType: "execute_result", Data: text("[<matplotlib.lines.Line2D at 0x7f3a2c1b5d50>]"), ExecutionCount: 4},
				{
					OutputType: "display_data",
					Data: map[string]json.RawMessage{
						"image/png":  jsonString(tinyPNG),
						"text/plain": jsonString("<Figure size 640x480 with 1 Axes>"),
					},
					Metadata: map[string]json.RawMessage{"image/png": json.RawMessage(`{"height":1,"width":1}`)},
				},
			},
			Status: "ok", ExecutionCount: 4, Start: at(3), End: at(3.25), Generation: 1,
		},
		{
			Code:    "import time\nprint('sleeping')\ntime.sleep(60)",
			Outputs: []Output{{OutputType: "stream", Name: "stdout", Text: "sleeping\n"}},
			Status:  "timeout", ExecutionCount: 5, Start: at(4), End: at(9), Generation: 1,
			Note: "timed out after 5 s: interrupted, namespace kept",
		},
		{
			Code:   "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
			Status: "error", Start: at(10), End: at(10.1), Generation: 1,
			Note: "kernel died (signal 9)",
		},
		{
			Code: "!pip install requests\nx = 1",
			Outputs: []Output{{
				OutputType: "stream", Name: "stdout",
				Text: "Requirement already satisfied: requests\r\n\x1b[1m[\x1b[0m\x1b[34;49mnotice\x1b[0m\x1b[1;39;49m]\x1b[0m pip is fine\r\n",
			}},
			Status: "ok", ExecutionCount: 1, Start: at(12), End: at(14), Generation: 2,
		},
		{
			Code:    "def f():\n    return 1\n\n\nprint('loaded', f())\n",
			Source:  "file:/home/user/utils.py",
			Outputs: []Output{{OutputType: "stream", Name: "stdout", Text: "loaded 1\n"}},
			Status:  "ok", ExecutionCount: 2, Start: at(15), End: at(15.01), Generation: 2,
		},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestTinyPNGIsAPNG(t *testing.T) {
	b, err := base64.StdEncoding.DecodeString(tinyPNG)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 1 || cfg.Height != 1 {
		t.Fatalf("tinyPNG: %+v, %v", cfg, err)
	}
}

func TestTranscriptGolden(t *testing.T) {
	got := Transcript(goldenEntries(), 1)
	golden(t, "transcript.golden", []byte(got))
	if again := Transcript(goldenEntries(), 1); again != got {
		t.Error("Transcript is not deterministic")
	}
}

func TestScriptGolden(t *testing.T) {
	golden(t, "script.golden", []byte(Script(goldenEntries(), 1, "demo")))
}

func TestNotebookGolden(t *testing.T) {
	nb, err := Notebook(goldenEntries(), 1, NotebookMeta{KernelName: "python3", DisplayName: "Python 3 (ipykernel)", Language: "python", LanguageVersion: "3.11.2"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "notebook.golden", nb)
	validateNotebook(t, nb)
}

// validateNotebook runs Jupyter's own validator on nb.
func validateNotebook(t *testing.T, nb []byte) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import nbformat").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with nbformat is needed to validate notebooks: %v", err)
		}
		t.Skipf("python3 with nbformat not available: %v", err)
	}
	path := filepath.Join(t.TempDir(), "nb.ipynb")
	if err := os.WriteFile(path, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-c", "import nbformat,sys; nb=nbformat.read(sys.argv[1], as_version=4); nbformat.validate(nb)"+
		// Written byte for byte as Jupyter would write it.
		"; assert nbformat.writes(nb)+'\\n' == open(sys.argv[1], encoding='utf-8').read(), 'not formatted as nbformat writes it'", path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat rejects the notebook: %v\n%s", err, out)
	}
}

func TestNotebookEdgeCases(t *testing.T) {
	entries := []Entry{
		{Code: "", Status: "ok", Generation: 1},
		{Code: "x", Status: "interrupted", Generation: 1, Outputs: []Output{
			{OutputType: "stream", Text: "no name\n"},
			{OutputType: "clear_output"},
			{OutputType: "execute_result", Data: map[string]json.RawMessage{"application/json": json.RawMessage(`{"a":[1,2]}`), "text/html": jsonString("<b>x</b>\n<i>y</i>")}},
			{OutputType: "error", EName: "KeyboardInterrupt"},
		}},
	}
	nb, err := Notebook(entries, 7, NotebookMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id": "cell-7"`, `"id": "cell-8"`, `"execution_count": null`, `"name": "stdout"`, `"display_name": "Python 3"`, `"<b>x</b>\n",`} {
		if !bytes.Contains(nb, []byte(want)) {
			t.Errorf("notebook lacks %s:\n%s", want, nb)
		}
	}
	if bytes.Contains(nb, []byte("clear_output")) {
		t.Error("clear_output kept")
	}
	validateNotebook(t, nb)
	if empty, err := Notebook(nil, 1, NotebookMeta{}); err != nil || !bytes.Contains(empty, []byte(`"cells": []`)) {
		t.Errorf("empty notebook: %v\n%s", err, empty)
	}
}

func TestSplitLines(t *testing.T) {
	for in, want := range map[string][]string{
		"":          {},
		"a":         {"a"},
		"a\n":       {"a\n"},
		"a\nb":      {"a\n", "b"},
		"a\n\nb\n":  {"a\n", "\n", "b\n"},
		"a\rb\r\nc": {"a\r", "b\r\n", "c"},
		"é\u2028x":  {"é\u2028", "x"},
	} {
		got := splitLines(in)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("splitLines(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTranscriptNumbering(t *testing.T) {
	e := []Entry{
		{Code: "a = 1", Generation: 1},
		{Code: "a\n", Generation: 1, Outputs: []Output{{OutputType: "execute_result", Data: map[string]json.RawMessage{"text/plain": jsonString("1")}}}},
	}
	want := "[9] a = 1\n\n[10] a\n1\n"
	if got := Transcript(e, 9); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Transcript(nil, 1); got != "" {
		t.Errorf("Transcript(nil) = %q", got)
	}
	// A restart is shown between entries of a slice, never before the first.
	e[0].Generation = 2
	e[1].Generation = 3
	want = "[1] a = 1\n\n" + restartLine + "\n[2] a\n1\n"
	if got := Transcript(e, 1); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestApplyCR(t *testing.T) {
	for in, want := range map[string]string{
		"plain\n":              "plain\n",
		"10%\r50%\r100%\n":     "100%\n",
		"a\r\nb\r\n":           "a\nb\n",
		"bar 90%\r":            "bar 90%",
		"x\rbar 99%\r\nnext\n": "bar 99%\nnext\n",
	} {
		if got := applyCR(in); got != want {
			t.Errorf("applyCR(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScriptMagics(t *testing.T) {
	code := strings.Join([]string{
		"%pip install numpy",
		"s = '''",
		"%not a magic inside a string",
		"'''",
		"x = (1",
		"     % 2)",
		"for f in files:",
		"    !cat {f}",
		"y = 'it''s' # %comment",
		"!echo \"(\"",
		"z = 1",
	}, "\n")
	want := strings.Join([]string{
		"# %pip install numpy" + magicNote,
		"s = '''",
		"%not a magic inside a string",
		"'''",
		"x = (1",
		"     % 2)",
		"for f in files:",
		"    pass  # !cat {f}" + magicNote,
		"y = 'it''s' # %comment",
		"# !echo \"(\"" + magicNote,
		"z = 1",
	}, "\n")
	if got := plainPython(code); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := plainPython("%%time\nx = 1\n!ls"); got != "# %%time"+magicNote+"\nx = 1\n# !ls"+magicNote {
		t.Errorf("%%%%time cell: %q", got)
	}
	if got := plainPython("%%bash\necho hi"); got != "# %%bash"+magicNote+"\n# echo hi" {
		t.Errorf("%%%%bash cell: %q", got)
	}
}

func TestScriptCompiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	path := filepath.Join(t.TempDir(), "s.py")
	if err := os.WriteFile(path, []byte(Script(goldenEntries(), 1, "demo")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-m", "py_compile", path).CombinedOutput(); err != nil {
		t.Fatalf("the script does not compile: %v\n%s", err, out)
	}
}

// A block that showed several tracebacks keeps them all, in order, in the
// transcript and the notebook, whether it failed or not.
func TestSeveralErrorsKept(t *testing.T) {
	e := Entry{Code: "%pdb on\n1/0", Status: "error", Generation: 1, Outputs: []Output{
		{OutputType: "stream", Name: "stdout", Text: "Automatic pdb calling has been turned ON\n"},
		{OutputType: "error", EName: "ZeroDivisionError", EValue: "division by zero", Traceback: []string{"\x1b[31mZeroDivisionError\x1b[0m: division by zero"}},
		{OutputType: "stream", Name: "stdout", Text: "> <ipython-input>(2)\n"},
		{OutputType: "error", EName: "StdinNotImplementedError", EValue: "raw_input was called", Traceback: []string{"StdinNotImplementedError: raw_input was called"}},
	}}
	want := "[1] %pdb on\n    1/0\nAutomatic pdb calling has been turned ON\nZeroDivisionError: division by zero\n> <ipython-input>(2)\nStdinNotImplementedError: raw_input was called\n"
	if got := Transcript([]Entry{e}, 1); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	nb, err := Notebook([]Entry{e}, 1, NotebookMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Outputs []struct {
				OutputType string `json:"output_type"`
				EName      string `json:"ename"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range doc.Cells[0].Outputs {
		got = append(got, o.OutputType+"/"+o.EName)
	}
	if strings.Join(got, ",") != "stream/,error/ZeroDivisionError,stream/,error/StdinNotImplementedError" {
		t.Errorf("notebook outputs %q", got)
	}
}

// A notebook's markdown cell is kept as a markdown cell by Notebook, marked
// in the transcript and commented out in the script; it is not code.
func TestMarkdownEntry(t *testing.T) {
	entries := []Entry{{CellType: "markdown", Code: "# Title\nSome *text*."}, {Code: "x = 1", Status: "ok", ExecutionCount: 1}}
	if entries[0].IsCode() || !entries[1].IsCode() {
		t.Fatal("IsCode")
	}
	nb, err := Notebook(entries, 1, NotebookMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Cells[0]["cell_type"] != "markdown" || doc.Cells[0]["outputs"] != nil || doc.Cells[0]["execution_count"] != nil {
		t.Errorf("markdown cell: %v", doc.Cells[0])
	}
	if got := Transcript(entries, 1); !strings.HasPrefix(got, "[1] (markdown) # Title\n") {
		t.Errorf("transcript:\n%s", got)
	}
	if got := Script(entries, 1, "s"); !strings.Contains(got, "# %% [1] [markdown]\n# # Title\n# Some *text*.\n") {
		t.Errorf("script:\n%s", got)
	}
}

// A notebook without the failed blocks names each cell kept for its block,
// as the transcript numbers it.
func TestNotebookWithoutKeepsNumbers(t *testing.T) {
	entries := []Entry{
		{Code: "x = 1", Status: "ok"},
		{Code: "1/0", Status: "error"},
		{Code: "sleep", Status: "timeout"},
		{Code: "loop", Status: "interrupted"},
		{Code: "print(x)", Status: "ok"},
	}
	nb, err := NotebookWithout(entries, 3, NotebookMeta{}, Entry.Failed)
	if err != nil {
		t.Fatal(err)
	}
	validateNotebook(t, nb)
	var doc struct {
		Cells []struct {
			ID string `json:"id"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range doc.Cells {
		ids = append(ids, c.ID)
	}
	if want := []string{"cell-3", "cell-7"}; !slices.Equal(ids, want) {
		t.Errorf("cell ids %v, want %v", ids, want)
	}
}
