//go:build !kernelmcp_external_assets

package mcpserver

import (
	_ "embed"
	"fmt"
)

var (
	//go:embed ui/cell.html
	embeddedCellHTML string
	//go:embed ui/web.html
	embeddedWebHTML string
)

// uiPage returns a view's page, cell.html or web.html, from the binary.
func uiPage(name string) (string, error) {
	switch name {
	case "cell.html":
		return embeddedCellHTML, nil
	case "web.html":
		return embeddedWebHTML, nil
	}
	return "", fmt.Errorf("no view page %q", name)
}
