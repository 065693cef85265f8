package engine

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// runRHelper runs helper src with args in Rscript after setup, as the
// kernel would (the code rCall writes, in the global environment), with
// IRdisplay's publishing replaced by printing the bundle's value. It
// returns the helper's reply decoded, what the global environment holds
// afterwards, and the error R stopped with.
func runRHelper(t *testing.T, setup, src string, args map[string]any) (reply map[string]any, globals []string, rerr string) {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code := filepath.Join(dir, "helper.R")
	if err := os.WriteFile(code, []byte(rCall(rHelpers[src], a)), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `options(jupyter.base_display_func = function(data, metadata = NULL) cat("<<REPLY>>", data[[` + RString(ResultMIME) + `]], "<<END>>\n", sep = ""))
` + setup + `
.km_before <- ls(globalenv(), all.names = TRUE)
.km_err <- tryCatch({ eval(parse(file = ` + RString(code) + `), globalenv()); "" }, error = function(e) conditionMessage(e))
cat("<<GLOBALS>>", paste(setdiff(ls(globalenv(), all.names = TRUE), c(.km_before, ".km_before", ".km_err")), collapse = ","), "<<END>>\n", sep = "")
cat("<<ERR>>", .km_err, "<<END>>\n", sep = "")
`
	main := filepath.Join(dir, "main.R")
	if err := os.WriteFile(main, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Rscript", "--vanilla", main)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Rscript: %v\n%s", err, out)
	}
	between := func(tag string) (string, bool) {
		_, rest, ok := strings.Cut(string(out), "<<"+tag+">>")
		if !ok {
			return "", false
		}
		s, _, _ := strings.Cut(rest, "<<END>>")
		return s, true
	}
	if g, _ := between("GLOBALS"); g != "" {
		globals = strings.Split(g, ",")
	}
	rerr, _ = between("ERR")
	if s, ok := between("REPLY"); ok {
		if err := json.Unmarshal([]byte(s), &reply); err != nil {
			t.Fatalf("the reply is not a JSON object: %v\n%s", err, s)
		}
		if e, ok := reply["km_error"].(string); ok {
			if rerr != "" {
				t.Errorf("R stopped with %q after the helper replied", rerr)
			}
			return nil, globals, e
		}
	}
	return reply, globals, rerr
}

