//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mustRun runs code and fails unless it succeeded.
func (s *server) mustRun(session, code string) runOutput {
	s.t.Helper()
	_, out := s.run(session, code)
	if out.Status != "ok" {
		s.t.Fatalf("run %q: %+v", code, out)
	}
	return out
}

// jsonOf re-encodes v and decodes it with exact numbers, for comparing.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGetValue: values come back as real JSON, with their Python type; a
// value that cannot be converted names its type; nothing is left in the
// user's namespace or history.
func TestGetValue(t *testing.T) {
	requirePython(t, "numpy", "pandas")
	s := startServer(t)
	s.mustRun("gv", `import datetime, numpy as np, pandas as pd
i, f, big, nan, text = 42, 1.5, 2**62, float("nan"), "héllo"
items = [1, None, 2.5, "x", True]
d = {"a": 1, "b": [1, 2], 3: "int key"}
when = datetime.datetime(2024, 1, 2, 3, 4, 5)
n64, f32, npnan = np.int64(7), np.float32(0.5), np.float64("nan")
arr = np.array([[1, 2], [3, 4]])
arrnan = np.array([1.0, np.nan, np.inf])
series = pd.Series([1.0, None], index=["x", "y"], name="s")
frame = pd.DataFrame({"a": [1, 2], "b": ["x", None], "t": pd.to_datetime(["2024-01-01", None])})
class Thing: pass
thing = Thing()`)
	for _, tc := range []struct{ expr, typ, value string }{
		{"i", "int", `42`},
		{"f", "float", `1.5`},
		{"big", "int", `4611686018427387904`},
		{"nan", "float", `null`},
		{"text", "str", `"héllo"`},
		{"items", "list", `[1, null, 2.5, "x", true]`},
		{"d", "dict", `{"a": 1, "b": [1, 2], "3": "int key"}`},
		{"when", "datetime.datetime", `"2024-01-02T03:04:05"`},
		{"n64", "numpy.int64", `7`},
		{"f32", "numpy.float32", `0.5`},
		{"npnan", "numpy.float64", `null`},
		{"arr", "numpy.ndarray", `[[1, 2], [3, 4]]`},
		{"arrnan", "numpy.ndarray", `[1.0, null, null]`},
		{"series", "Series", `{"name": "s", "index": ["x", "y"], "values": [1.0, null]}`},
		{"frame", "DataFrame", `{"columns": ["a", "b", "t"], "index": [0, 1], "data": [[1, "x", "2024-01-01T00:00:00"], [2, null, null]]}`},
		{"arr.sum() * 2", "numpy.int64", `20`},
		{"None", "NoneType", `null`},
		{"  i  ", "int", `42`},
		{"frame[['a']].dtypes", "Series", `{"name": null, "index": ["a"], "values": ["int64"]}`},
	} {
		res := s.call("get_value", map[string]any{"session_id": "gv", "expression": tc.expr})
		if res.IsError {
			t.Errorf("get_value %s: %s", tc.expr, text(res))
			continue
		}
		got := structured[struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		}](t, res)
		var want any
		dec := json.NewDecoder(strings.NewReader(tc.value))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		// Compare numbers by value (1.0 and 1 are the same JSON number).
		// pandas names its classes pandas.DataFrame or
		// pandas.core.frame.DataFrame, depending on its version.
		typeOK := got.Type == tc.typ || strings.HasPrefix(got.Type, "pandas.") && strings.HasSuffix(got.Type, "."+tc.typ)
		if g, w := normalize(jsonOf(t, got.Value)), normalize(want); !reflect.DeepEqual(g, w) || !typeOK {
			t.Errorf("get_value %s = %s %v; want %s %v", tc.expr, got.Type, g, tc.typ, w)
		}
		// This client decodes structured numbers as float64; the text has
		// the exact JSON.
		if tc.expr == "big" && !strings.Contains(text(res), tc.value) {
			t.Errorf("get_value big: text %q lacks %s", text(res), tc.value)
		}
	}
	for expr, want := range map[string]string{
		"thing":              "__main__.Thing cannot be converted to JSON",
		"undefined_name":     "evaluating undefined_name raised NameError",
		"1/0":                "ZeroDivisionError",
		"x = 1":              "SyntaxError",
		"{1j: 2}":            "complex cannot be a JSON key",
		"{1: 'a', '1': 'b'}": "two keys that are both '1'",
		"np.zeros(300_000)":  "more than 250000 elements",
	} {
		res := s.call("get_value", map[string]any{"session_id": "gv", "expression": expr})
		if !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("get_value %s: isError=%v %q, want an error saying %q", expr, res.IsError, text(res), want)
		}
	}
	// Helpers leave nothing behind: no names, no history, no Out.
	out := s.mustRun("gv", "sorted(k for k in globals() if 'km' in k), len(In), len(Out)")
	if out.Result != "([], 3, 0)" {
		t.Errorf("after get_value: %s, want ([], 3, 0): nothing defined, only the two run_code cells in In", out.Result)
	}
	if res := s.call("get_value", map[string]any{"session_id": "nosuch", "expression": "1"}); !res.IsError || !strings.Contains(text(res), "no session") {
		t.Errorf("get_value in a missing session: %s", text(res))
	}
}

