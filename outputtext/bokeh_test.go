package outputtext

import (
	"encoding/json"
	"strings"
	"testing"
)

// testdata/bokeh_*.json are the data of the display Bokeh 3.9's show()
// sends after output_notebook(): a line with a legend, and a gridplot of a
// categorical vbar and a scatter and line of NumPy arrays (base64 ndarrays).
func TestDescribeBokeh(t *testing.T) {
	for _, tc := range []struct {
		file, want string
		series     int
	}{
		{"bokeh_line.json", `Bokeh line chart "Bokeh line" — x: day (1–3), y: sales (4–6); 1 series: sales (3 points)`, 1},
		{"bokeh_grid.json", `Bokeh bar/scatter/line chart — 2 subplots: [1] bar "Fruit" x: 3 categories: apple, pear, fig, y: 3–8; [2] scatter/line "Noise" x: 0–49, y: -1–2.5; 3 series: bar (3 points), pts (50), trend (4)`, 3},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var data map[string]json.RawMessage
			if err := json.Unmarshal([]byte(readTestdata(t, tc.file)), &data); err != nil {
				t.Fatal(err)
			}
			d := Describe(data)
			if d.From != BokehExec || d.Chart == nil || d.Chart.Library != "bokeh" || len(d.Chart.Series) != tc.series {
				t.Fatalf("Describe = %+v (chart %+v)", d, d.Chart)
			}
			if got := d.Chart.Text(); got != tc.want {
				t.Errorf("summary\n got %s\nwant %s", got, tc.want)
			}
			if !strings.HasSuffix(d.Text, "\n"+d.Note) || !strings.Contains(d.Note, "export_png") {
				t.Errorf("text %q, note %q", d.Text, d.Note)
			}
		})
	}
	// Without its JavaScript the display says nothing: no summary.
	if d := Describe(bundle(BokehExec, "")); d.Chart != nil || d.Text != "" {
		t.Errorf("Describe of a bare exec display = %+v", d)
	}
}
