package outputtext

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// bundle builds an output bundle from MIME type to value, strings encoded
// as JSON strings and json.RawMessage values kept as they are.
func bundle(kv ...any) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case json.RawMessage:
			m[kv[i].(string)] = v
		default:
			b, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			m[kv[i].(string)] = b
		}
	}
	return m
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFromBundle(t *testing.T) {
	// testdata/styler*.html are pandas 3.1's Styler HTML:
	// df.describe().style.background_gradient() and a frame with a
	// two-level column index (colspan in the header).
	styler := readTestdata(t, "styler.html")
	stylerMulti := readTestdata(t, "styler_multi.html")
	const stylerRepr = "<pandas.io.formats.style.Styler at 0x7feb1c2d3e40>"
	tests := []struct {
		name       string
		data       map[string]json.RawMessage
		want, mime string
	}{
		{
			name: "markdown",
			data: bundle("text/plain", "<IPython.core.display.Markdown object>", "text/markdown", "# Title\n*x*"),
			want: "# Title\n*x*", mime: Markdown,
		},
		{
			name: "latex",
			data: bundle("text/plain", "<IPython.core.display.Latex object>", "text/latex", `$\alpha^2$`),
			want: `$\alpha^2$`, mime: Latex,
		},
		{
			name: "latex over a real text/plain (sympy)",
			data: bundle("text/plain", "α²", "text/latex", `$\displaystyle \alpha^{2}$`),
			want: `$\displaystyle \alpha^{2}$`, mime: Latex,
		},
		{
			name: "text/plain over a LaTeX tabular (statsmodels summary)",
			data: bundle("text/plain", "  OLS Regression Results\n  R-squared: 0.816", "text/latex", "\\begin{center}\n\\begin{tabular}{lclc}\n\\textbf{R-squared:} & 0.816 \\\\\n\\end{tabular}\n\\end{center}", "text/html", "<table><tr><td>R-squared:</td><td>0.816</td></tr></table>"),
			want: "  OLS Regression Results\n  R-squared: 0.816", mime: Plain,
		},
		{
			name: "LaTeX tabular over a bare repr",
			data: bundle("text/plain", "<Foo object at 0x7f00>", "text/latex", "\\begin{tabular}{l}x\\end{tabular}"),
			want: "\\begin{tabular}{l}x\\end{tabular}", mime: Latex,
		},
		{
			name: "display math over a real text/plain",
			data: bundle("text/plain", "x = 1", "text/latex", "\\[ x = 1 \\]"),
			want: "\\[ x = 1 \\]", mime: Latex,
		},
		{
			name: "svg: its text for a bare repr",
			data: bundle("text/plain", "<IPython.core.display.SVG object>", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><title>Sales</title><rect width="6"/><text x="5" y="40">hello <tspan>svg</tspan></text><text>	 2024 </text></svg>`),
			want: "Sales\nhello svg\n2024", mime: SVG,
		},
		{
			name: "svg without text: no repr",
			data: bundle("text/plain", "<IPython.core.display.SVG object>", "image/svg+xml", `<svg><path d="M0 0"/><!-- a title --></svg>`),
			want: "", mime: "",
		},
		{
			name: "png: no repr",
			data: bundle("text/plain", "<IPython.core.display.Image object>", "image/png", "iVBORw0KGgo="),
			want: "", mime: "",
		},
		{
			name: "figure: its text/plain kept",
			data: bundle("text/plain", "<Figure size 640x480 with 1 Axes>", "image/svg+xml", `<svg><path d="M0 0"/></svg>`),
			want: "<Figure size 640x480 with 1 Axes>", mime: Plain,
		},
		{
			name: "json compact with exact numbers",
			data: bundle("application/json", json.RawMessage("{\n  \"big\": 123456789012345678901234567890,\n  \"f\": 0.1000000000000000055511151231257827,\n  \"s\": \"a b\",\n  \"l\": [1, 2]\n}")),
			want: `{"big":123456789012345678901234567890,"f":0.1000000000000000055511151231257827,"s":"a b","l":[1,2]}`, mime: JSON,
		},
		{
			name: "json of IPython.display.JSON",
			data: bundle("text/plain", "<IPython.core.display.JSON object>", "application/json", json.RawMessage(`{"a": [true, null]}`)),
			want: `{"a":[true,null]}`, mime: JSON,
		},
		{
			name: "styler",
			data: bundle("text/plain", stylerRepr, "text/html", styler),
			want: "" +
				"       a         b\n" +
				"count  3.000000  3.000000\n" +
				"mean   2.250000  20.000000\n" +
				"std    0.750000  10.000000\n" +
				"min    1.500000  10.000000\n" +
				"25%    1.875000  15.000000\n" +
				"50%    2.250000  20.000000\n" +
				"75%    2.625000  25.000000\n" +
				"max    3.000000  30.000000",
			mime: HTML,
		},
		{
			name: "styler with a column multi-index",
			data: bundle("text/plain", "<pandas.io.formats.style.Styler object at 0x7f00aa>", "text/html", stylerMulti),
			want: "" +
				"   A     B\n" +
				"   p  q  r\n" +
				"0  1  2  3\n" +
				"1  4  5  6",
			mime: HTML,
		},
		{
			name: "display(HTML) with script, style and a comment",
			data: bundle("text/plain", "<IPython.core.display.HTML object>", "text/html",
				`<style>b { color: red }</style><script>var secret = "SCRIPT";</script><!-- COMMENT -->`+
					`<h2>Report</h2><p>Some <b>bold</b>
   text and a <a href="https://example.com/">link</a>.</p>`+
					`<ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul><ol><li>first</li><li>second</li></ol>`+
					`<div>block</div><div>another<br>line</div><pre>a  b
  c</pre><img src="x.png" alt="a  chart">`),
			want: "Report\n\nSome bold text and a link.\n\n" +
				"- one\n- two\n  - inner\n1. first\n2. second\n" +
				"block\nanother\nline\n\na  b\n  c\n\n[image: a chart]",
			mime: HTML,
		},
		{
			name: "nested table and spans",
			data: bundle("text/html",
				`<table><thead><tr><th>key</th><th>value</th></tr></thead>`+
					`<tr><td>inner</td><td><table><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table></td></tr>`+
					`<tr><td rowspan="2">r</td><td>s</td></tr><tr><td>t</td></tr>`+
					`<tr><td colspan="2">wide cell</td></tr><tr><td>end</td><td>x</td></tr></table>`),
			want: "" +
				"key        value\n" +
				"inner      [1 | 2; 3 | 4]\n" +
				"r          s\n" +
				"           t\n" +
				"wide cell\n" +
				"end        x",
			mime: HTML,
		},
		{
			name: "a real repr stays (DataFrame)",
			data: bundle("text/plain", "   a\n0  1", "text/html", "<table><tr><td>1</td></tr></table>"),
			want: "   a\n0  1", mime: Plain,
		},
		{
			name: "a number",
			data: bundle("text/plain", "42"),
			want: "42", mime: Plain,
		},
		{
			name: "nbformat list of lines",
			data: bundle("text/plain", []string{"a\n", "b"}),
			want: "a\nb", mime: Plain,
		},
		{
			name: "html without text keeps the repr",
			data: bundle("text/plain", "<Widget object>", "text/html", "<script>render()</script>"),
			want: "<Widget object>", mime: Plain,
		},
		{
			name: "empty text/plain",
			data: bundle("text/plain", "", "text/html", "<p>only html</p>"),
			want: "only html", mime: HTML,
		},
		{
			name: "image only",
			data: bundle("image/png", "iVBORw0KGgo="),
			want: "", mime: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, mime := FromBundle(tc.data)
			if got != tc.want || mime != tc.mime {
				t.Errorf("FromBundle = %q from %q\nwant %q from %q", got, mime, tc.want, tc.mime)
			}
		})
	}
}

func TestUselessPlain(t *testing.T) {
	for s, want := range map[string]bool{
		"":                                   true,
		"  \n":                               true,
		"<IPython.core.display.HTML object>": true,
		"<pandas.io.formats.style.Styler at 0x7feb1c2d3e40>": true,
		"<__main__.Foo object at 0x7f3a2b1c0d90>":            true,
		"<function f at 0x7f3a2b1c0d90>":                     true,
		"42":                                                 false,
		"   a\n0  1":                                         false,
		"<Figure size 640x480 with 1 Axes>":                  false,
		"<b>bold</b>":                                        false,
		"[<Foo object at 0x1>, <Foo object at 0x2>]":         false,
		"<Foo object at 0x1>\n<Foo object at 0x2>":           false,
	} {
		if got := UselessPlain(s); got != want {
			t.Errorf("UselessPlain(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestHTMLTextBounds(t *testing.T) {
	t.Run("input", func(t *testing.T) {
		src := "<p>hello</p><script>" + strings.Repeat("x", MaxHTMLInput) + "</script><p>NEVER</p>"
		got := HTMLText(src)
		if want := "hello\n[HTML cut: only its first 2 MB were read]"; got != want {
			t.Errorf("HTMLText = %q, want %q", got, want)
		}
	})
	t.Run("output", func(t *testing.T) {
		src := strings.Repeat("<p>wörd</p>", MaxHTMLInput/len("<p>wörd</p>")+10)
		got := HTMLText(src)
		const note = "\n[text cut: the HTML's text is longer than 100000 bytes]"
		if !strings.HasSuffix(got, note) || len(got) > MaxHTMLText+len(note) {
			t.Fatalf("HTMLText gave %d bytes ending %q", len(got), got[max(0, len(got)-80):])
		}
		if !strings.HasPrefix(got, "wörd\n\nwörd\n\n") || strings.Contains(got, "\uFFFD") {
			t.Errorf("HTMLText starts %q", got[:40])
		}
	})
	t.Run("table spans", func(t *testing.T) {
		// Spans declare a grid far larger than the HTML.
		src := "<table>" + strings.Repeat(`<tr><td colspan="1000" rowspan="65534">x</td></tr>`, 5000) + "</table>"
		got := HTMLText(src)
		if !strings.HasSuffix(got, "bytes]") {
			t.Errorf("HTMLText of a span bomb = %q, want a cut note", got[max(0, len(got)-80):])
		}
	})
	t.Run("huge table", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("<table><tr><th>i</th><th>sq</th></tr>")
		for i := 0; b.Len() < MaxHTMLInput+1000; i++ {
			b.WriteString("<tr><td>row</td><td>value</td></tr>")
		}
		b.WriteString("</table>")
		got := HTMLText(b.String())
		if !strings.HasPrefix(got, "i    sq\nrow  value\n") || !strings.Contains(got, "[text cut") {
			t.Errorf("HTMLText of a huge table: %q … %q", got[:40], got[max(0, len(got)-80):])
		}
	})
}
