//go:build unix

package integration

import (
	"regexp"
	"strings"
	"testing"
)

// TestTracebackLeavesOutLibraryFrames: a result's traceback keeps the
// user's frames, the first library frame the user's code called and the
// exception, and leaves out the frames inside pandas; the history keeps
// the whole traceback.
func TestTracebackLeavesOutLibraryFrames(t *testing.T) {
	requirePython(t, "pandas")
	t.Parallel()
	s := startServer(t)
	s.mustRun("tb", "import pandas as pd\ndf = pd.DataFrame({'a': [1]})")

	res, out := s.run("tb", "x = 1\ndf['nope']")
	if !res.IsError || out.Error == nil || out.Error.EName != "KeyError" || out.Error.Line != 2 {
		t.Fatalf("KeyError: %+v\n%s", out, text(res))
	}
	for name, tb := range map[string]string{"text": text(res), "structured": out.Error.Traceback} {
		for _, want := range []string{"Cell In[", "----> 2 df['nope']", "KeyError: 'nope'", "File …/site-packages/pandas/core/frame.py:", "inside pandas omitted)"} {
			if !strings.Contains(tb, want) {
				t.Errorf("%s traceback lacks %q:\n%s", name, want, tb)
			}
		}
		for _, gone := range []string{"index.pyx", "hashtable_class_helper", "indexes/base.py"} {
			if strings.Contains(tb, gone) {
				t.Errorf("%s traceback keeps pandas's frame %q:\n%s", name, gone, tb)
			}
		}
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "tb", "start": -1, "full": true}))
	if !strings.Contains(hist, "index.pyx") || !strings.Contains(hist, "indexes/base.py") {
		t.Errorf("the history lost the whole traceback:\n%s", hist)
	}

	// An error raised in the user's own functions keeps every one of their frames.
	res, out = s.run("tb", "def f(d):\n    return d['zz']\ndef g(d):\n    return f(d)\ng(df)")
	tb := text(res)
	if out.Error == nil || out.Error.Line != 2 || strings.Count(tb, "Cell In[") != 3 ||
		!strings.Contains(tb, "----> 5 g(df)") || !strings.Contains(tb, "----> 4     return f(d)") || !strings.Contains(tb, "----> 2     return d['zz']") ||
		!strings.Contains(tb, "frame.py") || strings.Contains(tb, "index.pyx") || !strings.Contains(tb, "KeyError: 'zz'") {
		t.Errorf("user frames:\n%s", tb)
	}
}

// TestGetHistoryPreview: get_history shows each block's code whole and a
// preview of its outputs, says so, and gives them whole with full: true.
func TestGetHistoryPreview(t *testing.T) {
	requirePython(t, "matplotlib")
	t.Parallel()
	s := startServer(t)
	s.mustRun("pv", "for i in range(50):\n    print('line', i)")
	s.mustRun("pv", "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
	s.run("pv", "1/0")
	s.mustRun("pv", "'short'")

	type hist struct {
		Count      int    `json:"count"`
		Transcript string `json:"transcript"`
	}
	res := s.call("get_history", map[string]any{"session_id": "pv"})
	h := structured[hist](t, res)
	got := text(res)
	if h.Transcript != got || h.Count != 4 {
		t.Fatalf("structured %+v, text:\n%s", h, got)
	}
	for _, want := range []string{"[1] for i in range(50):\n        print('line', i)\nline 0\n", "line 2\n[… 47 more lines]",
		"[2] import matplotlib.pyplot as plt", "[3] 1/0\nZeroDivisionError: division by zero\n", "[4] 'short'\n'short'\n",
		"full: true"} {
		if !strings.Contains(got, want) {
			t.Errorf("preview lacks %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`(?m)^\[image/png \d+x\d+\]$`).MatchString(got) {
		t.Errorf("no image marker with its size:\n%s", got)
	}
	for _, gone := range []string{"line 3\n", "Traceback", "<Figure"} {
		if strings.Contains(got, gone) {
			t.Errorf("preview keeps %q:\n%s", gone, got)
		}
	}

	full := structured[hist](t, s.call("get_history", map[string]any{"session_id": "pv", "full": true}))
	if !strings.Contains(full.Transcript, "line 49\n") || !strings.Contains(full.Transcript, "ZeroDivisionError") ||
		!strings.Contains(full.Transcript, "----> 1") || strings.Contains(full.Transcript, "full: true") {
		t.Errorf("full transcript:\n%s", full.Transcript)
	}
	if last := structured[hist](t, s.call("get_history", map[string]any{"session_id": "pv", "start": -1})); last.Transcript != "[4] 'short'\n'short'\n" {
		t.Errorf("start -1: %+v", last)
	}
}
