//go:build unix

package integration

import (
	"strings"
	"testing"
)

// chartOutput is what the charts tests read of a result's structured
// content.
type chartOutput struct {
	Status      string        `json:"status"`
	Result      string        `json:"result"`
	ResultFrom  string        `json:"result_from"`
	ResultChart *chartSummary `json:"result_chart"`
	Displays    []struct {
		MimeTypes []string      `json:"mime_types"`
		Text      string        `json:"text"`
		TextFrom  string        `json:"text_from"`
		Chart     *chartSummary `json:"chart"`
		Resource  string        `json:"resource"`
	} `json:"displays"`
}

type chartSummary struct {
	Library string   `json:"library"`
	Kinds   []string `json:"kinds"`
	Title   string   `json:"title"`
	Series  []struct {
		Name   string `json:"name"`
		Points int    `json:"points"`
	} `json:"series"`
	Facet *struct {
		Count int `json:"count"`
	} `json:"facet"`
	Subplots []struct {
		Title string `json:"title"`
	} `json:"subplots"`
}

// A Plotly figure and an Altair chart reach the model as what they show:
// a summary (kind, title, axes, series with their points) and a line
// saying how the kernel can draw an image, in the text and, as JSON, in
// the structured content; never "(no output)" or "alt.Chart(...)". The
// server here has no browser to draw them (--browser none); the corpus
// test (corpus_test.go) has the images.
func TestChartsReachTheModelAsSummaries(t *testing.T) {
	t.Parallel()
	requirePython(t, "plotly", "altair", "pandas", "nbformat")
	s := startServer(t, "--browser", "none")
	s.run("c", `import pandas as pd
df = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2.5, 4, 3, 5, 7, 6.5], "g": ["a", "a", "a", "b", "b", "b"]})`)

	t.Run("plotly", func(t *testing.T) {
		res, _ := s.run("c", `import plotly.express as px
px.scatter(df, x="x", y="y", color="g", title="Growth")`)
		out := structured[chartOutput](t, res)
		txt := text(res)
		for _, w := range []string{`Plotly scatter chart "Growth"`, "x: x (1–6)", "y: y (2.5–7)", "2 series: a (3 points), b (3)", `fig.show("png")`} {
			if !strings.Contains(txt, w) {
				t.Errorf("text lacks %q:\n%s", w, txt)
			}
		}
		if strings.Contains(txt, "(no output)") {
			t.Errorf("text says (no output):\n%s", txt)
		}
		var c *chartSummary
		for _, d := range out.Displays {
			if d.Chart != nil {
				c = d.Chart
				if d.TextFrom != "application/vnd.plotly.v1+json" || !strings.Contains(d.Text, "kaleido") || strings.Contains(d.Text, "series") {
					t.Errorf("chart display: text_from %q, text %q (want the image line only)", d.TextFrom, d.Text)
				}
			}
		}
		if c == nil && out.ResultChart != nil {
			c = out.ResultChart
		}
		if c == nil || c.Library != "plotly" || c.Title != "Growth" || len(c.Series) != 2 || c.Series[0].Name != "a" || c.Series[0].Points != 3 {
			t.Errorf("structured chart: %+v (displays %+v)", c, out.Displays)
		}
	})

	t.Run("altair", func(t *testing.T) {
		res, _ := s.run("c", `import altair as alt
alt.Chart(df, title="Growth").mark_line().encode(x="x", y="y", color="g")`)
		out := structured[chartOutput](t, res)
		txt := text(res)
		for _, w := range []string{`Vega-Lite line chart "Growth"`, "2 series: a (3 points), b (3)", "vl-convert-python"} {
			if !strings.Contains(txt, w) {
				t.Errorf("text lacks %q:\n%s", w, txt)
			}
		}
		if strings.Contains(txt, "alt.Chart(...)") || strings.Contains(txt, "cdn.jsdelivr") {
			t.Errorf("text shows the chart's repr or script:\n%s", txt)
		}
		if c := out.ResultChart; c == nil || c.Library != "vega-lite" || len(c.Kinds) != 1 || c.Kinds[0] != "line" || len(c.Series) != 2 {
			t.Errorf("result_chart: %+v (result %q from %q)", c, out.Result, out.ResultFrom)
		}
	})

	// Altair's mimetype renderer (as in JupyterLab) sends the spec under
	// "application/vnd.vegalite.v6.json".
	t.Run("altair mimetype", func(t *testing.T) {
		res, _ := s.run("c", `alt.renderers.enable("mimetype")
alt.Chart(df).mark_bar().encode(x="g", y="sum(y)")`)
		out := structured[chartOutput](t, res)
		if c := out.ResultChart; c == nil || c.Library != "vega-lite" || len(c.Kinds) != 1 || c.Kinds[0] != "bar" {
			t.Errorf("result_chart: %+v (result %q from %q)\n%s", c, out.Result, out.ResultFrom, text(res))
		}
		if !strings.Contains(text(res), "Vega-Lite bar chart") {
			t.Errorf("text:\n%s", text(res))
		}
	})
}
