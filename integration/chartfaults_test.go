//go:build unix

package integration

import (
	"os"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/chartimage"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requireChartBrowser: the chart images need a browser on the machine;
// CI=true has one (.ci/run installs chromium), elsewhere the test skips.
func requireChartBrowser(t *testing.T) {
	t.Helper()
	if _, err := chartimage.FindBrowser(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip(err)
	}
}

// hasImage: the result has an image content.
func hasImage(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			return true
		}
	}
	return false
}