// TestGetValueSplitAndHead: DataFrames come in split form by default, their
// column labels keeping their type, or as records on request; head returns
// the first rows or items with a note of how many there are; the value is
// carried once, in the structured content, and the text is a summary.
func TestGetValueSplitAndHead(t *testing.T) {
	requirePython(t, "pandas")
	s := startServer(t)
	s.mustRun("gv", `import pandas as pd
years = pd.DataFrame([[1.5, 2.5], [3.5, None]], columns=[2020, 2021], index=["a", "b"])
series = pd.Series(range(203), name="n")
dup = pd.DataFrame([[1, 2]], columns=["x", "x"])`)
	raw := func(res *mcp.CallToolResult) string {
		t.Helper()
		if res.IsError {
			t.Fatalf("get_value: %s", text(res))
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := raw(s.call("get_value", map[string]any{"session_id": "gv", "expression": "years"})); !strings.Contains(got, `"value":{"columns":[2020,2021],"data":[[1.5,2.5],[3.5,null]],"index":["a","b"]}`) {
		t.Errorf("split form with int labels: %s", got)
	}
	if got := raw(s.call("get_value", map[string]any{"session_id": "gv", "expression": "years", "orient": "records"})); !strings.Contains(got, `"records":[{"2020":1.5,"2021":2.5},{"2020":3.5,"2021":null}]`) {
		t.Errorf("records: %s", got)
	}
	if got := raw(s.call("get_value", map[string]any{"session_id": "gv", "expression": "dup"})); !strings.Contains(got, `"columns":["x","x"]`) {
		t.Errorf("split form of repeated labels: %s", got)
	}
	if res := s.call("get_value", map[string]any{"session_id": "gv", "expression": "dup", "orient": "records"}); !res.IsError || !strings.Contains(text(res), "column names repeat") {
		t.Errorf("records of repeated labels: %s", text(res))
	}

	res := s.call("get_value", map[string]any{"session_id": "gv", "expression": "series", "head": 100})
	out := structured[struct {
		Shape string `json:"shape"`
		Value struct {
			Index  []int `json:"index"`
			Values []int `json:"values"`
		} `json:"value"`
		Shown int    `json:"shown"`
		Total int    `json:"total"`
		Note  string `json:"note"`
	}](t, res)
	if len(out.Value.Values) != 100 || out.Value.Index[99] != 99 || out.Shown != 100 || out.Total != 203 || out.Note != "showing 100 of 203 values" || out.Shape != "203 values" {
		t.Errorf("head 100 of a 203-value Series: %+v", out)
	}
	if !strings.Contains(text(res), "showing 100 of 203 values") || !strings.Contains(text(res), ",98,99]") || strings.Contains(text(res), ",100,") {
		t.Errorf("head's text must say how much is left out and carry the first 100 values only: %s", text(res))
	}
	// A short preview is in the text too.
	if got := text(s.call("get_value", map[string]any{"session_id": "gv", "expression": "series", "head": 3})); !strings.Contains(got, `showing 3 of 203 values:`) || !strings.Contains(got, `"values":[0,1,2]`) {
		t.Errorf("head 3: %s", got)
	}
	// The whole Series, in each form (a client shows its model one of them).
	res = s.call("get_value", map[string]any{"session_id": "gv", "expression": "series"})
	if got := raw(res); !strings.Contains(got, `"values":[0,1,2,`) || !strings.Contains(text(res), ",201,202]}") || strings.Contains(got, `"note"`) {
		t.Errorf("the whole series: text %q, structured %.200s", text(res), got)
	}
	for want, args := range map[string]map[string]any{
		`orient "columns" is not split or records`: {"expression": "years", "orient": "columns"},
		"head is a number of rows or items":        {"expression": "years", "head": -1},
	} {
		args["session_id"] = "gv"
		if res := s.call("get_value", args); !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("get_value %v: %s", args, text(res))
		}
	}
}

// normalize turns json.Numbers into float64, so 1 and 1.0 compare equal.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = normalize(x)
		}
		return out
	}
	return v
}

