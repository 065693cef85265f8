// Package kernel is a Go client of the Jupyter messaging protocol: it starts
// a kernel (ipykernel or any installed kernelspec) from a connection file,
// runs code in it and collects exactly what a notebook cell would show.
//
//	k, err := kernel.Start(ctx, kernel.Options{Python: "python3"})
//	if err != nil { ... }
//	defer k.Close()
//	res, err := k.Execute(ctx, "x = 21\nx * 2", kernel.ExecuteOptions{})
//	// res.Outputs[0].String("text/plain") == "42"
//
// It knows nothing of MCP. Every blocking call takes a context; a call in
// flight when the kernel dies returns an error matching ErrKernelDied; Close
// shuts the kernel down and removes its connection file.
package kernel

import (
	"context"
	"errors"
	"io"
	"log"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
)

var discardLogger = log.New(io.Discard, "", 0)

// Options says which kernel to start and how.
type Options struct {
	// Spec is the kernelspec to run. When its Argv is empty, Python is used.
	Spec kernelspec.Spec
	// Python is an interpreter with ipykernel installed; the kernel runs as
	// `<Python> -m ipykernel_launcher -f <connection file>`. Default "python3".
	Python string
	// Dir is the kernel's working directory; empty means the server's.
	Dir string
	// Env is added to the server's environment (and the kernelspec's env).
	Env map[string]string
	// StartTimeout bounds start-up until the kernel answers. Default 60 s.
	StartTimeout time.Duration
	// ShutdownWait is how long Close waits for the kernel to obey a
	// shutdown_request before SIGTERM; TermWait how long after SIGTERM before
	// SIGKILL. Defaults 3 s and 2 s.
	ShutdownWait, TermWait time.Duration
	// InterruptGrace is how long an execution whose context ended waits for
	// the interrupted kernel to finish. Default 5 s.
	InterruptGrace time.Duration
	// HeartbeatInterval and HeartbeatMisses govern death detection of
	// attached kernels: after HeartbeatMisses unanswered beats in a row the
	// kernel is dead. Defaults 1 s and 3.
	HeartbeatInterval time.Duration
	HeartbeatMisses   int
	// StockIPyKernel turns off the start-up options this package gives
	// ipykernel to cut its per-execute latency (see ipykernelArgs).
	StockIPyKernel bool
	// MemoryLimit, when > 0, caps the kernel process's address space
	// (RLIMIT_AS) at that many bytes; the processes it starts inherit the
	// cap. It is set right after the process starts. Linux only: elsewhere
	// Start fails.
	MemoryLimit int64
	// Gateway, when set, runs the kernel on a Jupyter server instead of as
	// a child process (see Gateway). Python, Dir, MemoryLimit and the
	// kernelspec's argv do not apply there.
	Gateway *Gateway
	// DetachOnClose makes Close of an attached kernel (Attach,
	// AttachGateway) only disconnect, leaving the kernel running for
	// whoever else uses it. Kernels this package started are always shut
	// down.
	DetachOnClose bool
	// MaxMessageSize is the largest message, and so the largest frame, the
	// kernel may send, in bytes; default DefaultMaxMessageSize. A kernel
	// that announces more (over ZeroMQ or a gateway's WebSocket) is
	// stopped: calls in flight return a *DiedError whose Protocol says so,
	// and nothing larger is ever allocated.
	MaxMessageSize int64
	// Sandbox, when set, runs the kernel under bubblewrap (Linux only; see
	// SandboxOptions). Dir is then required: it is the one directory the
	// kernel can write.
	Sandbox *SandboxOptions
}

// ipykernelArgs tune ipykernel for a client that waits for both the
// execute_reply and the idle status, as this one does. ipykernel sleeps
// 0.5 ms before every execute_reply so that clients reading only the reply
// see the outputs first; that sleep costs about 2 ms a round trip here and
// buys this client nothing. Nothing a notebook user sees changes.
var ipykernelArgs = []string{"--IPythonKernel._execute_sleep=0"}

// isIPyKernel reports whether argv starts ipykernel.
func isIPyKernel(argv []string) bool {
	for _, a := range argv {
		if a == "ipykernel_launcher" || a == "ipykernel" {
			return true
		}
	}
	return false
}

