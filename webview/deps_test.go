package webview_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWebViewKnowsNoMCP: the web view depends on no MCP package and not on
// the MCP adapter: it works on the engine, as the adapter does.
func TestWebViewKnowsNoMCP(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/kernel-mcp/kernel-mcp/webview").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list named only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.Contains(d, "modelcontextprotocol") || strings.HasSuffix(d, "/mcpserver") || strings.Contains(d, "/mcpserver/") {
			t.Errorf("webview depends on %s", d)
		}
	}
}
