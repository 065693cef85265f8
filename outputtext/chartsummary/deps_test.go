package chartsummary

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: the package depends on the standard library
// alone, so any layer (engine, MCP adapter, web view) can use it.
func TestStandardLibraryOnly(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies with")
	}
	const self = "github.com/kernel-mcp/kernel-mcp/outputtext/chartsummary"
	out, err := exec.Command(gobin, "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if d != self && strings.Contains(strings.Split(d, "/")[0], ".") {
			t.Errorf("depends on %s", d)
		}
	}
}