// TestListVariables: a large array and frame, and an object whose repr
// would take a minute, are described in a moment from their shapes alone.
func TestListVariables(t *testing.T) {
	requirePython(t, "numpy", "pandas")
	s := startServer(t)
	s.mustRun("lv", `import numpy as np, pandas as pd, time
big = np.zeros((12000, 12000))  # 1.07 GiB
frame = pd.DataFrame(np.ones((1_000_000, 12)), columns=[f"c{i}" for i in range(12)])
class Slow:
    def __repr__(self):
        time.sleep(60)
        return "slow"
    def __len__(self):
        return 3
slow = Slow()
name = "x" * 10000
numbers = list(range(100000))
_hidden = 1
def helper(): pass`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_variables", Arguments: map[string]any{"session_id": "lv"}})
	if err != nil {
		t.Fatalf("list_variables (a repr of a whole object would take a minute): %v", err)
	}
	t.Logf("MEASURE: list_variables with a 1 GiB array and a 1,000,000-row frame: %v", time.Since(t0).Round(time.Millisecond))
	if res.IsError {
		t.Fatal(text(res))
	}
	out := structured[struct {
		Variables []struct {
			Name   string `json:"name"`
			Type   string `json:"type"`
			Shape  []int  `json:"shape"`
			DType  string `json:"dtype"`
			Length *int   `json:"length"`
			Repr   string `json:"repr"`
		} `json:"variables"`
		Total int `json:"total"`
	}](t, res)
	byName := map[string]int{}
	var names []string
	for i, v := range out.Variables {
		byName[v.Name] = i
		names = append(names, v.Name)
		if len(v.Repr) > 200 {
			t.Errorf("%s: repr of %d characters", v.Name, len(v.Repr))
		}
	}
	if want := []string{"Slow", "big", "frame", "helper", "name", "numbers", "slow"}; !slices.Equal(names, want) || out.Total != len(want) {
		t.Fatalf("variables %v (total %d), want %v: no modules, builtins, IPython names or _names", names, out.Total, want)
	}
	if v := out.Variables[byName["big"]]; !slices.Equal(v.Shape, []int{12000, 12000}) || v.DType != "float64" || v.Type != "numpy.ndarray" {
		t.Errorf("big: %+v", v)
	}
	if v := out.Variables[byName["frame"]]; !slices.Equal(v.Shape, []int{1000000, 12}) || !strings.Contains(v.Repr, "c0") {
		t.Errorf("frame: %+v", v)
	}
	// An object of an unknown type is named, not asked anything: even
	// len() may compute everything (a lazy frame).
	if v := out.Variables[byName["slow"]]; v.Length != nil || v.Repr != "<__main__.Slow object>" {
		t.Errorf("slow: %+v", v)
	}
	if v := out.Variables[byName["numbers"]]; v.Length == nil || *v.Length != 100000 {
		t.Errorf("numbers: %+v", v)
	}
}

// TestDataToolsAfterIdleStop: a tool that reads the namespace does not
// start a fresh kernel behind the user's back when the old one is gone: it
// says the variables are gone, and run_code starts the next kernel.
func TestDataToolsAfterIdleStop(t *testing.T) {
	s := startServerEnv(t, []string{"KERNEL_MCP_POOL_SIZE=0"}, "--idle-timeout", "1")
	s.mustRun("idle", "x = 1")
	deadline := time.Now().Add(30 * time.Second)
	for s.sessions()[0].State != "stopped" {
		if time.Now().After(deadline) {
			t.Fatalf("the idle kernel was not stopped: %+v", s.sessions())
		}
		time.Sleep(50 * time.Millisecond) // polling list_sessions: no event to wait on
	}
	for tool, args := range map[string]map[string]any{
		"list_variables": {"session_id": "idle"},
		"get_value":      {"session_id": "idle", "expression": "x"},
		"complete":       {"session_id": "idle", "code": "x"},
	} {
		res := s.call(tool, args)
		if !res.IsError || !strings.Contains(text(res), "variables are gone") || !strings.Contains(text(res), "run_code starts a fresh kernel") {
			t.Errorf("%s after the idle stop: isError=%v %s", tool, res.IsError, text(res))
		}
	}
	if _, out := s.run("idle", "'x' in dir()"); out.Result != "False" || !strings.Contains(out.Note, "idle") {
		t.Errorf("run_code after the idle stop: %+v", out)
	}
}

// TestCompleteInspect: completion and help come straight from the kernel.
func TestCompleteInspect(t *testing.T) {
	s := startServer(t)
	res := s.call("complete", map[string]any{"code": "import os; os.pa"})
	c := structured[struct {
		Matches     []string `json:"matches"`
		CursorStart int      `json:"cursor_start"`
		CursorEnd   int      `json:"cursor_end"`
	}](t, res)
	if !slices.ContainsFunc(c.Matches, func(m string) bool { return strings.HasSuffix(m, "path") }) || c.CursorEnd != len("import os; os.pa") {
		t.Errorf("complete os.pa: %+v", c)
	}
	res = s.call("inspect", map[string]any{"code": "len"})
	in := structured[struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}](t, res)
	if !in.Found || !strings.Contains(in.Text, "Return the number of items") || strings.Contains(in.Text, "\x1b[") {
		t.Errorf("inspect len: %+v", in)
	}
	if res := s.call("inspect", map[string]any{"code": "no_such_name_here"}); res.IsError || structured[struct {
		Found bool `json:"found"`
	}](t, res).Found {
		t.Errorf("inspect of an unknown name: %s", text(res))
	}
	if res := s.call("complete", map[string]any{"code": "abc", "cursor_pos": 9}); !res.IsError || !strings.Contains(text(res), "outside the code") {
		t.Errorf("cursor_pos beyond the code: %s", text(res))
	}
}

