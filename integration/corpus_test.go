//go:build unix

package integration

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// corpusOutput is what the corpus reads of run_code's structured content:
// what the charts tests read, and the run's stdout and error.
type corpusOutput struct {
	chartOutput
	Stdout string `json:"stdout"`
	Error  *struct {
		EName  string `json:"ename"`
		EValue string `json:"evalue"`
		Line   int    `json:"line"`
	} `json:"error"`
}

// corpusEntry is one output in the structured content: the result or a
// display.
type corpusEntry struct {
	where, text, from string
	mimes             []string
	chart             *chartSummary
}

func (o corpusOutput) entries() []corpusEntry {
	var es []corpusEntry
	if o.Result != "" || o.ResultChart != nil {
		es = append(es, corpusEntry{where: "result", text: o.Result, from: o.ResultFrom, chart: o.ResultChart})
	}
	for _, d := range o.Displays {
		es = append(es, corpusEntry{where: "display", text: d.Text, from: d.TextFrom, mimes: d.MimeTypes, chart: d.Chart})
	}
	return es
}

// wantChart is what a case's chart summary must say.
type wantChart struct {
	library string
	kinds   []string
	title   string
	series  []string // names, in order; nil: not checked
	facets  int      // facet count; 0: not checked
	panels  int      // subplots; 0: not checked
}

// corpusCase is one kind of output: code run in the corpus session, the
// substrings the model's text must hold, and the structured entry (result
// or display) that carries it.
type corpusCase struct {
	name string
	code string
	// text: substrings of text(res), in order.
	text []string
	// from is the text_from (result_from) of the entry that must carry
	// the substrings of entry; "" is text/plain.
	from  string
	entry []string
	// mime: a MIME type the display's mime_types must list.
	mime  string
	chart *wantChart
	// image: a PNG image content (matplotlib, seaborn, sympy).
	image bool
	// chartImage: a PNG of the chart (Plotly, Altair/Vega-Lite, SVG)
	// drawn by the server (package chartimage), not blank.
	chartImage bool
	// status, stdout and error: what else the run says ("" status: ok).
	status, stdout, errName string
}

// reprRE is a Python object's default repr, which says nothing of it.
var reprRE = regexp.MustCompile(`<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>|<[\w.]+ at 0x[0-9a-fA-F]+>`)

// The output corpus (issue 29): about thirty kinds of output a notebook
// shows, each made with the real library in one kernel session, read back
// through a real MCP client in both forms the model gets: the text content
// and the structured content. What a notebook shows reaches the model as
// text with its numbers, labels and titles: never an object's repr, never
// "(no output)".
func TestOutputCorpus(t *testing.T) {
	requirePython(t, "pandas", "numpy", "matplotlib", "plotly", "altair", "ipywidgets", "tqdm",
		"statsmodels", "nbformat", "bokeh", "seaborn", "polars", "sympy", "sklearn")
	requireChartBrowser(t)
	s := startServer(t)
	setup := `import numpy as np, pandas as pd
from IPython.display import display, Markdown, Latex, HTML, JSON, SVG
df = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2.5, 4, 3, 5, 7, 6.5], "g": ["a", "a", "a", "b", "b", "b"]})`
	if res, out := s.run("corpus", setup); out.Status != "ok" {
		t.Fatalf("setup: %s", text(res))
	}

	for _, c := range corpusCases() {
		t.Run(c.name, func(t *testing.T) {
			res := s.call("run_code", map[string]any{"session_id": "corpus", "code": c.code})
			out := structured[corpusOutput](t, res)
			txt := text(res)
			checkCorpusCase(t, c, res, out, txt)
		})
	}
}