func requireR(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("Rscript"); err == nil {
		if err := exec.Command("Rscript", "-e", "library(jsonlite); library(IRdisplay)").Run(); err == nil {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Rscript with jsonlite and IRdisplay: CI installs r-cran-irkernel (see .ci/run)")
	}
	t.Skip("no Rscript with jsonlite and IRdisplay")
}

func TestRHelpers(t *testing.T) {
	requireR(t)
	if !strings.Contains(rPrelude, `"`+ResultMIME+`"`) {
		t.Errorf("r/prelude.R does not publish under %q, the MIME type the server reads", ResultMIME)
	}
	setup := `df <- data.frame(x = c(1.5, NA, 3), g = factor(c("a", NA, "b")), s = c("p", "q", NA))
f <- factor(c("lo", "hi", NA, "lo"), levels = c("lo", "hi"))
l <- list(a = 1L, b = NA, c = c("u", NA), d = list(1, NULL))
n <- 42L
big <- seq_len(1000)
m <- matrix(1:6, nrow = 2)
named <- c(a = 1, b = 2)
d <- as.Date("2024-03-01")
`
	get := func(expr string, extra ...any) map[string]any {
		t.Helper()
		args := map[string]any{"expression": expr, "limit": 1 << 20, "max_cells": 100, "orient": "split"}
		for i := 0; i+1 < len(extra); i += 2 {
			args[extra[i].(string)] = extra[i+1]
		}
		reply, globals, rerr := runRHelper(t, setup, PyGetValue, args)
		if len(globals) > 0 {
			t.Errorf("get_value %s defined %v in the global environment", expr, globals)
		}
		if rerr != "" {
			reply = map[string]any{"raised": rerr}
		}
		return reply
	}
	cases := []struct {
		expr  string
		extra []any
		want  map[string]any
	}{
		{"df", nil, map[string]any{"type": "data.frame", "shape": "3 rows x 3 columns", "value": map[string]any{
			"columns": []any{"x", "g", "s"}, "index": []any{1.0, 2.0, 3.0},
			"data": []any{[]any{1.5, "a", "p"}, []any{nil, nil, "q"}, []any{3.0, "b", nil}}}}},
		{"df", []any{"orient", "records", "head", 2}, map[string]any{"type": "data.frame", "shape": "3 rows x 3 columns", "total": 3.0, "shown": 2.0, "unit": "rows", "value": map[string]any{
			"columns": []any{"x", "g", "s"}, "index": []any{1.0, 2.0},
			"records": []any{map[string]any{"x": 1.5, "g": "a", "s": "p"}, map[string]any{"x": nil, "g": nil, "s": "q"}}}}},
		{"f", nil, map[string]any{"type": "factor", "shape": "4 values", "value": []any{"lo", "hi", nil, "lo"}}},
		{"l", nil, map[string]any{"type": "list", "shape": "4 items", "value": map[string]any{"a": 1.0, "b": nil, "c": []any{"u", nil}, "d": []any{1.0, nil}}}},
		{"n", nil, map[string]any{"type": "integer", "shape": "", "value": 42.0}},
		{"n < 100 && n > 1", nil, map[string]any{"type": "logical", "shape": "", "value": true}},
		{`paste0("h\u00e9", "llo\t\"")`, nil, map[string]any{"type": "character", "shape": "", "value": "h\u00e9llo\t\""}},
		{"n + 0.5", nil, map[string]any{"type": "numeric", "shape": "", "value": 42.5}},
		{"c(1, NaN, Inf)", nil, map[string]any{"type": "numeric", "shape": "3 values", "value": []any{1.0, nil, nil}}},
		{"m", nil, map[string]any{"type": "matrix", "shape": "shape 2x3", "value": []any{[]any{1.0, 3.0, 5.0}, []any{2.0, 4.0, 6.0}}}},
		{"named", nil, map[string]any{"type": "numeric", "shape": "2 values", "value": map[string]any{"a": 1.0, "b": 2.0}}},
		{"d", nil, map[string]any{"type": "Date", "shape": "", "value": "2024-03-01"}},
		{"NULL", nil, map[string]any{"type": "NULL", "shape": "", "value": nil}},
		{"list()", nil, map[string]any{"type": "list", "shape": "0 items", "value": []any{}}},
		{"big", []any{"head", 3}, map[string]any{"type": "integer", "shape": "1000 values", "total": 1000.0, "shown": 3.0, "unit": "values", "value": []any{1.0, 2.0, 3.0}}},
		{"dff", nil, map[string]any{"eval_error": map[string]any{"ename": "Error", "evalue": "object 'dff' not found; did you mean 'df'?"}}},
		{"big", nil, map[string]any{"raised": "the value has more than 100 elements in all (at a vector), more than get_value converts; select a part of it (head(df, 100), x[1:100])"}},
		{"big", []any{"max_cells", 5000, "limit", 100}, map[string]any{"raised": "the value is 3943 bytes as JSON, more than the 100 get_value returns; select a part of it (head(df, 100), x[1:100])"}},
		{"mean", nil, map[string]any{"raised": "a value of class function cannot be converted to JSON (get_value handles vectors, factors, dates, lists, matrices and data frames)"}},
		{"list(a = 1, a = 2)", nil, map[string]any{"raised": `the list has two elements that are both named "a"; rename one`}},
		{"data.frame(x = 1, x = 2, check.names = FALSE)", []any{"orient", "records"}, map[string]any{"raised": `the data.frame's column names repeat: "x"; rename them, or use orient split`}},
		{"data.frame(x = 1, x = 2, check.names = FALSE)", nil, map[string]any{"type": "data.frame", "shape": "1 rows x 2 columns", "value": map[string]any{"columns": []any{"x", "x"}, "index": []any{1.0}, "data": []any{[]any{1.0, 2.0}}}}},
		{`data.frame(v = 1:2, row.names = c("a", "b"))`, nil, map[string]any{"type": "data.frame", "shape": "2 rows x 1 columns", "value": map[string]any{"columns": []any{"v"}, "index": []any{"a", "b"}, "data": []any{[]any{1.0}, []any{2.0}}}}},
		// One expression, not an assignment: nothing is defined or removed
		// (get checks the global environment).
		{"y <- 5", nil, map[string]any{"eval_error": map[string]any{"ename": "Error", "evalue": "get_value takes one expression, not an assignment; assign with run_code"}}},
		{"n; rm(n)", nil, map[string]any{"eval_error": map[string]any{"ename": "Error", "evalue": "get_value takes one expression, and this has 2; run statements with run_code"}}},
		{"# a comment", nil, map[string]any{"eval_error": map[string]any{"ename": "Error", "evalue": "get_value takes one expression, and this has 0; run statements with run_code"}}},
		// A 1-D array (table(x)) is a named vector; a matrix keeps its dimnames.
		{`table(c("a", "b", "a"))`, nil, map[string]any{"type": "table", "shape": "shape 2", "value": map[string]any{"a": 2.0, "b": 1.0}}},
		{`matrix(1:4, 2, dimnames = list(c("r1", "r2"), c("a", "b")))`, nil, map[string]any{"type": "matrix", "shape": "shape 2x2", "value": map[string]any{
			"columns": []any{"a", "b"}, "index": []any{"r1", "r2"}, "data": []any{[]any{1.0, 3.0}, []any{2.0, 4.0}}}}},
		{`table(c("x", "y"), c("u", "u"))`, nil, map[string]any{"type": "table", "shape": "shape 2x1", "value": map[string]any{
			"columns": []any{"u"}, "index": []any{"x", "y"}, "data": []any{[]any{1.0}, []any{1.0}}}}},
		// A list-column's cells count against max_cells.
		{"data.frame(id = 1:2, v = I(list(1:100, 1:100)))", nil, map[string]any{"raised": "the value has more than 100 elements in all (at a data.frame), more than get_value converts; select a part of it (head(df, 100), x[1:100])"}},
		// Times: POSIXct in UTC, with the fraction when there is one; difftime in seconds.
		{`as.POSIXct("2024-03-01 12:34:56", tz = "America/New_York")`, nil, map[string]any{"type": "POSIXct", "shape": "", "value": "2024-03-01T17:34:56Z"}},
		{`as.POSIXct("2024-03-01 12:34:56.25", tz = "UTC")`, nil, map[string]any{"type": "POSIXct", "shape": "", "value": "2024-03-01T12:34:56.250000Z"}},
		{`data.frame(t = as.POSIXct("2024-03-01 12:00", tz = "UTC"))`, nil, map[string]any{"type": "data.frame", "shape": "1 rows x 1 columns", "value": map[string]any{
			"columns": []any{"t"}, "index": []any{1.0}, "data": []any{[]any{"2024-03-01T12:00:00Z"}}}}},
		{`as.difftime(90, units = "mins")`, nil, map[string]any{"type": "difftime", "shape": "", "value": 5400.0}},
	}
	for _, c := range cases {
		got := get(c.expr, c.extra...)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("get_value %s %v:\n got %v\nwant %v", c.expr, c.extra, got, c.want)
		}
	}
	if got := get("1 +"); got["eval_error"] == nil {
		t.Errorf("get_value of a syntax error: %v, want an eval_error", got)
	}

	// The helpers use base R's functions, not the user's masks of them.
	masks := "length <- function(x) stop('masked'); format <- function(...) stop('masked'); nchar <- function(...) stop('masked')\nv <- c(1, 10, 100.5)\nul <- list(1, 2)\n"
	if reply, _, rerr := runRHelper(t, masks, PyGetValue, map[string]any{"expression": "v", "limit": 1 << 20, "max_cells": 100, "orient": "split"}); rerr != "" || !reflect.DeepEqual(reply["value"], []any{1.0, 10.0, 100.5}) {
		t.Errorf("get_value with base functions masked: %v, %q", reply, rerr)
	}
	reply, _, rerr := runRHelper(t, masks, PyListVariables, map[string]any{"max": 100, "max_columns": 50})
	if rerr != "" {
		t.Fatalf("list_variables with base functions masked: %q", rerr)
	}
	for _, v := range reply["variables"].([]any) {
		v := v.(map[string]any)
		want := map[string]string{"v": "1.0 10.0 100.5", "ul": "list of 2", "length": "<function length>"}[v["name"].(string)]
		if want != "" && v["repr"] != want {
			t.Errorf("list_variables %s: repr %q, want %q", v["name"], v["repr"], want)
		}
	}

	reply, globals, rerr := runRHelper(t, setup, PyListVariables, map[string]any{"max": 3, "max_columns": 2})
	if rerr != "" || len(globals) > 0 {
		t.Fatalf("list_variables raised %q, defined %v", rerr, globals)
	}
	want := map[string]any{"total": 8.0, "variables": []any{
		map[string]any{"name": "big", "type": "integer", "dtype": "integer", "length": 1000.0, "repr": "1 2 3 4 5 6 ..."},
		map[string]any{"name": "d", "type": "Date", "dtype": "double", "length": 1.0, "repr": "2024-03-01"},
		map[string]any{"name": "df", "type": "data.frame", "shape": []any{3.0, 3.0}, "repr": "data.frame 3 rows x 3 columns: x, g, ... and 1 more"},
	}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("list_variables:\n got %v\nwant %v", reply, want)
	}
	reply, _, _ = runRHelper(t, setup, PyListVariables, map[string]any{"max": 100, "max_columns": 50})
	byName := map[string]any{}
	for _, v := range reply["variables"].([]any) {
		byName[v.(map[string]any)["name"].(string)] = v
	}
	for name, want := range map[string]any{
		"f": map[string]any{"name": "f", "type": "factor", "dtype": "factor", "length": 4.0, "repr": `factor with 2 levels: "lo" "hi" NA "lo"`},
		"l": map[string]any{"name": "l", "type": "list", "length": 4.0, "repr": `list of 4: "a" "b" "c" "d"`},
		"m": map[string]any{"name": "m", "type": "matrix", "shape": []any{2.0, 3.0}, "dtype": "integer", "repr": "matrix 2x3 of integer"},
	} {
		if !reflect.DeepEqual(byName[name], want) {
			t.Errorf("list_variables %s:\n got %v\nwant %v", name, byName[name], want)
		}
	}
}

