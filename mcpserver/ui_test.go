package mcpserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/chartlib"
)

// uiDir returns the ui/ folder with its packages installed (npm ci when
// node_modules is missing) and the node binary. Without node and npm it
// skips the test, unless CI=true.
func uiDir(t *testing.T) (dir, node string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or npm not found (node: %v, npm: %v): CI needs them to check the views", errNode, errNpm)
		}
		t.Skip("node or npm not found")
	}
	dir, err := filepath.Abs(filepath.Join("..", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); os.IsNotExist(err) {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir, node
}

// TestUIBundleFresh rebuilds the views from ui/ and requires the committed
// (and embedded) files to be byte for byte what the build makes.
func TestUIBundleFresh(t *testing.T) {
	ui, node := uiDir(t)
	dir := t.TempDir()
	cmd := exec.Command(node, "build.mjs", "--out", dir)
	cmd.Dir = ui
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, out)
	}
	for name, embedded := range uiPages(t) {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, []byte(embedded)) {
			t.Errorf("mcpserver/ui/%s differs from a fresh build of ui/ (%d bytes committed, %d built): run cd ui && npm ci && npm run build, and commit the result",
				name, len(embedded), len(fresh))
		}
	}
	// The script the chart renderer draws with (chartimage embeds it).
	fresh, err := os.ReadFile(filepath.Join(dir, "render.js"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("..", "chartimage", "page", "render.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("chartimage/page/render.js differs from a fresh build of ui/ (%d bytes committed, %d built): run cd ui && npm ci && npm run build, and commit the result", len(committed), len(fresh))
	}
	// The chart libraries, by content: another zlib may gzip them otherwise.
	for _, name := range chartlib.Names {
		gz, err := os.ReadFile(filepath.Join(dir, name+".js.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if committed, _ := chartlib.Text(name); committed != string(fresh) {
			t.Errorf("chartlib/%s.js.gz differs from a fresh build of ui/ (%d bytes committed, %d built): run cd ui && npm ci && npm run build, and commit the result",
				name, len(committed), len(fresh))
		}
	}
}

// TestUIScripts runs the views' own tests (ui/test, in jsdom): the
// renderer's rules, sanitizing hostile outputs, the built cell view against
// ext-apps' AppBridge, and the built web view against a scripted API.
func TestUIScripts(t *testing.T) {
	ui, node := uiDir(t)
	files, err := filepath.Glob(filepath.Join(ui, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in %s/test (%v)", ui, err)
	}
	cmd := exec.Command(node, append([]string{"--test"}, files...)...)
	cmd.Dir = ui
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}

// externalRef finds what would make a view load something from elsewhere:
// a script, style, image or frame by URL, or a stylesheet link.
var externalRef = regexp.MustCompile(`(?i)<(script|img|iframe|link)\b[^>]*\b(src|href)\s*=\s*["']?(https?:|//)|<link\b[^>]*rel\s*=\s*["']?stylesheet|@import\s`)

// TestUIEmbeddedSelfContained checks what the hosts rely on: one HTML
// document per view, inline script and style, no external resource, and
// the MCP App within its size budget.
func TestUIEmbeddedSelfContained(t *testing.T) {
	for name, page := range uiPages(t) {
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
	if n := len(uiPages(t)["cell.html"]); n > 400*1024 {
		t.Errorf("cell.html is %d bytes, over the MCP App's 400 KB budget", n)
	}
}

// uiPages are the two view pages, as the server serves them.
func uiPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	for _, name := range []string{"cell.html", "web.html"} {
		page, err := uiPage(name)
		if err != nil {
			t.Fatal(err)
		}
		pages[name] = page
	}
	return pages
}
