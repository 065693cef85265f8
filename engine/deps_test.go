package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineKnowsNoMCP: the engine depends on no MCP package and not on
// its adapter, so it can be used and tested without either.
func TestEngineKnowsNoMCP(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/kernel-mcp/kernel-mcp/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list named only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.Contains(d, "modelcontextprotocol") || strings.HasSuffix(d, "/mcpserver") || strings.Contains(d, "/mcpserver/") {
			t.Errorf("engine depends on %s", d)
		}
	}
}
