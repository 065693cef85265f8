package outputtext

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func fixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A chart reaches a reader as its summary and a line saying how the kernel
// can draw it, whatever else the bundle holds; the summary is kept for
// structured content.
func TestDescribeCharts(t *testing.T) {
	plotly := fixture(t, "chartsummary/testdata/px_scatter_iris.plotly.json")
	cases := []struct {
		name     string
		bundle   map[string]json.RawMessage
		from     string
		want     []string
		noChart  bool
		notWants []string
	}{
		{
			name:   "plotly",
			bundle: bundle("application/vnd.plotly.v1+json", json.RawMessage(plotly), "text/html", "<div>figure</div>"),
			from:   "application/vnd.plotly.v1+json",
			want:   []string{"Plotly scatter chart", "setosa (50 points)", `fig.show("png")`, "kaleido"},
		},
		{
			name:   "vega-lite mimetype",
			bundle: bundle("application/vnd.vegalite.v6+json", json.RawMessage(fixture(t, "chartsummary/testdata/alt_point_color.vl.json")), "text/plain", "alt.Chart(...)"),
			from:   "application/vnd.vegalite.v6+json",
			want:   []string{"Vega-Lite", "vl-convert-python"},
		},
		{
			name:     "altair html",
			bundle:   bundle("text/html", fixture(t, "testdata/altair.html"), "text/plain", "alt.Chart(...)"),
			from:     "application/vnd.vegalite.v6+json",
			want:     []string{`"Growth"`, "point", "a (3", "b (3", "vl-convert-python"},
			notWants: []string{"alt.Chart(...)", "cdn.jsdelivr"},
		},
		{
			name:    "a broken spec",
			bundle:  bundle("application/vnd.plotly.v1+json", json.RawMessage(`[1, 2]`)),
			from:    "application/vnd.plotly.v1+json",
			want:    []string{"[a Plotly chart that could not be read: chartsummary: plotly spec is not a JSON object"},
			noChart: true,
		},
		{
			name:    "html without a chart",
			bundle:  bundle("text/html", "<script>vegaEmbed(x)</script><p>hello</p>", "text/plain", "<IPython.core.display.HTML object>"),
			from:    HTML,
			want:    []string{"hello"},
			noChart: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Describe(c.bundle)
			if d.From != c.from {
				t.Errorf("From = %q, want %q", d.From, c.from)
			}
			for _, w := range c.want {
				if !strings.Contains(d.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, d.Text)
				}
			}
			for _, w := range c.notWants {
				if strings.Contains(d.Text, w) {
					t.Errorf("text has %q:\n%s", w, d.Text)
				}
			}
			if (d.Chart == nil) != c.noChart {
				t.Errorf("Chart = %+v, want a summary: %v", d.Chart, !c.noChart)
			}
			if text, from := FromBundle(c.bundle); text != d.Text || from != d.From {
				t.Errorf("FromBundle differs from Describe: %q %q", from, text)
			}
		})
	}
}
