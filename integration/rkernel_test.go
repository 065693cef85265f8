//go:build unix

package integration

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// requireIRkernel fails (under CI) or skips (locally) without IRkernel's
// kernelspec "ir".
func requireIRkernel(t *testing.T) {
	t.Helper()
	if haveIRkernel(t) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no IRkernel kernelspec \"ir\": CI installs r-cran-irkernel (see .ci/run)")
	}
	t.Skip("no IRkernel kernelspec \"ir\"")
}

// get_value and list_variables on an R session: values as JSON through
// jsonlite, with the shapes and limits of the Python helpers; the helpers
// leave nothing in the user's environment and do not count as executions.
func TestRKernelGetValue(t *testing.T) {
	requireIRkernel(t)
	s := startServer(t, "--kernel", "ir")
	s.mustRun("r", `df <- data.frame(x = c(1.5, NA, 3), g = factor(c("a", NA, "b")), s = c("p", "q", NA))
f <- factor(c("lo", "hi", NA), levels = c("lo", "hi"))
l <- list(a = 1L, b = NA, c = c("u", NA))
n <- 7L
big <- seq_len(300000)`)
	value := func(args map[string]any) (string, any) {
		t.Helper()
		args["session_id"] = "r"
		res := s.call("get_value", args)
		if res.IsError {
			t.Fatalf("get_value %v: %s", args, text(res))
		}
		got := structured[struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		}](t, res)
		return got.Type, normalize(jsonOf(t, got.Value))
	}
	decode := func(s string) any {
		var v any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return normalize(v)
	}
	for _, tc := range []struct {
		args      map[string]any
		typ, want string
	}{
		{map[string]any{"expression": "df"}, "data.frame", `{"columns": ["x", "g", "s"], "index": [1, 2, 3], "data": [[1.5, "a", "p"], [null, null, "q"], [3, "b", null]]}`},
		{map[string]any{"expression": "df", "orient": "records"}, "data.frame", `{"columns": ["x", "g", "s"], "index": [1, 2, 3], "records": [{"x": 1.5, "g": "a", "s": "p"}, {"x": null, "g": null, "s": "q"}, {"x": 3, "g": "b", "s": null}]}`},
		{map[string]any{"expression": "f"}, "factor", `["lo", "hi", null]`},
		{map[string]any{"expression": "l"}, "list", `{"a": 1, "b": null, "c": ["u", null]}`},
		{map[string]any{"expression": "n"}, "integer", `7`},
		{map[string]any{"expression": `paste0("hé", "llo <&>")`}, "character", `"héllo <&>"`},
		{map[string]any{"expression": "big", "head": 3}, "integer", `[1, 2, 3]`},
	} {
		typ, got := value(tc.args)
		if want := decode(tc.want); typ != tc.typ || !reflect.DeepEqual(got, want) {
			t.Errorf("get_value %v = %s %v; want %s %v", tc.args, typ, got, tc.typ, want)
		}
	}
	res := s.call("get_value", map[string]any{"session_id": "r", "expression": "big", "head": 3})
	if !strings.Contains(text(res), "showing 3 of 300000 values") {
		t.Errorf("get_value big head 3: %s", text(res))
	}
	for expr, want := range map[string]string{
		"dff":                          "evaluating dff raised Error: object 'dff' not found; did you mean 'df'?",
		"1 +":                          "evaluating 1 + raised Error: <text>:2:0: unexpected end of input",
		"big":                          "the value of big cannot be returned as JSON: Error: the value has more than 250000 elements in all (at a vector), more than get_value converts; select a part of it (head(df, 100), x[1:100])",
		`rep(strrep("x", 100000), 60)`: "cannot be returned as JSON: Error: the value is 6000230 bytes as JSON, more than the 5242880 get_value returns",
		"mean":                         "a value of class function cannot be converted to JSON",
	} {
		res := s.call("get_value", map[string]any{"session_id": "r", "expression": expr})
		if !res.IsError || !strings.Contains(text(res), want) {
			t.Errorf("get_value %s: isError=%v %q, want an error saying %q", expr, res.IsError, text(res), want)
		}
	}

	res = s.call("list_variables", map[string]any{"session_id": "r"})
	if res.IsError {
		t.Fatalf("list_variables: %s", text(res))
	}
	vars := structured[struct {
		Variables []map[string]any `json:"variables"`
		Total     int              `json:"total"`
	}](t, res)
	names := []string{}
	for _, v := range vars.Variables {
		names = append(names, v["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"big", "df", "f", "l", "n"}) || vars.Total != 5 {
		t.Errorf("list_variables: %v (total %d), want big df f l n: the helpers define nothing", names, vars.Total)
	}
	for _, want := range []string{"df: data.frame [3 3] = data.frame 3 rows x 3 columns: x, g, s", `f: factor len 3 = factor with 2 levels: "lo" "hi" NA`, "big: integer len 300000 = 1 2 3 4 5 6 ..."} {
		if !strings.Contains(text(res), want) {
			t.Errorf("list_variables text lacks %q:\n%s", want, text(res))
		}
	}
	// The helpers ran silently: the next cell is the second one.
	if _, out := s.run("r", "1 + 1"); out.ExecutionCount != 2 {
		t.Errorf("after the helpers, run_code's cell is number %d, want 2", out.ExecutionCount)
	}
	// Helpers with no R version still say what they need.
	if res := s.call("describe_data", map[string]any{"session_id": "r", "name": "df"}); !res.IsError || !strings.Contains(text(res), "needs a Python (IPython) kernel") {
		t.Errorf("describe_data on R: %s", text(res))
	}
}

// session_status on an R session answers from R's own probe: the R
// program, working directory, memory and packages, silently.
func TestRKernelSessionStatus(t *testing.T) {
	requireIRkernel(t)
	s := startServer(t, "--kernel", "ir")
	s.mustRun("r", "x <- 1")
	res := s.call("session_status", map[string]any{"session_id": "r"})
	if res.IsError {
		t.Fatalf("session_status: %s", text(res))
	}
	st := structured[struct {
		Interpreter string            `json:"interpreter"`
		Cwd         string            `json:"cwd"`
		Packages    map[string]string `json:"packages"`
	}](t, res)
	if !strings.HasSuffix(st.Interpreter, "/R") || st.Cwd == "" || st.Packages["jsonlite"] == "" || st.Packages["IRkernel"] == "" {
		t.Errorf("session_status on R: %+v\n%s", st, text(res))
	}
	for _, want := range []string{"Language: R ", "Working directory: ", "Memory (RSS): ", "Packages: IRdisplay "} {
		if !strings.Contains(text(res), want) {
			t.Errorf("session_status text lacks %q:\n%s", want, text(res))
		}
	}
	if strings.Contains(text(res), "probe") {
		t.Errorf("session_status on R: %s", text(res))
	}
	if _, out := s.run("r", `cat(ls(), sep = ",")`); out.ExecutionCount != 2 || out.Stdout != "x" {
		t.Errorf("after the probe: cell %d, ls() = %q; want cell 2 and x alone", out.ExecutionCount, out.Stdout)
	}
}
