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
	"strings"
)

// MIME types the text can be taken from.
const (
	Plain    = "text/plain"
	Markdown = "text/markdown"
	Latex    = "text/latex"
	JSON     = "application/json"
	HTML     = "text/html"
)

// FromBundle returns the text a reader gets for one output bundle (the Data
// of an execute_result or display_data, MIME type to JSON value as the
// kernel sent it) and the MIME type it was taken from. In order of
// preference:
//
//   - text/markdown and text/latex: their source;
//   - application/json: the JSON, compacted (numbers kept exactly as sent);
//   - text/plain, unless it is empty or only an object's repr;
//   - text/html: its text (see HTMLText), when it has any;
//   - text/plain as it is, even a bare repr.
//
// It returns "", "" when the bundle has none of these (an image alone).
// The text is not cleaned of ANSI codes or carriage returns: that is the
// caller's to do for what it shows.
func FromBundle(data map[string]json.RawMessage) (text, mime string) {
	for _, mt := range []string{Markdown, Latex} {
		if s, ok := bundleString(data, mt); ok && strings.TrimSpace(s) != "" {
			return s, mt
		}
	}
	if raw, ok := data[JSON]; ok {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err == nil && b.Len() > 0 {
			return b.String(), JSON
		}
	}
	plain, hasPlain := bundleString(data, Plain)
	if hasPlain && !UselessPlain(plain) {
		return plain, Plain
	}
	if h, ok := bundleString(data, HTML); ok {
		if t := HTMLText(h); strings.TrimSpace(t) != "" {
			return t, HTML
		}
	}
	if hasPlain {
		return plain, Plain
	}
	return "", ""
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
