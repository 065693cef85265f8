package chartsummary

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSummarizeRejects(t *testing.T) {
	for _, tc := range []struct {
		name, mime string
		spec       []byte
		is         error
		msg        string
	}{
		{"png", "image/png", []byte(`{}`), ErrUnsupported, `not a chart MIME type: "image/png"`},
		{"vegalite without version", "application/vnd.vegalite.v+json", []byte(`{}`), ErrUnsupported, "not a chart MIME type"},
		{"too large", MIMEPlotly, make([]byte, MaxSpecBytes+1), ErrTooLarge, "67108865 bytes, the limit is 67108864"},
		{"not JSON", MIMEPlotly, []byte(`{"data": [`), nil, "plotly spec is not a JSON object"},
		{"array", "application/vnd.vegalite.v4+json", []byte(`[1, 2]`), nil, "vega-lite spec is not a JSON object"},
		{"null", MIMEVega, []byte(`null`), nil, "vega spec is null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Summarize(tc.mime, tc.spec)
			if err == nil {
				t.Fatalf("Summarize = %+v, want an error", s)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

func TestSupported(t *testing.T) {
	for mime, want := range map[string]bool{
		"application/vnd.plotly.v1+json":   true,
		"application/vnd.vegalite.v4+json": true,
		"application/vnd.vegalite.v6+json": true,
		"application/vnd.vegalite.v6.json": true, // Altair 6's mimetype renderer
		"application/vnd.vegalite.v6.xml":  false,
		"application/vnd.vega.v5+json":     true,
		"application/vnd.vega.v5+json; x":  true,
		"application/vnd.vegalite.vx+json": false,
		"application/json":                 false,
		"text/html":                        false,
	} {
		if got := Supported(mime); got != want {
			t.Errorf("Supported(%q) = %v, want %v", mime, got, want)
		}
	}
}

// typed encodes values as a plotly typed array of the given dtype.
func typed(t *testing.T, dtype string, values []float64, shape string) string {
	t.Helper()
	var buf bytes.Buffer
	for _, v := range values {
		var x any
		switch dtype {
		case "i1":
			x = int8(v)
		case "u1":
			x = uint8(v)
		case "i2":
			x = int16(v)
		case "u2":
			x = uint16(v)
		case "i4":
			x = int32(v)
		case "u4":
			x = uint32(v)
		case "f4":
			x = float32(v)
		case "f8":
			x = v
		}
		if err := binary.Write(&buf, binary.LittleEndian, x); err != nil {
			t.Fatal(err)
		}
	}
	s := fmt.Sprintf(`{"dtype": %q, "bdata": %q`, dtype, base64.StdEncoding.EncodeToString(buf.Bytes()))
	if shape != "" {
		s += `, "shape": ` + shape
	}
	return s + "}"
}

// TestTypedArrays decodes every dtype plotly writes, little-endian, with
// and without a shape.
func TestTypedArrays(t *testing.T) {
	for _, tc := range []struct {
		dtype    string
		values   []float64
		min, max float64
	}{
		{"i1", []float64{-128, 5, 127}, -128, 127},
		{"u1", []float64{0, 200, 255}, 0, 255},
		{"i2", []float64{-30000, 7, 30000}, -30000, 30000},
		{"u2", []float64{1, 65535}, 1, 65535},
		{"i4", []float64{-2e9, 3, 2e9}, -2e9, 2e9},
		{"u4", []float64{0, 4e9}, 0, 4e9},
		{"f4", []float64{-1.5, 0.25, 3.5}, -1.5, 3.5},
		{"f8", []float64{math.Pi, -1e300, 2.5}, -1e300, math.Pi},
	} {
		for _, shape := range []string{"", fmt.Sprintf(`"%d"`, len(tc.values)), fmt.Sprintf("[%d]", len(tc.values))} {
			spec := fmt.Sprintf(`{"data": [{"type": "scatter", "name": "s", "x": %s, "y": [1]}]}`, typed(t, tc.dtype, tc.values, shape))
			s, err := Summarize(MIMEPlotly, []byte(spec))
			if err != nil {
				t.Fatal(err)
			}
			if s.X == nil || s.X.Min == nil || *s.X.Min != tc.min || *s.X.Max != tc.max {
				t.Errorf("%s shape %s: x = %+v, want %v–%v", tc.dtype, shape, s.X, tc.min, tc.max)
			}
			if len(s.Series) != 1 || s.Series[0].Points != len(tc.values) {
				t.Errorf("%s shape %s: series %+v, want %d points", tc.dtype, shape, s.Series, len(tc.values))
			}
		}
	}
	// A 2×3 shape counts six values, and a shape larger than the data is
	// bounded by the bytes present.
	s, err := Summarize(MIMEPlotly, []byte(`{"data": [{"name": "z", "x": `+typed(t, "u1", []float64{1, 2, 3, 4, 5, 6}, `"2, 3"`)+`}]}`))
	if err != nil || s.Series[0].Points != 6 || *s.X.Max != 6 {
		t.Errorf("shape 2, 3: %+v, %v", s, err)
	}
	s, err = Summarize(MIMEPlotly, []byte(`{"data": [{"name": "z", "x": `+typed(t, "u1", []float64{1, 2}, `"1000000000, 1000000000"`)+`}]}`))
	if err != nil || s.Series[0].Points != 2 {
		t.Errorf("oversized shape: %+v, %v", s, err)
	}
	// Unknown dtypes and broken base64 contribute nothing rather than fail.
	for _, bad := range []string{`{"dtype": "i8", "bdata": "AAAAAAAAAAA="}`, `{"dtype": "f8", "bdata": "!!!"}`, `{"dtype": 3, "bdata": []}`} {
		s, err := Summarize(MIMEPlotly, []byte(`{"data": [{"name": "n", "x": `+bad+`}]}`))
		if err != nil || s.X != nil || s.Series[0].Points != 0 {
			t.Errorf("%s: %+v, %v", bad, s, err)
		}
	}
}

// TestPointsCap checks that a trace longer than MaxPointsPerTrace is read
// only up to the cap, and that the summary says so.
func TestPointsCap(t *testing.T) {
	n := MaxPointsPerTrace + 10
	vals := make([]byte, n)
	vals[n-1] = 200 // past the cap: must not show in the range
	vals[0] = 7
	spec := fmt.Sprintf(`{"data": [{"name": "big", "x": {"dtype": "u1", "bdata": %q}}]}`, base64.StdEncoding.EncodeToString(vals))
	s, err := Summarize(MIMEPlotly, []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || *s.X.Max != 7 || s.Series[0].Points != n {
		t.Errorf("typed: truncated %v, max %v, points %d; want true, 7, %d", s.Truncated, *s.X.Max, s.Series[0].Points, n)
	}
	if !strings.Contains(s.Text(), "only the first 1000000 values") {
		t.Errorf("text does not say it read only part: %s", s.Text())
	}

	var b strings.Builder
	b.WriteString(`{"data": [{"name": "big", "x": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == n-1 {
			b.WriteString("9")
		} else {
			b.WriteString("1")
		}
	}
	b.WriteString(`]}]}`)
	s, err = Summarize(MIMEPlotly, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || *s.X.Max != 1 || s.Series[0].Points != MaxPointsPerTrace {
		t.Errorf("list: truncated %v, max %v, points %d", s.Truncated, *s.X.Max, s.Series[0].Points)
	}
}

// TestHostileLabels checks that labels lose control and invisible
// formatting characters, are capped, and that the text stays within
// MaxTextRunes and lists at most MaxSeries series.
func TestHostileLabels(t *testing.T) {
	long := strings.Repeat("é", 500)
	name := strings.Repeat("n", 100)
	var traces []string
	for i := range 40 {
		traces = append(traces, fmt.Sprintf(`{"type": "bar", "name": "s%d\u202e\u0007x%s", "x": ["a"], "y": [%d]}`, i, name, i))
	}
	spec := `{"layout": {"title": {"text": "T\u001b[31mred\nline ` + long + `"}, "xaxis": {"title": "a\tb"}},
		"data": [` + strings.Join(traces, ",") + `]}`
	s, err := Summarize(MIMEPlotly, []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(s.Title, "\x1b\n") || utf8.RuneCountInString(s.Title) > MaxLabelRunes || !strings.HasPrefix(s.Title, "T[31mred line éé") || !strings.HasSuffix(s.Title, "…") {
		t.Errorf("title %q", s.Title)
	}
	if s.X.Title != "a b" {
		t.Errorf("x title %q", s.X.Title)
	}
	if len(s.Series) != MaxSeries || s.MoreSeries != 40-MaxSeries || s.Series[0].Name != "s0x"+name[:MaxLabelRunes-4]+"…" {
		t.Errorf("series %+v, more %d", s.Series, s.MoreSeries)
	}
	// The series that fit are listed and the rest counted, rather than the
	// text being cut mid-list.
	text := s.Text()
	if n := utf8.RuneCountInString(text); n > MaxTextRunes || !strings.HasSuffix(text, "(1), and 34 more") {
		t.Errorf("text has %d runes: %s", n, text)
	}
	for _, r := range text {
		if r < 0x20 || r == 0x202e {
			t.Fatalf("text holds %U: %q", r, text)
		}
	}
}

// TestOddShapes feeds specs whose members have the wrong types: each must
// give a summary (possibly empty), not an error or a panic.
func TestOddShapes(t *testing.T) {
	for _, tc := range []struct{ mime, spec, text string }{
		{MIMEPlotly, `{"data": 5, "layout": []}`, "Plotly chart"},
		{MIMEPlotly, `{"data": [null, 3, "x", {"type": 7, "x": {"a": 1}, "y": "str", "name": ["n"]}]}`, "Plotly scatter chart"},
		{MIMEPlotly, `{"data": [{"type": "pie", "labels": ["a", "b"], "values": [3, 4], "name": "share"}], "layout": {"title": "Pie"}}`,
			`Plotly pie chart "Pie" — 2 series: a (1 point), b (1)`},
		{MIMEPlotly, `{"data": [{"x": ["2024-01-02", "2024-03-04T05:06:07"], "y": [1, null, "NaN"]}], "layout": {"yaxis": {"type": "category"}}}`,
			`Plotly scatter chart — x: 2024-01-02 – 2024-03-04T05:06:07, y: 2 categories: 1, NaN; 3 points`},
		{MIMEPlotly, `{"data": [{"type": "heatmap", "z": [[1, 2], [3, null], 4, "x"], "name": "h"}, {"type": "contour", "z": [[9]], "name": "c", "showlegend": true}]}`,
			`Plotly heatmap/contour chart — z: 1–9; 1 series: c (1 point)`},
		{"application/vnd.vegalite.v5+json", `{"mark": 3, "encoding": {"x": {"field": {"repeat": 1}}}, "data": {"values": {"a": 1}}, "layer": "x"}`, "Vega-Lite chart"},
		{"application/vnd.vegalite.v5+json", `{"data": {"values": [{"a": 1, "b": "u"}, {"a": 5, "b": "v"}, 7]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "quantitative"}, "y": {"aggregate": "count", "type": "quantitative"}, "color": {"field": "b"}}}`,
			`Vega-Lite bar chart — x: a (1–5), y: Count of Records; 2 series: u (1 point), v (1)`},
		{"application/vnd.vegalite.v5+json", `{"repeat": {"column": ["a", "b"]}, "spec": {"data": {"values": [{"a": 1, "b": 2}, {"a": 3, "b": 4}]}, "mark": "point", "encoding": {"x": {"field": {"repeat": "column"}, "type": "quantitative"}}}}`,
			`Vega-Lite point chart — 2 subplots: [1] point x: a (1–3); [2] point x: b (2–4); 2 points`},
		{MIMEVega, `{"marks": {"type": "rect"}, "axes": [{"orient": 4}], "scales": "x", "legends": [{"fill": []}]}`, "Vega chart"},
	} {
		s, err := Summarize(tc.mime, []byte(tc.spec))
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := s.Text(); got != tc.text {
			t.Errorf("%s:\n got %s\nwant %s", tc.spec, got, tc.text)
		}
	}
}

func TestCut(t *testing.T) {
	s := strings.Repeat("word ", 200)
	got := cut(s, MaxTextRunes)
	if n := utf8.RuneCountInString(got); n > MaxTextRunes || !strings.HasSuffix(got, "word…") {
		t.Errorf("cut: %d runes, %q", n, got[len(got)-12:])
	}
	if got := cut("short", 10); got != "short" {
		t.Errorf("cut short = %q", got)
	}
}

// TestRepeatBounded checks that nested and very long repeats cost a
// bounded walk: ten nested repeats of eight columns would be 8^10 views
// walked one by one, and a 20000 × 20000 repeat 4×10^8 subplots counted
// one by one.
func TestRepeatBounded(t *testing.T) {
	spec := `{"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": {"field": {"repeat": "repeat"}, "type": "quantitative"}}}`
	for range 10 {
		spec = `{"repeat": ["a", "a", "a", "a", "a", "a", "a", "a"], "spec": ` + spec + `}`
	}
	s, err := Summarize(MIMEVegaLite, []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subplots) != MaxSubplots || s.Points != 1 || s.Subplots[0].X.Title != "a" {
		t.Errorf("nested repeat: %s", s.Text())
	}

	fields := `"f"` + strings.Repeat(`, "f"`, 19999)
	spec = `{"repeat": {"row": [` + fields + `], "column": [` + fields + `]}, "spec": {"mark": "bar"}}`
	s, err = Summarize(MIMEVegaLite, []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subplots) != MaxSubplots || s.MoreSubplots != 20000*20000-MaxSubplots {
		t.Errorf("long repeat: %d subplots and %d more", len(s.Subplots), s.MoreSubplots)
	}
}

// TestManySubplotsBounded checks that a figure with thousands of panels
// and annotations is summarized in work linear in its size: matching each
// annotation against every panel's axes would be 10^8 axis lookups.
func TestManySubplotsBounded(t *testing.T) {
	const n = 10000
	var traces, axes, anns []string
	for i := 1; i <= n; i++ {
		traces = append(traces, fmt.Sprintf(`{"type": "bar", "x": [%d], "y": [1], "xaxis": "x%d", "yaxis": "y%d"}`, i, i, i))
		axes = append(axes, fmt.Sprintf(`"xaxis%d": {"domain": [0.5, 0.6]}, "yaxis%d": {"domain": [0, 0.5]}`, i, i))
		anns = append(anns, `{"text": "t", "xref": "paper", "yref": "paper", "x": 0.1, "y": 0.9}`)
	}
	spec := `{"data": [` + strings.Join(traces, ",") + `], "layout": {` + strings.Join(axes, ",") +
		`, "annotations": [` + strings.Join(anns, ",") + `]}}`
	s, err := Summarize(MIMEPlotly, []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subplots) != MaxSubplots || s.MoreSubplots != n-MaxSubplots || s.Subplots[0].Title != "" {
		t.Errorf("%d subplots, %d more, first titled %q", len(s.Subplots), s.MoreSubplots, s.Subplots[0].Title)
	}
}

// TestTextCut checks that a summary too long even without its series is
// cut at a word boundary within MaxTextRunes.
func TestTextCut(t *testing.T) {
	var traces, axes []string
	for i := 1; i <= 10; i++ {
		traces = append(traces, fmt.Sprintf(`{"type": "bar", "name": "s%d", "x": [1, 2], "y": [3, 4], "xaxis": "x%d", "yaxis": "y%d"}`, i, i, i))
		axes = append(axes, fmt.Sprintf(`"xaxis%d": {"title": "a rather long axis title for panel number %d"}`, i, i))
	}
	s, err := Summarize(MIMEPlotly, []byte(`{"data": [`+strings.Join(traces, ",")+`], "layout": {`+strings.Join(axes, ",")+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	text := s.Text()
	if n := utf8.RuneCountInString(text); n > MaxTextRunes || !strings.HasSuffix(text, "…") || strings.Contains(text, "series") {
		t.Errorf("text has %d runes: %s", n, text)
	}
	if !strings.HasPrefix(text, `Plotly bar chart — 10 subplots: [1] bar x: a rather long axis title for panel number 1 (1–2), y: 3–4; [2]`) {
		t.Errorf("text: %s", text)
	}
}
