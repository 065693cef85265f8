//go:build kernelmcp_external_assets

package mcpserver

import "github.com/kernel-mcp/kernel-mcp/internal/assets"

// uiPage returns a view's page, cell.html or web.html, read from the
// assets directory on each call (a host reads the cell view once per
// conversation; the web view's page is read once at start).
func uiPage(name string) (string, error) {
	b, err := assets.Read(name)
	return string(b), err
}
