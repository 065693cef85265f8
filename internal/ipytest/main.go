package ipytest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// LeakOptions are what goleak ignores: zmq4's PUB socket leaves a writer
// goroutine behind on Close, though no client socket here is a PUB.
var LeakOptions = []goleak.Option{goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run")}

// Main is TestMain for a package whose tests start kernels: it gives them
// an IPython history in memory (MemoryHistory), runs the tests, and fails
// the package when anything a test started outlives the tests: a goroutine
// (goleak, with LeakOptions), or a kernel process still running as a child
// of the test binary (ChildKernels). pkg names the package in messages.
//
//	func TestMain(m *testing.M) { os.Exit(ipytest.Main(m, "engine")) }
func Main(m *testing.M, pkg string) int {
	restore, err := MemoryHistory()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s tests: an IPython dir of their own: %v\n", pkg, err)
		return 1
	}
	code := m.Run()
	restore()
	if code != 0 {
		return code
	}
	if err := goleak.Find(LeakOptions...); err != nil {
		fmt.Fprintf(os.Stderr, "%s tests: goroutines outlived the tests: %v\n", pkg, err)
		return 1
	}
	if left := ChildKernels(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "%s tests: kernel processes outlived the tests: %q\n", pkg, left)
		return 1
	}
	return 0
}
