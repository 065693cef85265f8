// Package chartlib holds the chart libraries the notebook views load when a
// chart appears: plotly.js, and Vega with Vega-Lite and vega-embed; and
// KaTeX, which the cell view loads when math appears. They
// are built from ui/ (ui/src/chartlib-*.js, cd ui && npm run build) and
// committed gzipped, so that building the binary needs Go alone and the
// binary carries them compressed. The cell view reads them as the
// resources ui://kernel-mcp/charts/NAME.js (mcpserver), the web view as
// /ui/charts/NAME.js (webview, served gzipped).
//
// A build with the kernelmcp_external_assets tag embeds none of them and
// reads them from the directory internal/assets names (the Claude Desktop
// bundle carries them once for its four binaries).
package chartlib

import (
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"strings"
)

// Names are the libraries, as the views ask for them. katex is no chart
// library: the cell view, which does not bundle KaTeX (its size budget),
// loads it this way when math first appears.
var Names = []string{"plotly", "vega", "katex"}

// Widgets is the ipywidgets frontend (ui/src/chartlib-widgets.js), which
// the views load for their live widgets: it is not among Names, the
// libraries the chart image browser loads too.
const Widgets = "widgets"

// Gzip returns a library's script, gzipped, or false for an unknown name
// (and, in the kernelmcp_external_assets build, for a file that cannot be
// read: assets.Check at start says which are missing).
func Gzip(name string) ([]byte, bool) {
	if !slices.Contains(Names, name) && name != Widgets {
		return nil, false
	}
	b, err := readFile(name + ".js.gz")
	if err != nil {
		return nil, false
	}
	return b, true
}

// Text returns a library's script. It decompresses on each call: a
// library is read once per view that shows a chart, and nothing keeps the
// megabytes in memory in between.
func Text(name string) (string, bool) {
	gz, ok := Gzip(name)
	if !ok {
		return "", false
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", false
	}
	var sb strings.Builder
	if _, err := io.Copy(&sb, zr); err != nil {
		return "", false
	}
	return sb.String(), true
}