func corpusCases() []corpusCase {
	return []corpusCase{
		{name: "plotly express", code: `import plotly.express as px
px.scatter(df, x="x", y="y", color="g", title="Growth")`,
			text: []string{`Plotly scatter chart "Growth"`, "x: x (1–6)", "y: y (2.5–7)", "2 series: a (3 points), b (3)"},
			from: "application/vnd.plotly.v1+json", mime: "application/vnd.plotly.v1+json",
			chart: &wantChart{library: "plotly", kinds: []string{"scatter"}, title: "Growth", series: []string{"a", "b"}}, chartImage: true},
		{name: "plotly make_subplots", code: `import plotly.graph_objects as go
from plotly.subplots import make_subplots
fig = make_subplots(rows=1, cols=2, subplot_titles=("Left", "Right"))
fig.add_trace(go.Bar(x=["p", "q"], y=[3, 9], name="bars"), row=1, col=1)
fig.add_trace(go.Scatter(x=[1, 2, 3], y=[4, 1, 8], name="line"), row=1, col=2)
fig.update_layout(title_text="Two panels")
fig`,
			text: []string{`Plotly bar/scatter chart "Two panels"`, "2 subplots", `[1] bar "Left" x: 2 categories: p, q, y: 3–9`, `[2] scatter "Right" x: 1–3, y: 1–8`, "bars (2 points), line (3)"},
			from: "application/vnd.plotly.v1+json", mime: "application/vnd.plotly.v1+json",
			chart: &wantChart{library: "plotly", kinds: []string{"bar", "scatter"}, title: "Two panels", series: []string{"bars", "line"}, panels: 2}, chartImage: true},
		{name: "altair layered", code: `import altair as alt
base = alt.Chart(df, title="Layered")
alt.layer(base.mark_line().encode(x="x", y="y"), base.mark_point().encode(x="x", y="y"))`,
			text: []string{`Vega-Lite line/point chart "Layered"`, "x: x (1–6), y: y (2.5–7)", "6 points"},
			from: "application/vnd.vegalite.v", chart: &wantChart{library: "vega-lite", kinds: []string{"line", "point"}, title: "Layered"}, chartImage: true},
		{name: "altair layered with +", code: `(alt.Chart(df).mark_bar().encode(x="g", y="sum(y)")
 + alt.Chart(df).mark_rule(color="red").encode(y="mean(y)")).properties(title="Bars and mean")`,
			text: []string{`Vega-Lite bar/rule chart "Bars and mean"`, "x: g (2 categories: a, b)", "sum of y"},
			from: "application/vnd.vegalite.v", chart: &wantChart{library: "vega-lite", kinds: []string{"bar", "rule"}, title: "Bars and mean"}, chartImage: true},
		{name: "altair facet", code: `alt.Chart(df, title="By group").mark_point().encode(x="x", y="y").facet(column="g")`,
			text: []string{`Vega-Lite point chart "By group"`, "x: x (1–6), y: y (2.5–7)", "2 facets by g (a, b)"},
			from: "application/vnd.vegalite.v", chart: &wantChart{library: "vega-lite", kinds: []string{"point"}, title: "By group", facets: 2}, chartImage: true},
		// Altair's mimetype renderer (JupyterLab's) sends the spec under its
		// Vega-Lite MIME type: Altair 6 names it "application/vnd.vegalite.v6.json".
		{name: "altair mimetype renderer", code: `alt.renderers.enable("mimetype")
alt.Chart(df, title="Totals").mark_bar().encode(x="g", y="sum(y)")`,
			text: []string{`Vega-Lite bar chart "Totals"`, "x: g (2 categories: a, b), y: sum of y"},
			from: "application/vnd.vegalite.v", chart: &wantChart{library: "vega-lite", kinds: []string{"bar"}, title: "Totals"}, chartImage: true},
		{name: "vega-lite v5", code: `spec = alt.Chart(df, title="Spec v5").mark_area().encode(x="x", y="y").to_dict()
spec["$schema"] = "https://vega.github.io/schema/vega-lite/v5.json"
display({"application/vnd.vegalite.v5+json": spec, "text/plain": "<VegaLite 5 object>"}, raw=True)`,
			text: []string{`Vega-Lite area chart "Spec v5"`, "x: x (1–6), y: y (2.5–7)"},
			from: "application/vnd.vegalite.v5+json", mime: "application/vnd.vegalite.v5+json",
			chart: &wantChart{library: "vega-lite", kinds: []string{"area"}, title: "Spec v5"}, chartImage: true},
		{name: "styler highlight_max", code: `df.style.highlight_max(subset=["y"])`,
			text: []string{"   x  y         g\n", "4  5  7.000000  b"},
			from: "text/html", entry: []string{"4  5  7.000000  b"}},
		{name: "styler background_gradient", code: `df[["x", "y"]].describe().style.background_gradient()`,
			text: []string{"mean   3.500000  4.666667", "max    6.000000  7.000000"},
			from: "text/html", entry: []string{"mean   3.500000  4.666667"}},
		{name: "markdown", code: `display(Markdown("# Report\n**total**: 42"))`,
			text: []string{"# Report\n**total**: 42"}, from: "text/markdown", entry: []string{"**total**: 42"}, mime: "text/markdown"},
		{name: "latex", code: `display(Latex(r"$E = mc^2$"))`,
			text: []string{"$E = mc^2$"}, from: "text/latex", entry: []string{"$E = mc^2$"}, mime: "text/latex"},
		{name: "svg", code: `SVG('<svg xmlns="http://www.w3.org/2000/svg" width="120" height="50"><rect width="60" height="30" fill="red"/><text x="5" y="45">hello svg</text></svg>')`,
			text: []string{"hello svg"}, from: "image/svg+xml", entry: []string{"hello svg"}, chartImage: true},
		{name: "matplotlib svg", code: `import matplotlib.pyplot as plt
from matplotlib_inline.backend_inline import set_matplotlib_formats
set_matplotlib_formats("svg")
plt.plot([1, 2, 3], [3, 1, 2]); plt.title("svg plot"); plt.show()
set_matplotlib_formats("png")`,
			entry: []string{"<Figure size 640x480 with 1 Axes>"}, mime: "image/svg+xml", chartImage: true},
		{name: "sympy", code: `import sympy as sp
sp.init_printing()
x = sp.symbols("x")
sp.integrate(x**2 * sp.sin(x), x)`,
			text: []string{`$\displaystyle - x^{2} \cos{\left(x \right)} + 2 x \sin{\left(x \right)} + 2 \cos{\left(x \right)}$`},
			from: "text/latex", entry: []string{`2 x \sin{\left(x \right)}`}, image: true},
		{name: "ipywidgets IntSlider", code: `import ipywidgets as w
w.IntSlider(value=3, max=10, description="n")`,
			text: []string{`IntSlider "n": 3 (0–10, step 1)`}, from: "application/vnd.jupyter.widget-view+json", entry: []string{`IntSlider "n": 3`}},
		{name: "Output widget", code: `out = w.Output()
with out:
    print("captured line")
out`,
			text: []string{"captured line"}, from: "application/vnd.jupyter.widget-view+json", entry: []string{"captured line"}},
		{name: "interact", code: `def f(k):
    print("k is", k)
    return k * 2
w.interact(f, k=5);`,
			text: []string{`IntSlider "k": 5 (-5–15, step 1)`, "k is 5", "10"}, from: "application/vnd.jupyter.widget-view+json",
			entry: []string{`IntSlider "k": 5`, "k is 5"}, mime: "application/vnd.jupyter.widget-view+json"},
		{name: "tqdm.auto", code: `from tqdm.auto import tqdm
for i in tqdm(range(7), desc="steps"):
    pass`,
			text: []string{"steps: 100%|██████████| 7/7 ["}, from: "application/vnd.jupyter.widget-view+json", entry: []string{"7/7"}},
		{name: "polars DataFrame", code: `import polars as pl
pl.DataFrame({"city": ["Oslo", "Lima"], "temp": [3.5, 19.25]})`,
			text: []string{"shape: (2, 2)", "│ city ┆ temp  │", "│ Lima ┆ 19.25 │"}, entry: []string{"Oslo", "19.25"}},
		{name: "statsmodels OLS summary", code: `import statsmodels.api as sm
import warnings
warnings.simplefilter("ignore")  # too few observations for the normality test
sm.OLS(df["y"], sm.add_constant(df["x"])).fit().summary()`,
			text:  []string{"OLS Regression Results", "R-squared:", "0.816", "const          1.5667", "x              0.8857"},
			entry: []string{"Dep. Variable:", "No. Observations:"}},
		{name: "scikit-learn estimator", code: `from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.linear_model import LogisticRegression
make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=200))`,
			text:  []string{"Pipeline(steps=[('standardscaler', StandardScaler()),", "LogisticRegression(C=0.5, max_iter=200)"},
			entry: []string{"LogisticRegression(C=0.5, max_iter=200)"}},
		{name: "bokeh", code: `from bokeh.plotting import figure, show
from bokeh.io import output_notebook
output_notebook(hide_banner=True)
p = figure(title="Bokeh line", x_axis_label="day", y_axis_label="sales")
p.line([1, 2, 3], [4, 6, 5], legend_label="sales")
show(p)`,
			text: []string{`Bokeh line chart "Bokeh line" — x: day (1–3), y: sales (4–6); 1 series: sales (3 points)`},
			from: "application/vnd.bokehjs_exec.v0+json", mime: "application/vnd.bokehjs_exec.v0+json",
			chart: &wantChart{library: "bokeh", kinds: []string{"line"}, title: "Bokeh line", series: []string{"sales"}}},
		{name: "seaborn", code: `import seaborn as sns
sns.barplot(data=df, x="g", y="y"); plt.title("seaborn bars"); plt.show()`,
			entry: []string{"<Figure size 640x480 with 1 Axes>"}, mime: "image/png", image: true},
		{name: "matplotlib png", code: `plt.plot([1, 2, 3], [3, 1, 2]); plt.title("png plot"); plt.show()`,
			entry: []string{"<Figure size 640x480 with 1 Axes>"}, mime: "image/png", image: true},
		{name: "pandas DataFrame", code: `df`,
			text: []string{"   x    y  g\n0  1  2.5  a\n", "5  6  6.5  b"}, entry: []string{"4  5  7.0  b"}},
		{name: "display HTML table", code: `display(HTML("<style>td {color: red}</style><table><tr><th>name</th><th>qty</th></tr><tr><td>apple</td><td>3</td></tr><tr><td>kiwi</td><td>12</td></tr></table>"))`,
			text: []string{"name   qty\napple  3\nkiwi   12"}, from: "text/html", entry: []string{"kiwi   12"}, mime: "text/html"},
		{name: "IPython JSON", code: `JSON({"answer": 42, "items": ["a", "b"]})`,
			text: []string{`{"answer":42,"items":["a","b"]}`}, from: "application/json", entry: []string{`"answer":42`}},
		{name: "print", code: `print("hello", 6 * 7)`, text: []string{"hello 42"}, stdout: "hello 42\n"},
		{name: "exception", code: "def boom(n):\n    return n / 0\nboom(3)",
			text:   []string{"ZeroDivisionError on line 2: division by zero", "----> 3 boom(3)", "----> 2     return n / 0"},
			status: "error", errName: "ZeroDivisionError"},
	}
}

