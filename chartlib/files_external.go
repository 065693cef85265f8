//go:build kernelmcp_external_assets

package chartlib

import "github.com/kernel-mcp/kernel-mcp/internal/assets"

// readFile reads a library's gzipped file from the assets directory, on
// each call: the binary keeps none of them.
func readFile(name string) ([]byte, error) { return assets.Read(name) }
