package chartimage

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine or a browser
// profile folder behind (every Renderer is closed by its test's Cleanup).
// The profiles go in a temporary folder of the package's own, since other
// packages' tests start browsers at the same time.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "ci-") // short: see maxTmpDirLen
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Setenv("TMPDIR", tmp)
	if code := m.Run(); code != 0 {
		return code
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintf(os.Stderr, "chartimage tests: goroutines outlived the tests: %v\n", err)
		return 1
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		fmt.Fprintf(os.Stderr, "chartimage tests: %s outlived the tests\n", e.Name())
	}
	if len(left) > 0 {
		return 1
	}
	return 0
}