func checkCorpusCase(t *testing.T, c corpusCase, res *mcp.CallToolResult, out corpusOutput, txt string) {
	t.Helper()
	status := c.status
	if status == "" {
		status = "ok"
	}
	if out.Status != status {
		t.Fatalf("status %q, want %q:\n%s", out.Status, status, txt)
	}
	if strings.Contains(txt, "(no output)") {
		t.Errorf("text says (no output)")
	}
	rest := txt
	for _, w := range c.text {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("text lacks %q (or has it out of order):\n%s", w, txt)
			continue
		}
		rest = rest[i+len(w):]
	}
	if m := reprRE.FindString(txt); m != "" {
		t.Errorf("text shows an object's repr %q:\n%s", m, txt)
	}
	entries := out.entries()
	for _, e := range entries {
		if m := reprRE.FindString(e.text); m != "" {
			t.Errorf("structured %s shows an object's repr %q: %+v", e.where, m, e)
		}
	}
	if out.Stdout != c.stdout {
		t.Errorf("stdout %q, want %q", out.Stdout, c.stdout)
	}
	if c.errName != "" && (out.Error == nil || out.Error.EName != c.errName) {
		t.Errorf("error %+v, want %s", out.Error, c.errName)
	}

	// The entry that carries the output: the first whose text_from is c.from
	// (a prefix, for Vega-Lite's versions) and, for a display, whose
	// mime_types list c.mime.
	if len(c.entry) > 0 || c.chart != nil || c.from != "" || c.mime != "" {
		var e *corpusEntry
		for i := range entries {
			en := &entries[i]
			if strings.HasPrefix(en.from, c.from) && (c.from != "" || en.from == "") &&
				(c.mime == "" || slices.Contains(en.mimes, c.mime)) {
				e = en
				break
			}
		}
		if e == nil {
			t.Fatalf("no structured entry from %q with MIME type %q: %+v", c.from, c.mime, out)
		}
		for _, w := range c.entry {
			if !strings.Contains(e.text, w) {
				t.Errorf("structured %s lacks %q: %q", e.where, w, e.text)
			}
		}
		checkCorpusChart(t, c.chart, e)
	}

	if c.image {
		if !hasPNG(t, res) {
			t.Errorf("no image/png content; content: %s", contentKinds(res))
		}
	}
	if c.chartImage {
		wantChartImage(t, res)
	}
}