// TestSaveFigure: the latest figure is written as a valid PNG, into
// folders that did not exist; index counts back; no figure says so.
func TestSaveFigure(t *testing.T) {
	requirePython(t, "matplotlib", "numpy")
	s := startServer(t)
	if res := s.call("save_figure", map[string]any{"session_id": "fig", "path": filepath.Join(t.TempDir(), "x.png")}); !res.IsError || !strings.Contains(text(res), "no session") {
		t.Errorf("save_figure before the session exists: %s", text(res))
	}
	s.mustRun("fig", "x = 1")
	if res := s.call("save_figure", map[string]any{"session_id": "fig", "path": filepath.Join(t.TempDir(), "x.png")}); !res.IsError || !strings.Contains(text(res), "no figure") {
		t.Errorf("save_figure without a figure: %s", text(res))
	}
	s.mustRun("fig", "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(8, 2))\nax.plot([1, 3, 2])\nplt.show()")
	s.mustRun("fig", "fig, ax = plt.subplots(figsize=(2, 6))\nax.bar([1, 2], [3, 4])\nplt.show()")
	dir := filepath.Join(t.TempDir(), "new", "folders")
	for _, tc := range []struct {
		index int
		wide  bool // the first figure is wide, the latest tall
	}{{0, false}, {1, false}, {2, true}} {
		path := filepath.Join(dir, "fig.png")
		args := map[string]any{"session_id": "fig", "path": path}
		if tc.index > 0 {
			args["index"] = tc.index
		}
		res := s.call("save_figure", args)
		if res.IsError {
			t.Fatalf("save_figure index %d: %s", tc.index, text(res))
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("index %d: not a PNG: %v", tc.index, err)
		}
		if b := img.Bounds(); (b.Dx() > 2*b.Dy()) != tc.wide || b.Dx() < 50 || b.Dy() < 50 {
			t.Errorf("index %d: a %dx%d image, want the %s figure", tc.index, b.Dx(), b.Dy(), map[bool]string{true: "wide", false: "tall"}[tc.wide])
		}
	}
	if res := s.call("save_figure", map[string]any{"session_id": "fig", "path": filepath.Join(dir, "y.png"), "index": 3}); !res.IsError || !strings.Contains(text(res), "has 2 image") {
		t.Errorf("index beyond the images: %s", text(res))
	}
}

// TestDataTools: load, describe, plot and regress, each run as ordinary
// code kept in the history.
func TestDataTools(t *testing.T) {
	requirePython(t, "numpy", "pandas", "matplotlib", "statsmodels")
	s := startServer(t)
	dir := t.TempDir()
	csv := "x,z,y,label\n"
	if err := os.WriteFile(filepath.Join(dir, "small.csv"), []byte(csv+"1,2,3,a\n4,,6,b\n7,8,9,c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := s.call("create_session", map[string]any{"session_id": "eda", "cwd": dir}); res.IsError {
		t.Fatal(text(res))
	}
	res := s.call("load_data", map[string]any{"session_id": "eda", "path": "small.csv"})
	if res.IsError || !strings.Contains(text(res), "3 rows x 4 columns") || !strings.Contains(text(res), "label") {
		t.Fatalf("load_data: %s", text(res))
	}
	res = s.call("describe_data", map[string]any{"session_id": "eda"})
	if res.IsError || !strings.Contains(text(res), "missing values per column") || !regexp.MustCompile(`\bz\s+1\b`).MatchString(text(res)) {
		t.Fatalf("describe_data: %s", text(res))
	}
	// Only the columns that have missing values are listed.
	if regexp.MustCompile(`(?m)^(x|y|label)\s+0$`).MatchString(text(res)) {
		t.Errorf("describe_data lists columns with no missing values: %s", text(res))
	}
	// A wide table is shown whole, one line per row, not wrapped at 80
	// characters with backslash continuations.
	wide := "id," + strings.Join(func() []string {
		var cols []string
		for i := range 14 {
			cols = append(cols, fmt.Sprintf("measurement_%d", i))
		}
		return cols
	}(), ",") + "\n"
	for r := range 3 {
		wide += fmt.Sprint(r)
		for i := range 14 {
			wide += fmt.Sprintf(",%d.125", 1000*r+i)
		}
		wide += "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "wide.csv"), []byte(wide), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"load_data", map[string]any{"session_id": "eda", "path": "wide.csv", "name": "wide"}},
		{"describe_data", map[string]any{"session_id": "eda", "name": "wide"}},
	} {
		res := s.call(call.tool, call.args)
		got := text(res)
		oneLine := call.tool != "load_data" || regexp.MustCompile(`(?m)^ +id +measurement_0 .*measurement_13$`).MatchString(got)
		if res.IsError || strings.Contains(got, "\\\n") || !oneLine {
			t.Errorf("%s of a 15-column frame, wrapped or cut: %s", call.tool, got)
		}
		if call.tool == "describe_data" && !strings.Contains(got, "no missing values") {
			t.Errorf("describe_data of a frame with no missing values: %s", got)
		}
	}
	// list_variables names every column of a frame, up to 50.
	s.mustRun("eda", "wider = pd.DataFrame({f'c{i}': [i] for i in range(60)})")
	if got := text(s.call("list_variables", map[string]any{"session_id": "eda"})); !strings.Contains(got, "measurement_12, measurement_13") || !strings.Contains(got, "c48, c49, ... and 10 more") {
		t.Errorf("list_variables of frames with 15 and 60 columns: %s", got)
	}
	res = s.call("plot_data", map[string]any{"session_id": "eda", "kind": "scatter", "x": "x", "y": "y"})
	if res.IsError || !slices.ContainsFunc(res.Content, func(c mcp.Content) bool { _, ok := c.(*mcp.ImageContent); return ok }) {
		t.Fatalf("plot_data: %s", text(res))
	}
	for _, bad := range []map[string]any{
		{"session_id": "eda", "kind": "pie"},
		{"session_id": "eda", "kind": "scatter", "x": "x"},
		{"session_id": "eda", "kind": "line", "name": "df; import os"},
	} {
		if res := s.call("plot_data", bad); !res.IsError {
			t.Errorf("plot_data %v: accepted", bad)
		}
	}
	if res := s.call("load_data", map[string]any{"session_id": "eda", "path": "missing.csv"}); !res.IsError || !strings.Contains(text(res), "no such file") {
		t.Errorf("load_data of a missing file: %s", text(res))
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "eda"}))
	for _, want := range []string{"pd.read_csv(", ".describe(include=\"all\")", ".plot(kind=\"scatter\"", `pd.set_option("display.expand_frame_repr", False`} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
	if res := s.call("save_figure", map[string]any{"session_id": "eda", "path": "plots/scatter.png"}); res.IsError {
		t.Errorf("save_figure after plot_data: %s", text(res))
	} else if _, err := os.Stat(filepath.Join(dir, "plots", "scatter.png")); err != nil {
		t.Errorf("save_figure with a relative path did not write into the session's cwd: %v", err)
	}
}

