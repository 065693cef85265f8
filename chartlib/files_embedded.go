//go:build !kernelmcp_external_assets

package chartlib

import "embed"

//go:embed plotly.js.gz vega.js.gz katex.js.gz widgets.js.gz
var files embed.FS

// readFile reads a library's gzipped file from the binary.
func readFile(name string) ([]byte, error) { return files.ReadFile(name) }