func checkCorpusChart(t *testing.T, w *wantChart, e *corpusEntry) {
	t.Helper()
	if w == nil {
		if e.chart != nil {
			t.Errorf("structured %s has a chart %+v", e.where, e.chart)
		}
		return
	}
	c := e.chart
	if c == nil {
		t.Fatalf("structured %s has no chart: %+v", e.where, *e)
	}
	if c.Library != w.library || !slices.Equal(c.Kinds, w.kinds) || c.Title != w.title {
		t.Errorf("chart %s %v %q, want %s %v %q", c.Library, c.Kinds, c.Title, w.library, w.kinds, w.title)
	}
	if w.series != nil {
		var names []string
		for _, s := range c.Series {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, w.series) {
			t.Errorf("chart series %v, want %v", names, w.series)
		}
	}
	if w.facets > 0 && (c.Facet == nil || c.Facet.Count != w.facets) {
		t.Errorf("chart facet %+v, want %d facets", c.Facet, w.facets)
	}
	if w.panels > 0 && len(c.Subplots) != w.panels {
		t.Errorf("chart has %d subplots, want %d", len(c.Subplots), w.panels)
	}
	// The summary is the structured chart; the entry's text only says how
	// to get an image, so nothing is carried twice.
	if strings.Contains(e.text, "series") || strings.Contains(e.text, c.Title) && c.Title != "" {
		t.Errorf("structured %s text repeats the summary: %q", e.where, e.text)
	}
}

