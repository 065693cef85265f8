// Package outputtext chooses the text a reader without a browser (a
// language model, a terminal) gets for one Jupyter output bundle, the
// MIME-type-to-value map of an execute_result or display_data:
//
//	text, mime := outputtext.FromBundle(out.Data)
//
// Markdown and LaTeX come as their source, JSON as compact JSON, and HTML
// whose text/plain is only an object's repr ("<IPython.core.display.HTML
// object>", "<pandas.io.formats.style.Styler at 0x7f…>") as text made from
// the HTML, tables aligned. A real text/plain (a DataFrame's text, a number)
// is kept as it is. Images are left to the caller.
//
// The package imports no MCP or history code, so the engine, the MCP
// adapter and the web view can all use it; it never changes what was
// recorded, only what is shown.
package outputtext

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/outputtext/chartsummary"
)

// MIME types the text can be taken from.
const (
	Plain    = "text/plain"
	Markdown = "text/markdown"
	Latex    = "text/latex"
	JSON     = "application/json"
	HTML     = "text/html"
	SVG      = "image/svg+xml"
)

// FromBundle returns the text a reader gets for one output bundle (the Data
// of an execute_result or display_data, MIME type to JSON value as the
// kernel sent it) and the MIME type it was taken from. In order of
// preference:
//
//   - a chart (Plotly, Vega-Lite, Vega, Altair's HTML): its summary and a
//     line saying how to draw it as an image (see Describe);
//   - text/markdown: its source;
//   - text/latex: its source, when it is math or the text/plain is not
//     real (a LaTeX tabular reads worse than the text/plain table);
//   - application/json: the JSON, compacted (numbers kept exactly as sent);
//   - text/plain, unless it is empty or only an object's repr;
//   - text/html: its text (see HTMLText), when it has any;
//   - for an image: an SVG's text (see SVGText), else nothing when the
//     text/plain is only a repr ("<IPython.core.display.SVG object>");
//   - text/plain as it is, even a bare repr.
//
// It returns "", "" when the bundle has none of these (an image alone).
// The text is not cleaned of ANSI codes or carriage returns: that is the
// caller's to do for what it shows.
func FromBundle(data map[string]json.RawMessage) (text, mime string) {
	d := Describe(data)
	return d.Text, d.From
}

// Description is what a reader without a browser gets of one output
// bundle: its text, the MIME type the text was made from, and for a chart
// its summary.
type Description struct {
	Text string
	From string
	// Chart is the summary of a Plotly, Vega-Lite or Vega spec in the
	// bundle (From is then its MIME type); nil for anything else.
	Chart *chartsummary.Summary
	// Note is, for a chart, the line of Text after its summary: how the
	// kernel can draw it as an image.
	Note string
	// Spec is, for a Plotly, Vega-Lite or Vega chart, its spec (From says
	// which), for a renderer to draw; nil for anything else.
	Spec json.RawMessage
}

// Describe is FromBundle with the chart summary kept. A chart (Plotly,
// Vega-Lite, Vega) comes first: its text is the summary (see
// chartsummary.Summary.Text, at most 600 characters) and a line saying
// how the kernel can draw an image of it, since a spec says nothing to a
// reader without a browser and its text/plain, when there is one, is a
// bare repr ("alt.Chart(...)"). Altair's HTML output, which carries its
// Vega-Lite spec inline in a script, counts as a Vega-Lite chart.
func Describe(data map[string]json.RawMessage) Description {
	mt := chartMIME(data)
	spec := data[mt]
	if mt == "" {
		if h, ok := bundleString(data, HTML); ok {
			spec, mt, _ = embeddedVegaLite(h)
		}
	}
	if mt != "" {
		s, err := chartsummary.Summarize(mt, spec)
		if err != nil {
			return Description{Text: "[" + chartName(mt) + " chart that could not be read: " + err.Error() + "]", From: mt}
		}
		note := imageHint(s.Library)
		return Description{Text: s.Text() + "\n" + note, From: mt, Chart: s, Note: note, Spec: spec}
	}
	if docs, ok := bokehDocs(data); ok {
		if s, err := chartsummary.SummarizeBokeh(docs); err == nil {
			note := imageHint(s.Library)
			return Description{Text: s.Text() + "\n" + note, From: BokehExec, Chart: s, Note: note}
		}
	}
	t, mt := fromBundle(data)
	return Description{Text: t, From: mt}
}