// historyCount is a session's history_count in list_sessions.
func (s *server) historyCount(session string) int {
	s.t.Helper()
	for _, row := range s.sessions() {
		if row.SessionID == session {
			return row.HistoryCount
		}
	}
	s.t.Fatalf("no session %q in list_sessions", session)
	return 0
}

// valueOf is get_value's value of expr, as JSON text.
func (s *server) valueOf(session, expr string) string {
	s.t.Helper()
	res := s.call("get_value", map[string]any{"session_id": session, "expression": expr})
	if res.IsError {
		s.t.Fatalf("get_value %s: %s", expr, text(res))
	}
	b, _ := json.Marshal(structured[struct {
		Value any `json:"value"`
	}](s.t, res).Value)
	return string(b)
}

// TestDataToolsCheckColumns: a misspelt column or DataFrame is refused
// at once with the closest names; nothing runs that the history or the
// execution count would show, and pandas' internals are not the answer.
func TestDataToolsCheckColumns(t *testing.T) {
	requirePython(t, "numpy", "pandas", "matplotlib", "statsmodels")
	s := startServer(t)
	s.mustRun("macro", `import statsmodels.api as sm
df = sm.datasets.macrodata.load_pandas().data
df["label"] = "q" + df["quarter"].astype(int).astype(str)`)
	before, count := s.historyCount("macro"), s.valueOf("macro", "len(In)")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"estimate_ols", map[string]any{"y": "infl", "x": []string{"tbilrat"}}, "df has no column 'tbilrat' (x[0]); did you mean 'tbilrate'?"},
		{"estimate_ols", map[string]any{"y": "Infl", "x": []string{"tbilrate"}}, "df has no column 'Infl' (y); did you mean 'infl'?"},
		{"estimate_ols", map[string]any{"name": "dff", "y": "infl", "x": []string{"tbilrate"}}, "there is no variable 'dff' in this session; did you mean 'df'?"},
		{"estimate_ols", map[string]any{"y": "infl", "x": []string{"label"}}, "column 'label' (x[0]) of df holds"},
		{"describe_data", map[string]any{"name": "dff"}, "did you mean 'df'?"},
		{"describe_data", map[string]any{"name": "sm"}, "sm is a module, not a pandas DataFrame"},
		{"plot_data", map[string]any{"kind": "scatter", "x": "tbilrat", "y": "infl"}, "df has no column 'tbilrat' (x); did you mean 'tbilrate'?"},
		{"plot_data", map[string]any{"kind": "line", "y": "infll"}, "did you mean 'infl'?"},
		{"plot_data", map[string]any{"kind": "bar", "x": "yeer", "y": "infl"}, "did you mean 'year'?"},
		{"plot_data", map[string]any{"kind": "box", "x": "decade", "y": "infl"}, "df has no column 'decade' (x)"},
		{"plot_data", map[string]any{"kind": "hist", "y": "label"}, "column 'label' (y) of df holds"},
		{"plot_data", map[string]any{"kind": "line", "name": "dff"}, "did you mean 'df'?"},
	} {
		tc.args["session_id"] = "macro"
		t0 := time.Now()
		res := s.call(tc.tool, tc.args)
		t.Logf("MEASURE: %s %v refused in %v", tc.tool, tc.args, time.Since(t0).Round(time.Millisecond))
		got := text(res)
		if !res.IsError || !strings.Contains(got, tc.want) || strings.Contains(got, "Traceback") || len(got) > 600 {
			t.Errorf("%s %v: isError=%v, %d characters:\n%s\nwant a short error saying %q", tc.tool, tc.args, res.IsError, len(got), got, tc.want)
		}
	}
	if after := s.historyCount("macro"); after != before {
		t.Errorf("history_count %d after the refused calls, want %d: nothing recorded", after, before)
	}
	if after := s.valueOf("macro", "len(In)"); after != count {
		t.Errorf("len(In) %s after the refused calls, want %s: no cell that counts", after, count)
	}
	// A new session has no DataFrame yet (and no failed block either).
	if res := s.call("describe_data", map[string]any{"session_id": "new"}); !res.IsError || !strings.Contains(text(res), "no DataFrame is defined yet: load one with load_data") {
		t.Errorf("describe_data in a new session: %s", text(res))
	}
	if n := s.historyCount("new"); n != 0 {
		t.Errorf("history_count of the new session %d, want 0", n)
	}
}

