package chartlib

import (
	"slices"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
)

// Each library decompresses to the script that sets the global the views'
// charts.js waits for.
func TestLibraries(t *testing.T) {
	for name, global := range map[string]string{"plotly": "__kmPlotly", "vega": "__kmVega", "katex": "__kmKatex", "widgets": "__kmWidgets"} {
		text, ok := Text(name)
		if !ok || len(text) < 100_000 {
			t.Fatalf("%s: %d bytes, ok %v", name, len(text), ok)
		}
		if !strings.Contains(text, global) {
			t.Errorf("%s does not set %s", name, global)
		}
		gz, _ := Gzip(name)
		t.Logf("%s: %d bytes, %d gzipped", name, len(text), len(gz))
	}
	for _, bad := range []string{"", "../chartlib", "plotly.js", "render"} {
		if _, ok := Gzip(bad); ok {
			t.Errorf("Gzip(%q) found something", bad)
		}
	}
}

// Every library is one of the files the external build reads, under the
// name it reads it by.
func TestAssetNames(t *testing.T) {
	for _, name := range append(slices.Clone(Names), Widgets) {
		if !slices.ContainsFunc(assets.Files, func(f assets.File) bool { return f.Name == name+".js.gz" && f.Source == "chartlib/"+name+".js.gz" }) {
			t.Errorf("%s.js.gz is not in assets.Files", name)
		}
	}
}