// chartMIME is the bundle's chart MIME type, the first in sorted order
// when it has several (the same chart in two Vega-Lite versions).
func chartMIME(data map[string]json.RawMessage) string {
	var found []string
	for mt := range data {
		if chartsummary.Supported(mt) {
			found = append(found, mt)
		}
	}
	if len(found) == 0 {
		return ""
	}
	slices.Sort(found)
	return found[0]
}

func chartName(mime string) string {
	switch {
	case mime == chartsummary.MIMEPlotly:
		return "a Plotly"
	case strings.HasPrefix(mime, "application/vnd.vegalite."):
		return "a Vega-Lite"
	default:
		return "a Vega"
	}
}

// imageHint says how the kernel itself can draw the chart as an image,
// which reaches the reader like any figure.
func imageHint(library string) string {
	switch library {
	case "bokeh":
		return `[no image of this chart here: BokehJS draws it in a browser; bokeh.io.export_png draws one when selenium and a browser driver are installed in the kernel's environment]`
	case "plotly":
		return `[no image of this chart here; fig.show("png") draws one when kaleido is installed in the kernel's environment]`
	}
	return `[no image of this chart here; alt.renderers.enable("png") (Altair) draws one when vl-convert-python is installed in the kernel's environment]`
}

func fromBundle(data map[string]json.RawMessage) (text, mime string) {
	plain, hasPlain := bundleString(data, Plain)
	if s, ok := bundleString(data, Markdown); ok && strings.TrimSpace(s) != "" {
		return s, Markdown
	}
	// LaTeX math (sympy's "$\displaystyle …$") reads better than its
	// pretty-printed text/plain; a LaTeX document fragment (statsmodels'
	// summary as \begin{tabular}, pandas' to_latex) does not, when the
	// text/plain is real.
	if s, ok := bundleString(data, Latex); ok && strings.TrimSpace(s) != "" && (latexMath(s) || !hasPlain || UselessPlain(plain)) {
		return s, Latex
	}
	if raw, ok := data[JSON]; ok {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err == nil && b.Len() > 0 {
			return b.String(), JSON
		}
	}
	if hasPlain && !UselessPlain(plain) {
		return plain, Plain
	}
	if h, ok := bundleString(data, HTML); ok {
		if t := HTMLText(h); strings.TrimSpace(t) != "" {
			return t, HTML
		}
	}
	// An image's bare repr ("<IPython.core.display.SVG object>") says
	// nothing the image does not: an SVG gives its text, others none.
	if hasImage(data) {
		if svg, ok := bundleString(data, SVG); ok {
			if t := SVGText(svg); t != "" {
				return t, SVG
			}
		}
		if UselessPlain(plain) {
			return "", ""
		}
	}
	if hasPlain {
		return plain, Plain
	}
	return "", ""
}

// latexMath reports whether a text/latex value is a formula (inline or
// display math) rather than a document fragment such as a tabular.
func latexMath(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"$", `\[`, `\(`, `\begin{equation`, `\begin{align`, `\begin{gather`, `\begin{math`, `\begin{displaymath`} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// hasImage reports whether a bundle holds an image.
func hasImage(data map[string]json.RawMessage) bool {
	for mt := range data {
		if strings.HasPrefix(mt, "image/") {
			return true
		}
	}
	return false
}

// reprRE matches Python's default repr of an object, which names its
// class and nothing of its content: "<IPython.core.display.HTML object>",
// "<foo.Bar object at 0x7f…>", and IPython's pretty form
// "<pandas.io.formats.style.Styler at 0x7f…>".
var reprRE = regexp.MustCompile(`^<[^<>\n]+(?: object| at 0x[0-9a-fA-F]+)>$`)

// UselessPlain reports whether a text/plain says nothing of the output's
// content: it is empty, or only an object's default repr.
func UselessPlain(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || reprRE.MatchString(s)
}

// bundleString returns a bundle value as a string: the JSON string itself,
// nbformat's list of lines joined, or the raw JSON of any other value.
func bundleString(data map[string]json.RawMessage, mime string) (string, bool) {
	raw, ok := data[mime]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err == nil {
		return strings.Join(lines, ""), true
	}
	return string(raw), true
}