// TestPlotDataBoxByX: a box plot with x draws one box per value of x,
// labelled and in order; too many values, and parameters a kind has no use
// for, are refused rather than ignored.
func TestPlotDataBoxByX(t *testing.T) {
	requirePython(t, "numpy", "pandas", "matplotlib", "statsmodels")
	s := startServer(t)
	// close_figures off: the figure plot_data drew stays plt.gcf(), to be
	// inspected after it was shown.
	s.mustRun("box", `import statsmodels.api as sm
df = sm.datasets.macrodata.load_pandas().data
df["decade"] = (df["year"] // 10 * 10).astype(int)
%config InlineBackend.close_figures = False`)
	res := s.call("plot_data", map[string]any{"session_id": "box", "kind": "box", "x": "decade", "y": "infl"})
	if res.IsError || !slices.ContainsFunc(res.Content, func(c mcp.Content) bool { _, ok := c.(*mcp.ImageContent); return ok }) {
		t.Fatalf("plot_data box by decade: %s", text(res))
	}
	if got, want := s.valueOf("box", "[t.get_text() for t in __import__('matplotlib.pyplot').pyplot.gcf().axes[0].get_xticklabels()]"), `["1950","1960","1970","1980","1990","2000"]`; got != want {
		t.Errorf("box plot's x labels %s, want one box per decade, in order: %s", got, want)
	}
	// Six boxes of seven lines each: two whiskers, two caps, the box, the
	// median and the outliers.
	if got := s.valueOf("box", "[len(__import__('matplotlib.pyplot').pyplot.get_fignums()), len(__import__('matplotlib.pyplot').pyplot.gcf().axes[0].get_lines())]"); got != "[1,42]" {
		t.Errorf("[figures, lines] %s, want [1,42]: one figure, six boxes", got)
	}
	before := s.historyCount("box")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"kind": "box", "x": "year", "y": "infl"}, "x 'year' has 51 distinct values; plot_data draws at most 30 groups"},
		{map[string]any{"kind": "box", "x": "decade"}, "a box plot by x needs y"},
		{map[string]any{"kind": "box", "x": "infl", "y": "infl"}, "x and y are the same column"},
		{map[string]any{"kind": "hist", "x": "decade", "y": "infl"}, "a histogram has no x column"},
		{map[string]any{"kind": "line", "x": "infl", "y": "infl"}, "x and y are the same column"},
	} {
		tc.args["session_id"] = "box"
		res := s.call("plot_data", tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("plot_data %v: isError=%v %s; want an error saying %q", tc.args, res.IsError, text(res), tc.want)
		}
	}
	if after := s.historyCount("box"); after != before {
		t.Errorf("history_count %d after the refused plots, want %d", after, before)
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "box"}))
	if !strings.Contains(hist, `df.boxplot(column="infl", by="decade"`) {
		t.Errorf("history lacks the grouped box plot:\n%s", hist)
	}
}