func TestRHelperCall(t *testing.T) {
	// Only the helpers with an R version run on R; any other language is refused.
	for _, c := range []struct {
		lang, src string
		want      bool
	}{{"R", PyGetValue, true}, {"R", PyListVariables, true}, {"R", PyOLSStats, false}, {"julia", PyGetValue, false}} {
		code, isR := helperCall(c.lang, c.src, []byte(`{}`))
		if (code != "") != c.want || isR != c.want {
			t.Errorf("helperCall(%s, %.20q): code %t, R %t; want %t", c.lang, c.src, code != "", isR, c.want)
		}
	}
	if code, isR := helperCall("python", PyGetValue, []byte(`{}`)); code == "" || isR {
		t.Errorf("helperCall(python): code %t, R %t", code != "", isR)
	}
}

// An R reply that comes as a JSON object, not a string, is checked for the
// helper's error all the same.
func TestRResult(t *testing.T) {
	for _, raw := range []string{`{"km_error": "boom"}`, `"{\"km_error\": \"boom\"}"`} {
		_, err := rResult(json.RawMessage(raw))
		if pe, ok := err.(*PyError); !ok || pe.EValue != "boom" {
			t.Errorf("rResult(%s): %v, want the helper's error", raw, err)
		}
	}
	for _, raw := range []string{`{"type": "integer", "value": 1}`, `"{\"type\": \"integer\", \"value\": 1}"`} {
		got, err := rResult(json.RawMessage(raw))
		if err != nil || !json.Valid(got) || !strings.Contains(string(got), `"integer"`) {
			t.Errorf("rResult(%s): %s, %v", raw, got, err)
		}
	}
}
