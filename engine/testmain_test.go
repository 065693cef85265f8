package engine

import (
	"fmt"
	"os"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"go.uber.org/goleak"
)

// TestMain fails the package if anything a test started outlives the
// tests: a goroutine (goleak, with the kernel package's ignore list), or a
// kernel process still running as a child of this test binary (a session
// or pool kernel that Close did not shut down).
func TestMain(m *testing.M) {
	restore, err := ipytest.MemoryHistory()
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine tests: an IPython dir of their own:", err)
		os.Exit(1)
	}
	code := m.Run()
	restore()
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
		if left := childKernels(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "kernel processes outlived the tests: %q\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions is the kernel package's list: zmq4's PUB socket leaves a
// writer goroutine behind on Close, though no client socket here is a PUB.
var leakOptions = []goleak.Option{goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run")}