// TestEstimateOLS recovers known coefficients and matches statsmodels run
// directly.
func TestEstimateOLS(t *testing.T) {
	requirePython(t, "numpy", "pandas", "statsmodels")
	s := startServer(t)
	s.mustRun("ols", `import numpy as np, pandas as pd
rng = np.random.default_rng(7)
n = 1000
data = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)})
data["y"] = 1 + 2 * data["x"] - 3 * data["z"] + rng.normal(size=n)`)
	res := s.call("estimate_ols", map[string]any{"session_id": "ols", "name": "data", "y": "y", "x": []string{"x", "z"}})
	if res.IsError {
		t.Fatal(text(res))
	}
	type stat struct {
		Stat *float64 `json:"stat"`
		P    *float64 `json:"p"`
		Lags int      `json:"lags"`
	}
	out := structured[struct {
		Model        string `json:"model"`
		Nobs         int    `json:"nobs"`
		Coefficients []struct {
			Name   string     `json:"name"`
			Coef   float64    `json:"coef"`
			StdErr float64    `json:"std_err"`
			CI     [2]float64 `json:"ci"`
		} `json:"coefficients"`
		R2             float64 `json:"r2"`
		AdjR2          float64 `json:"adj_r2"`
		DurbinWatson   float64 `json:"durbin_watson"`
		JarqueBera     stat    `json:"jarque_bera"`
		BreuschGodfrey stat    `json:"breusch_godfrey"`
		Summary        *string `json:"summary"`
	}](t, res)
	want := map[string]float64{"const": 1, "x": 2, "z": -3}
	if out.Nobs != 1000 || len(out.Coefficients) != 3 {
		t.Fatalf("estimate: %+v", out)
	}
	for _, c := range out.Coefficients {
		if w, ok := want[c.Name]; !ok || math.Abs(c.Coef-w) > 3*c.StdErr || c.StdErr <= 0 {
			t.Errorf("%s = %.4f ± %.4f, want %v within 3 standard errors", c.Name, c.Coef, c.StdErr, w)
		}
		if !(c.CI[0] < c.Coef && c.Coef < c.CI[1]) {
			t.Errorf("%s = %.4f, 95%% interval %v", c.Name, c.Coef, c.CI)
		}
	}
	// The summary is the text's; the structured content keeps the numbers.
	if out.JarqueBera.Stat == nil || out.BreuschGodfrey.P == nil || out.BreuschGodfrey.Lags != 2 || !strings.Contains(text(res), "OLS Regression Results") || out.Summary != nil {
		t.Errorf("tests and summary: %+v\n%s", out, text(res))
	}
	direct := structured[struct {
		Value []float64 `json:"value"`
	}](t, s.call("get_value", map[string]any{"session_id": "ols", "expression": `(lambda m: [m.rsquared, m.rsquared_adj, __import__("statsmodels.stats.stattools", fromlist=["x"]).durbin_watson(m.resid)])(__import__("statsmodels.api", fromlist=["x"]).OLS(data["y"], __import__("statsmodels.api", fromlist=["x"]).add_constant(data[["x", "z"]])).fit())`}))
	if len(direct.Value) != 3 || direct.Value[0] != out.R2 || direct.Value[1] != out.AdjR2 || direct.Value[2] != out.DurbinWatson {
		t.Errorf("R², adj. R², Durbin-Watson %v %v %v; statsmodels directly: %v", out.R2, out.AdjR2, out.DurbinWatson, direct.Value)
	}
	if got := s.mustRun("ols", "type(model).__name__").Result; got != "'RegressionResultsWrapper'" {
		t.Errorf("model variable: %s", got)
	}
	// A missing package is named, with the tool that installs it.
	s.mustRun("nostats", `import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "statsmodels":
            raise ModuleNotFoundError("No module named 'statsmodels'", name="statsmodels")
sys.meta_path.insert(0, Block())
import pandas as pd
df = pd.DataFrame({"y": [1.0, 2, 3], "x": [1.0, 2, 4]})`)
	res = s.call("estimate_ols", map[string]any{"session_id": "nostats", "y": "y", "x": []string{"x"}})
	if !res.IsError || !strings.Contains(text(res), "install_package") || !strings.Contains(text(res), `"statsmodels"`) {
		t.Errorf("estimate_ols without statsmodels: %s", text(res))
	}
}

