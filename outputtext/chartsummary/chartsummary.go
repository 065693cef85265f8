// Package chartsummary turns the chart specs a kernel puts in an output
// bundle (Plotly figures, Vega-Lite and Vega specs) into a short summary an
// AI model can read instead of the chart: what kind of chart it is, its
// title, axis titles and data ranges, facets or subplots, and the legend's
// series with their point counts.
//
//	s, err := chartsummary.Summarize("application/vnd.plotly.v1+json", raw)
//	if err == nil {
//		fmt.Println(s.Text()) // Plotly scatter chart "Iris" — x: sepal_width (2–4.4), …
//	}
//
// The spec is untrusted: the input size, the points scanned per trace and
// the labels listed are all capped, and malformed or oddly typed JSON yields
// an error or a partial summary, never a panic. The package does no I/O.
package chartsummary

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Limits on the work done for one spec and on the size of the summary.
const (
	// MaxSpecBytes is the largest spec Summarize accepts.
	MaxSpecBytes = 64 << 20
	// MaxPointsPerTrace is how many values of one array (a Plotly trace's
	// x or y, a Vega-Lite dataset's rows) are scanned; counts beyond it
	// are reported as lower bounds.
	MaxPointsPerTrace = 1_000_000
	// MaxSeries is how many series the summary lists; the rest are counted
	// in Summary.MoreSeries.
	MaxSeries = 12
	// MaxSubplots is how many subplots the summary describes; the rest are
	// counted in Summary.MoreSubplots.
	MaxSubplots = 8
	// MaxCategoriesShown is how many category names an axis lists.
	MaxCategoriesShown = 5
	// MaxLabelRunes caps every title, field name and category in the summary.
	MaxLabelRunes = 60
	// MaxTextRunes caps Summary.Text.
	MaxTextRunes = 600
	// maxDistinct bounds the distinct categories tracked per axis or series
	// field, so a column of unique strings cannot grow memory without end.
	maxDistinct = 10_000
	// maxDepth bounds how deep nested views (layers, concats, group marks)
	// are walked.
	maxDepth = 32
	// maxViews bounds the Vega-Lite views walked in one spec.
	maxViews = 1000
	// maxRowsScanned bounds the values scanned in one spec, over all its
	// traces or views.
	maxRowsScanned = 10 * MaxPointsPerTrace
)

// MIME types understood by Summarize (Vega-Lite and Vega accept any major
// version in the same form).
const (
	MIMEPlotly   = "application/vnd.plotly.v1+json"
	MIMEVegaLite = "application/vnd.vegalite.v5+json"
	MIMEVega     = "application/vnd.vega.v5+json"
)

// ErrTooLarge is returned for a spec over MaxSpecBytes.
var ErrTooLarge = errors.New("chart spec too large")

// ErrUnsupported is returned for a MIME type that is not a chart spec.
var ErrUnsupported = errors.New("not a chart MIME type")

// Summary describes one chart. Fields that do not apply are left empty.
type Summary struct {
	// Library is "plotly", "vega-lite", "vega" or "bokeh" (see
	// SummarizeBokeh).
	Library string `json:"library"`
	// Kinds are the trace types or marks, in order of first use ("scatter",
	// "line", "bar", …); a Plotly scatter drawn only with lines is "line".
	Kinds []string `json:"kinds,omitempty"`
	// Title is the chart's title.
	Title string `json:"title,omitempty"`
	// X and Y describe the axes when the chart has one panel (or facets
	// that share their axes).
	X *Axis `json:"x,omitempty"`
	Y *Axis `json:"y,omitempty"`
	// Z is the range of the values a heatmap or contour colours.
	Z *Axis `json:"z,omitempty"`
	// Facet is set when one chart is split into panels by a data field.
	Facet *Facet `json:"facet,omitempty"`
	// Subplots describe the panels of a chart made of different plots
	// (Plotly make_subplots, Vega-Lite concat or repeat).
	Subplots []Subplot `json:"subplots,omitempty"`
	// MoreSubplots counts the subplots beyond MaxSubplots.
	MoreSubplots int `json:"more_subplots,omitempty"`
	// Series are the legend entries with their number of points.
	Series []Series `json:"series,omitempty"`
	// MoreSeries counts the series beyond MaxSeries.
	MoreSeries int `json:"more_series,omitempty"`
	// Points is the number of data points (or rows) in the whole chart.
	Points int `json:"points,omitempty"`
	// Truncated says some array was longer than MaxPointsPerTrace: ranges
	// cover only its first values and point counts are lower bounds.
	Truncated bool `json:"truncated,omitempty"`
}

