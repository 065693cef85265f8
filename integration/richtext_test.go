//go:build unix

package integration

import (
	"strings"
	"testing"
)

// richOutput is the part of run_code's structured content that says where
// each output's text came from.
type richOutput struct {
	Status     string `json:"status"`
	Result     string `json:"result"`
	ResultFrom string `json:"result_from"`
	Displays   []struct {
		MimeTypes []string `json:"mime_types"`
		Text      string   `json:"text"`
		TextFrom  string   `json:"text_from"`
	} `json:"displays"`
}

// Rich outputs reach the model as their content, not as the repr of the
// object that made them: Markdown and LaTeX as their source, a Styler and
// display(HTML(...)) as the text of their HTML (tables aligned, no script),
// raw JSON compacted with its big integer exact; a DataFrame keeps its own
// text/plain.
func TestRichOutputText(t *testing.T) {
	t.Parallel()
	requirePython(t, "pandas", "matplotlib")
	s := startServer(t)

	call := func(code string) (string, richOutput) {
		t.Helper()
		res := s.call("run_code", map[string]any{"session_id": "rich", "code": code})
		out := structured[richOutput](t, res)
		txt := text(res)
		if res.IsError || out.Status != "ok" {
			t.Fatalf("%s: status %s\n%s", code, out.Status, txt)
		}
		if strings.Contains(txt, " at 0x") || strings.Contains(txt, "core.display") {
			t.Errorf("%s: the text shows an object's repr:\n%s", code, txt)
		}
		return txt, out
	}

	txt, out := call(`from IPython.display import display, Markdown, Latex, HTML
display(Markdown('# Title\n*x*'))
display(Latex(r'$\alpha^2$'))`)
	if want := "# Title\n*x*\n$\\alpha^2$"; txt != want {
		t.Errorf("markdown and latex: text %q, want %q", txt, want)
	}
	if len(out.Displays) != 2 ||
		out.Displays[0].Text != "# Title\n*x*" || out.Displays[0].TextFrom != "text/markdown" ||
		out.Displays[1].Text != `$\alpha^2$` || out.Displays[1].TextFrom != "text/latex" {
		t.Errorf("markdown and latex: displays %+v", out.Displays)
	}

	txt, out = call(`import pandas as pd
df = pd.DataFrame({'a': [1.5, 2.25, 3.0], 'b': [10, 20, 30]})
df.describe().style.background_gradient()`)
	for _, want := range []string{"       a         b\n", "count  3.000000  3.000000\n", "mean   2.250000  20.000000\n", "max    3.000000  30.000000"} {
		if !strings.Contains(txt, want) || !strings.Contains(out.Result, want) {
			t.Errorf("styler: want %q in the text and result\ntext:\n%s\nresult:\n%s", want, txt, out.Result)
		}
	}
	if out.ResultFrom != "text/html" || strings.Contains(out.Result, "background-color") {
		t.Errorf("styler: result from %q:\n%s", out.ResultFrom, out.Result)
	}

	txt, out = call(`display(HTML('<style>td {color: red}</style><table><tr><th>name</th><th>qty</th></tr>'
             '<tr><td>apple</td><td>3</td></tr></table><script>var SECRET = 1;</script>'))`)
	if want := "name   qty\napple  3"; txt != want || len(out.Displays) != 1 || out.Displays[0].Text != want || out.Displays[0].TextFrom != "text/html" {
		t.Errorf("display(HTML): text %q, displays %+v; want %q", txt, out.Displays, want)
	}

	txt, out = call(`display({'application/json': {'big': 123456789012345678901234567890, 'k': [1.5, 'v']}}, raw=True)`)
	if want := `{"big":123456789012345678901234567890,"k":[1.5,"v"]}`; txt != want || len(out.Displays) != 1 || out.Displays[0].Text != want || out.Displays[0].TextFrom != "application/json" {
		t.Errorf("json: text %q, displays %+v; want %q", txt, out.Displays, want)
	}

	txt, out = call(`df`)
	if want := "      a   b\n0  1.50  10\n1  2.25  20\n2  3.00  30"; txt != want || out.Result != want || out.ResultFrom != "" {
		t.Errorf("DataFrame: text %q, result %q from %q; want its text/plain %q", txt, out.Result, out.ResultFrom, want)
	}
}