// pngImages are the image/png contents of a result, decoded.
func pngImages(t testing.TB, res *mcp.CallToolResult) []image.Image {
	t.Helper()
	var imgs []image.Image
	for _, c := range res.Content {
		ic, ok := c.(*mcp.ImageContent)
		if !ok || ic.MIMEType != "image/png" {
			continue
		}
		data := ic.Data
		// The SDK carries Data decoded; a base64 string is tolerated.
		if dec, err := base64.StdEncoding.DecodeString(string(data)); err == nil && len(dec) > 8 {
			data = dec
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Errorf("image/png content does not decode: %v", err)
			continue
		}
		imgs = append(imgs, img)
	}
	return imgs
}

// hasPNG reports whether the result holds a decodable, non-blank PNG.
func hasPNG(t testing.TB, res *mcp.CallToolResult) bool {
	t.Helper()
	for _, img := range pngImages(t, res) {
		if distinctColours(img) > 2 {
			return true
		}
	}
	return false
}

// wantChartImage asserts that the result holds an image/png content that
// decodes and is not blank: more than 2 distinct colours in a sampled
// grid (a chart has a background, axes or marks, and data colours).
func wantChartImage(t testing.TB, res *mcp.CallToolResult) {
	t.Helper()
	imgs := pngImages(t, res)
	if len(imgs) == 0 {
		t.Errorf("no image/png content for the chart; content: %s", contentKinds(res))
		return
	}
	for _, img := range imgs {
		if n := distinctColours(img); n <= 2 {
			t.Errorf("the chart's image (%v) is blank: %d distinct colours sampled", img.Bounds(), n)
		}
	}
}

