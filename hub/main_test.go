package hub

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine a test started (a request, a
// progress stream) outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "hub tests: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