// Axis is one axis: its title and what the data along it spans.
type Axis struct {
	// Title is the axis title (or the field plotted along it).
	Title string `json:"title,omitempty"`
	// Min and Max are the range of numeric data.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// From and To are the range of date or time data, as written in the spec.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Categories is the number of distinct categories of categorical data,
	// FirstCategories the first few in order of appearance.
	Categories      int      `json:"categories,omitempty"`
	FirstCategories []string `json:"first_categories,omitempty"`
	// MoreCategories says the distinct categories were too many to count all.
	MoreCategories bool `json:"more_categories,omitempty"`
}

// Facet describes a chart split into panels by one or more data fields.
type Facet struct {
	// Fields are the faceting fields.
	Fields []string `json:"fields,omitempty"`
	// Count is the number of panels.
	Count int `json:"count,omitempty"`
	// Values are the first few facet values.
	Values []string `json:"values,omitempty"`
}

// Subplot is one panel of a chart made of several plots.
type Subplot struct {
	Title string   `json:"title,omitempty"`
	Kinds []string `json:"kinds,omitempty"`
	X     *Axis    `json:"x,omitempty"`
	Y     *Axis    `json:"y,omitempty"`
	Z     *Axis    `json:"z,omitempty"`
}

// Series is one legend entry.
type Series struct {
	Name string `json:"name"`
	// Points is the number of points (or rows) drawn for it.
	Points int `json:"points"`
}

// Supported reports whether Summarize understands the MIME type.
func Supported(mime string) bool {
	return library(mime) != ""
}

func library(mime string) string {
	mime = strings.TrimSpace(mime)
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = strings.TrimSpace(mime[:i])
	}
	mime = strings.ToLower(mime)
	if mime == MIMEPlotly {
		return "plotly"
	}
	for _, p := range []struct{ prefix, lib string }{
		{"application/vnd.vegalite.v", "vega-lite"},
		{"application/vnd.vega.v", "vega"},
	} {
		rest, ok := strings.CutPrefix(mime, p.prefix)
		if !ok {
			continue
		}
		// Altair 6's mimetype renderer writes "application/vnd.vegalite.v6.json".
		v, ok := strings.CutSuffix(rest, "+json")
		if !ok {
			v, ok = strings.CutSuffix(rest, ".json")
		}
		if ok && v != "" && strings.Trim(v, "0123456789") == "" {
			return p.lib
		}
	}
	return ""
}

// Summarize reads a chart spec of the given MIME type and describes it. It
// returns ErrUnsupported for a MIME type that is not a chart, ErrTooLarge for
// a spec over MaxSpecBytes and an error for a spec that is not a JSON object.
// A spec of the right shape with odd or missing parts gives a partial summary.
func Summarize(mime string, spec []byte) (*Summary, error) {
	lib := library(mime)
	if lib == "" {
		return nil, fmt.Errorf("chartsummary: %w: %q", ErrUnsupported, truncateRunes(sanitize(mime), MaxLabelRunes))
	}
	if len(spec) > MaxSpecBytes {
		return nil, fmt.Errorf("chartsummary: %w: %d bytes, the limit is %d", ErrTooLarge, len(spec), MaxSpecBytes)
	}
	var top obj
	if err := json.Unmarshal(spec, &top); err != nil {
		return nil, fmt.Errorf("chartsummary: %s spec is not a JSON object: %w", lib, err)
	}
	if top == nil {
		return nil, fmt.Errorf("chartsummary: %s spec is null, want a JSON object", lib)
	}
	s := &Summary{Library: lib}
	switch lib {
	case "plotly":
		summarizePlotly(s, top)
	case "vega-lite":
		summarizeVegaLite(s, top)
	case "vega":
		summarizeVega(s, top)
	}
	return s, nil
}