// distinctColours counts the colours at a 64x64 grid of points of img.
func distinctColours(img image.Image) int {
	b := img.Bounds()
	seen := map[[4]uint32]bool{}
	const n = 64
	for i := range n {
		for j := range n {
			x := b.Min.X + (b.Dx()-1)*i/(n-1)
			y := b.Min.Y + (b.Dy()-1)*j/(n-1)
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// contentKinds lists a result's content types, for failure messages.
func contentKinds(res *mcp.CallToolResult) string {
	var k []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			k = append(k, "text")
		case *mcp.ImageContent:
			k = append(k, "image("+c.MIMEType+")")
		case *mcp.ResourceLink:
			k = append(k, "link("+c.MIMEType+")")
		default:
			k = append(k, "other")
		}
	}
	return strings.Join(k, ", ")
}

// With KERNEL_MCP_BROWSER=none the server draws no chart: a Plotly figure
// and an Altair chart reach the model as their summary and the one line
// that says how the kernel can draw an image, and no image.
func TestOutputCorpusNoRenderer(t *testing.T) {
	requirePython(t, "pandas", "plotly", "altair", "nbformat")
	s := startServerEnv(t, []string{"KERNEL_MCP_BROWSER=none"})
	s.run("nr", `import pandas as pd
df = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2.5, 4, 3, 5, 7, 6.5], "g": ["a", "a", "a", "b", "b", "b"]})`)
	for _, c := range []struct {
		name, code string
		want       []string
	}{
		{"plotly", "import plotly.express as px\npx.scatter(df, x=\"x\", y=\"y\", color=\"g\", title=\"Growth\")",
			[]string{`Plotly scatter chart "Growth"`, "2 series: a (3 points), b (3)", `[no image of this chart here; fig.show("png")`}},
		{"altair", "import altair as alt\nalt.Chart(df, title=\"Growth\").mark_line().encode(x=\"x\", y=\"y\", color=\"g\")",
			[]string{`Vega-Lite line chart "Growth"`, "2 series: a (3 points), b (3)", "[no image of this chart here;", "vl-convert-python"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := s.call("run_code", map[string]any{"session_id": "nr", "code": c.code})
			txt := text(res)
			for _, w := range c.want {
				if !strings.Contains(txt, w) {
					t.Errorf("text lacks %q:\n%s", w, txt)
				}
			}
			if n := strings.Count(txt, "[no image of this chart here"); n != 1 {
				t.Errorf("the hint is there %d times, want once:\n%s", n, txt)
			}
			for _, ct := range res.Content {
				if _, ok := ct.(*mcp.ImageContent); ok {
					t.Errorf("an image with KERNEL_MCP_BROWSER=none; content: %s", contentKinds(res))
				}
			}
			out := structured[corpusOutput](t, res)
			if ch := out.ResultChart; ch == nil && len(out.Displays) > 0 {
				ch = out.Displays[0].Chart
				if ch == nil || ch.Title != "Growth" {
					t.Errorf("structured chart %+v", ch)
				}
			} else if ch == nil || ch.Title != "Growth" {
				t.Errorf("structured result_chart %+v", ch)
			}
		})
	}
}
