package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// kernel a test starts must be closed, and Close must wait for its readers.
//
// One exception: zmq4's PUB socket leaves a writer goroutine behind on
// Close. Only TestForgedIOPubMessagesAreDropped makes one, as a fake
// kernel; the client itself never does.
func TestMain(m *testing.M) {
	restore, err := ipytest.MemoryHistory()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernel tests: an IPython dir of their own:", err)
		os.Exit(1)
	}
	afterTests = append(afterTests, restore)
	goleak.VerifyTestMain(runThenCleanUp{m}, leakOptions...)
}

// afterTests run once every test has ended, before the leak check: the
// gateway tests stop the servers they shared there.
var afterTests []func()

type runThenCleanUp struct{ m *testing.M }

func (r runThenCleanUp) Run() int {
	code := r.m.Run()
	for _, f := range afterTests {
		f()
	}
	return code
}

var leakOptions = []goleak.Option{goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run")}

var (
	ipykernelOnce sync.Once
	ipykernelErr  error
)

// requireIPyKernel stops t unless `python3 -m ipykernel_launcher` can run.
// With CI=true a missing kernel is a failure, never a skip: a CI run that
// skipped every real-kernel test would pass while testing nothing.
func requireIPyKernel(t testing.TB) {
	t.Helper()
	ipykernelOnce.Do(func() {
		py, err := exec.LookPath("python3")
		if err != nil {
			ipykernelErr = err
			return
		}
		out, err := exec.Command(py, "-c", "import ipykernel").CombinedOutput()
		if err != nil {
			ipykernelErr = &exec.Error{Name: py + " -c 'import ipykernel' (" + strings.TrimSpace(string(out)) + ")", Err: err}
		}
	})
	if ipykernelErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and python3 with ipykernel is unavailable: %v", ipykernelErr)
	}
	t.Skipf("python3 with ipykernel is unavailable: %v", ipykernelErr)
}

// startKernel starts a python3 kernel for t and closes it when t ends.
func startKernel(t testing.TB, opts Options) *Kernel {
	t.Helper()
	requireIPyKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return k
}

// testCtx is a context that fails a hung call instead of hanging the test.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// useLocalTransport switches the transport of the kernels Start launches
// for the rest of t. t must not be parallel: the setting is the package's.
func useLocalTransport(t testing.TB, transport string) {
	old := localTransport
	localTransport = transport
	t.Cleanup(func() { localTransport = old })
}