func (o *Options) setDefaults() {
	if len(o.Spec.Argv) == 0 && o.Gateway == nil {
		py := o.Python
		if py == "" {
			py = "python3"
		}
		o.Spec = kernelspec.ForInterpreter(py)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.ShutdownWait <= 0 {
		o.ShutdownWait = 3 * time.Second
	}
	if o.TermWait <= 0 {
		o.TermWait = 2 * time.Second
	}
	if o.InterruptGrace <= 0 {
		o.InterruptGrace = 5 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = time.Second
	}
	if o.HeartbeatMisses <= 0 {
		o.HeartbeatMisses = 3
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
}

// Kernel is a running kernel and the client connected to it. Its methods are
// safe for concurrent use; executions are queued by the kernel itself in the
// order they were sent.
type Kernel struct {
	opts    Options
	session string
	gwc     *gatewayClient // nil for local kernels
	// sandboxDir is the sandboxed kernel's working directory, opened once
	// by Start and bound by fd at every launch, restarts included; nil
	// without a sandbox. Closed by Close and Kill.
	sandboxDir *os.File
	// widgets holds the ipywidgets models of the current process.
	widgets *Widgets

	restartMu sync.Mutex // serializes Restart and Close
	mu        sync.Mutex // guards the fields below
	gen       *generation
	closed    bool
	// restarting is set while Restart replaces gen.
	restarting bool
	// failed is set when a restart stopped the old process but could not
	// start a new one: every call then reports it (a *RestartError) until
	// a restart succeeds.
	failed error
}

// generation is one kernel process (or one attachment) and its sockets. A
// restart replaces the whole generation.
type generation struct {
	conn   Conn
	router *router
	proc   *process    // nil when attached
	dir    *runtimeDir // nil when attached
	ci     ConnectionInfo
	file   string
	gw     *gatewayKernel // nil unless the kernel runs on a gateway
	// features is kernel_info_reply's supported_features, as the
	// kernel answered when it became ready (set before the generation
	// is published, never changed after).
	features []string
	// implementation is kernel_info_reply's implementation and its
	// version, e.g. "ipython 8.12.3".
	implementation string

	died     chan struct{} // closed when the kernel is gone
	diedOnce sync.Once
	diedErr  error
	stop     context.CancelFunc // stops the watcher
	watcher  chan struct{}
}

func (g *generation) markDead(err error) {
	g.diedOnce.Do(func() {
		g.diedErr = err
		close(g.died)
	})
}

// limits are what a generation's sockets hold the kernel to: a kernel
// that breaks them is stopped, since its stream can no longer be read.
func (k *Kernel) limits(g *generation) connLimits {
	return connLimits{maxMessage: k.opts.MaxMessageSize, report: func(e *ProtocolError) {
		g.markDead(&DiedError{ExitCode: -1, Protocol: e})
		if g.proc != nil {
			g.proc.kill()
		}
	}}
}

func (g *generation) dead() error {
	select {
	case <-g.died:
		return g.diedErr
	default:
		return nil
	}
}

// current returns the live generation, or an error if the kernel is closed.
func (k *Kernel) current() (*generation, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	if k.failed != nil {
		return nil, k.failed
	}
	return k.gen, nil
}

// Pid is the kernel's process id, or 0 for an attached kernel.
func (k *Kernel) Pid() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == nil || k.gen.proc == nil || k.failed != nil {
		return 0
	}
	return k.gen.proc.pid
}

// ConnectionFile is the path of the current connection file.
func (k *Kernel) ConnectionFile() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen.file
}

// Spec is the kernelspec the kernel was started from.
func (k *Kernel) Spec() kernelspec.Spec { return k.opts.Spec }

// State is the kernel's state: "idle" or "busy" as it last reported on iopub,
// "dead" once it died or a restart failed, "closed" after Close.
func (k *Kernel) State() string {
	g, err := k.current()
	if errors.Is(err, ErrKernelDied) {
		return "dead"
	}
	if err != nil {
		return "closed"
	}
	k.mu.Lock()
	restarting := k.restarting
	k.mu.Unlock()
	if restarting {
		return "starting"
	}
	if g.dead() != nil {
		return "dead"
	}
	return g.router.executionState()
}

// Dead returns a channel closed when the current kernel process dies, and
// the error saying how (nil until then).
func (k *Kernel) Dead() (<-chan struct{}, func() error) {
	g, err := k.current()
	if err != nil {
		c := make(chan struct{})
		close(c)
		return c, func() error { return err }
	}
	return g.died, g.dead
}

// Stderr returns the last output the kernel process wrote to its own stdout
// and stderr (not the code's output, which travels on iopub).
func (k *Kernel) Stderr() string {
	g, err := k.current()
	if err != nil || g.proc == nil {
		return ""
	}
	return g.proc.output.String()
}

// Env returns a copy of the extra environment the kernel was started with.
func (k *Kernel) Env() map[string]string { return maps.Clone(k.opts.Env) }