// TestEstimateOLSHAC: cov HAC gives the Newey-West standard errors that
// statsmodels' own fit(cov_type="HAC") gives on the same data in the same
// kernel; residuals with AR(1) errors bring a note naming cov HAC, white
// noise does not.
func TestEstimateOLSHAC(t *testing.T) {
	requirePython(t, "numpy", "pandas", "statsmodels")
	s := startServer(t)
	s.mustRun("hac", `import numpy as np, pandas as pd, statsmodels.api as sm
rng = np.random.default_rng(3)
n = 300
x = rng.normal(size=n).cumsum() / 10
u = rng.normal(size=n)
e = np.zeros(n)
for t in range(1, n):
    e[t] = 0.8 * e[t - 1] + u[t]
ar = pd.DataFrame({"x": x, "y": 1 + 2 * x + e})
wn = pd.DataFrame({"x": x, "y": 1 + 2 * x + u})`)
	type fit struct {
		CovType      string  `json:"cov_type"`
		MaxLags      int     `json:"maxlags"`
		DurbinWatson float64 `json:"durbin_watson"`
		Note         string  `json:"note"`
		Coefficients []struct {
			Name   string  `json:"name"`
			StdErr float64 `json:"std_err"`
		} `json:"coefficients"`
	}
	estimate := func(args map[string]any) (fit, string) {
		t.Helper()
		args["session_id"] = "hac"
		res := s.call("estimate_ols", args)
		if res.IsError {
			t.Fatalf("estimate_ols %v: %s", args, text(res))
		}
		return structured[fit](t, res), text(res)
	}
	got, txt := estimate(map[string]any{"name": "ar", "y": "y", "x": []string{"x"}, "cov": "HAC", "maxlags": 4})
	want := structured[struct {
		Value []float64 `json:"value"`
	}](t, s.call("get_value", map[string]any{"session_id": "hac", "expression": `sm.OLS(ar["y"], sm.add_constant(ar[["x"]])).fit(cov_type="HAC", cov_kwds={"maxlags": 4}).bse.tolist()`})).Value
	if got.CovType != "HAC" || got.MaxLags != 4 || len(got.Coefficients) != 2 || len(want) != 2 || !strings.Contains(txt, "HAC") {
		t.Fatalf("HAC fit: %+v, statsmodels: %v\n%s", got, want, txt)
	}
	for i, c := range got.Coefficients {
		if math.Abs(c.StdErr-want[i]) > 1e-12*math.Abs(want[i]) {
			t.Errorf("HAC std err of %s = %v; statsmodels' own: %v", c.Name, c.StdErr, want[i])
		}
	}
	if got.Note != "" {
		t.Errorf("a HAC fit still suggests HAC: %s", got.Note)
	}

	got, txt = estimate(map[string]any{"name": "ar", "y": "y", "x": []string{"x"}})
	if got.DurbinWatson > 1.5 || !strings.Contains(got.Note, "autocorrelated") || !strings.Contains(got.Note, `cov "HAC"`) || !strings.Contains(txt, got.Note) {
		t.Errorf("AR(1) errors (Durbin-Watson %.2f): note %q\n%s", got.DurbinWatson, got.Note, txt)
	}
	got, txt = estimate(map[string]any{"name": "wn", "y": "y", "x": []string{"x"}})
	if got.Note != "" || strings.Contains(txt, "autocorrelated") {
		t.Errorf("white noise (Durbin-Watson %.2f): note %q", got.DurbinWatson, got.Note)
	}

	for want, args := range map[string]map[string]any{
		"cov HAC needs maxlags":                {"cov": "HAC"},
		"maxlags is for cov HAC only":          {"maxlags": 2},
		`cov "bogus" is not one of nonrobust`:  {"cov": "bogus"},
		"ask for two kinds of standard errors": {"cov": "HAC", "maxlags": 2, "robust": true},
	} {
		args["session_id"], args["name"], args["y"], args["x"] = "hac", "ar", "y", []string{"x"}
		if res := s.call("estimate_ols", args); !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("estimate_ols %v: %s", args, text(res))
		}
	}
}

// TestToolProfiles: each profile lists exactly its tools.
func TestToolProfiles(t *testing.T) {
	standard := []string{"create_session", "delete_history", "delete_session", "export_history", "get_history",
		"interrupt_session", "list_sessions", "rerun_code", "reset_run_context", "reset_session", "run_code",
		"run_file", "run_notebook", "save_notebook", "save_script", "send_input", "session_status", "wait_run"}
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"minimal", []string{"get_history", "run_code", "send_input", "session_status", "wait_run"}},
		{"standard", standard},
		{"run_code,get_value", []string{"get_value", "run_code", "send_input", "wait_run"}},
		{"all", nil},
	} {
		s := startServerEnv(t, []string{"KERNEL_MCP_POOL_SIZE=0"}, "--tools", tc.flag)
		lt, err := s.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range lt.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if tc.want == nil {
			if len(got) != 29 || !slices.Contains(got, "estimate_ols") || !slices.Contains(got, "list_kernels") {
				t.Errorf("--tools all: %d tools %v", len(got), got)
			}
		} else if !slices.Equal(got, tc.want) {
			t.Errorf("--tools %s: %v, want %v", tc.flag, got, tc.want)
		}
		s.close()
	}
}

// TestExampleEDA runs examples/eda, the walk-through of docs/walkthrough.md, against the
// binary under test.
func TestExampleEDA(t *testing.T) {
	requirePython(t, "numpy", "pandas", "matplotlib", "statsmodels")
	exe := filepath.Join(t.TempDir(), "eda")
	if out, err := exec.Command("go", "build", "-o", exe, "../examples/eda").CombinedOutput(); err != nil {
		t.Fatalf("building examples/eda: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err := exec.Command(exe, "-server", binary, "-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("examples/eda: %v\n%s", err, out)
	}
	for _, want := range []string{"200 rows x 4 columns", "advertising    4", "[image/png image", "OLS Regression Results", "Breusch-Godfrey", "R² 0.9", `"index":["const","price","advertising"]`, "Saved "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("examples/eda output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "price_vs_sales.png")); err != nil {
		t.Errorf("the figure was not saved: %v", err)
	}
}
