package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineKnowsNoMCP: the engine depends on no MCP package and not on its
// adapter, so it can be used and tested without either; nor do its
// packages for the data tools and tracebacks, nor the web view, which
// works on the engine as the adapter does, nor the tool results the
// adapter renders as MCP content, nor the tasks' lifecycle.
func TestEngineKnowsNoMCP(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	for _, pkg := range []string{"engine", "engine/datatools", "engine/traceback", "webview", "toolresult", "tasks"} {
		out, err := exec.Command(gobin, "list", "-deps", "github.com/kernel-mcp/kernel-mcp/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 20 {
			t.Fatalf("go list named only %d packages for %s: %q", len(deps), pkg, deps)
		}
		for _, d := range deps {
			if strings.Contains(d, "modelcontextprotocol") || strings.HasSuffix(d, "/mcpserver") || strings.Contains(d, "/mcpserver/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
