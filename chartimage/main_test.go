package chartimage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine or a browser
// profile folder behind (every Renderer is closed by its test's Cleanup).
func TestMain(m *testing.M) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "kernel-mcp-chart-*"))
	code := m.Run()
	if code != 0 {
		os.Exit(code)
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintf(os.Stderr, "chartimage tests: goroutines outlived the tests: %v\n", err)
		os.Exit(1)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "kernel-mcp-chart-*"))
	for _, d := range after {
		if !slices.Contains(before, d) {
			fmt.Fprintf(os.Stderr, "chartimage tests: the browser profile %s outlived the tests\n", d)
			os.Exit(1)
		}
	}
	os.Exit(0)
}
