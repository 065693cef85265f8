package mcpserver

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUIBundleFresh rebuilds the views from ui/ and requires the committed
// (and embedded) files to be byte for byte what the build makes. It needs
// node and npm; without them it skips, unless CI=true.
func TestUIBundleFresh(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or npm not found (node: %v, npm: %v): CI needs them to check the UI bundle", errNode, errNpm)
		}
		t.Skip("node or npm not found")
	}
	ui, err := filepath.Abs(filepath.Join("..", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ui, "node_modules")); os.IsNotExist(err) {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = ui
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", ui, err, out)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(node, "build.mjs", "--out", dir)
	cmd.Dir = ui
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, out)
	}
	for name, embedded := range map[string]string{"cell.html": cellHTML, "web.html": webHTML} {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, []byte(embedded)) {
			t.Errorf("mcpserver/ui/%s differs from a fresh build of ui/ (%d bytes committed, %d built): run cd ui && npm ci && npm run build, and commit the result",
				name, len(embedded), len(fresh))
		}
	}
}

// externalRef finds what would make a view load something from elsewhere:
// a script, style, image or frame by URL, or a stylesheet link.
var externalRef = regexp.MustCompile(`(?i)<(script|img|iframe|link)\b[^>]*\b(src|href)\s*=\s*["']?(https?:|//)|<link\b[^>]*rel\s*=\s*["']?stylesheet|@import\s`)

// TestUIEmbeddedSelfContained checks what the hosts rely on: one HTML
// document per view, inline script and style, no external resource, and
// the MCP App within its size budget.
func TestUIEmbeddedSelfContained(t *testing.T) {
	for name, page := range map[string]string{"cell.html": cellHTML, "web.html": webHTML} {
		if !strings.HasPrefix(page, "<!doctype html>") {
			t.Errorf("%s does not start with <!doctype html>", name)
		}
		if m := externalRef.FindString(page); m != "" {
			t.Errorf("%s refers to an external resource: %q", name, m)
		}
		if n := strings.Count(page, "<script>"); n != 1 || !strings.Contains(page, "</script>") {
			t.Errorf("%s has %d inline <script> elements, want 1", name, n)
		}
		if !strings.Contains(page, "<style>") {
			t.Errorf("%s has no inline <style>", name)
		}
	}
	if n := len(cellHTML); n > 400*1024 {
		t.Errorf("cell.html is %d bytes, over the MCP App's 400 KB budget", n)
	}
}
