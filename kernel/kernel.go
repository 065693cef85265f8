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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
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

func (g *generation) dead() error {
	select {
	case <-g.died:
		return g.diedErr
	default:
		return nil
	}
}

// Start launches a kernel and waits until it answers a kernel_info_request
// on shell and reports that request's status on iopub. A kernel that exits
// or stays silent until StartTimeout gives an error with its last output.
func Start(ctx context.Context, opts Options) (*Kernel, error) {
	opts.setDefaults()
	if opts.MemoryLimit > 0 && !memoryLimitSupported {
		return nil, fmt.Errorf("kernel: a memory limit is only supported on Linux, not %s", runtime.GOOS)
	}
	if opts.Sandbox != nil {
		if err := CheckSandbox(*opts.Sandbox); err != nil {
			return nil, err
		}
		if opts.Dir == "" {
			return nil, errors.New("kernel: a sandboxed kernel needs a working directory (Options.Dir): it is the one directory the kernel can write")
		}
		dir, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("kernel: sandbox working directory: %w", err)
		}
		opts.Dir = dir
		// A copy: the caller's options may be shared by other kernels.
		sb := *opts.Sandbox
		if sb.mode, err = checkSandbox(sb); err != nil {
			return nil, err
		}
		opts.Sandbox = &sb
	}
	k := &Kernel{opts: opts, session: uuid.NewString()}
	if opts.Sandbox != nil {
		f, err := openSandboxDir(opts.Dir)
		if err != nil {
			return nil, err
		}
		k.sandboxDir = f
	}
	if opts.Gateway != nil {
		gc, err := opts.Gateway.client()
		if err != nil {
			return nil, err
		}
		if opts.MemoryLimit > 0 {
			gc.release()
			return nil, fmt.Errorf("kernel: a memory limit cannot be set on a kernel that runs on gateway %s", gc)
		}
		k.gwc = gc
	}
	g, err := k.launch(ctx)
	if err != nil {
		k.gwc.release()
		k.closeSandboxDir()
		return nil, err
	}
	k.gen = g
	return k, nil
}

func (k *Kernel) launch(ctx context.Context) (*generation, error) {
	ctx, cancel := context.WithTimeout(ctx, k.opts.StartTimeout)
	defer cancel()
	if k.gwc != nil {
		return k.launchGateway(ctx)
	}

	// ipykernel binds ports of its own choosing when given 0 and writes
	// them back into the file. Ports we pick are free only until we close
	// them: on a busy machine another process (another kernel binding a
	// random port) can take one before the kernel binds it, and the kernel
	// then dies, or our dial meets a stranger. Other kernels get ports we
	// pick.
	// A sandboxed kernel has a loopback of its own: it listens on ipc
	// sockets in its runtime dir instead, which is bound into the sandbox.
	sandbox := k.opts.Sandbox
	ownPorts := isIPyKernel(k.opts.Spec.Argv) && sandbox == nil
	// A sandboxed kernel's runtime dir is in a folder of runtime dirs
	// only, so hiding the others' hides nothing else (an allowed path in
	// /tmp, say).
	var base string
	if sandbox != nil && os.Getenv("KERNEL_MCP_RUNTIME_DIR") == "" {
		b, err := sandboxRuntimeBase()
		if err != nil {
			return nil, err
		}
		base = b
	}
	dir, err := newRuntimeDirIn(base)
	if err != nil {
		return nil, err
	}
	var ci ConnectionInfo
	if sandbox != nil {
		ci, err = ipcConnectionInfo(dir.path)
	} else {
		ci, err = newConnectionInfo(!ownPorts)
	}
	if err != nil {
		dir.Remove()
		return nil, err
	}
	ci.KernelName = k.opts.Spec.Name
	file, err := dir.writeConnectionFile(ci)
	if err != nil {
		dir.Remove()
		return nil, err
	}
	env := os.Environ()
	for k, v := range k.opts.Spec.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range k.opts.Env {
		env = append(env, k+"="+v)
	}
	argv := k.opts.Spec.ExpandArgv(file)
	if !k.opts.StockIPyKernel && isIPyKernel(argv) {
		argv = append(argv, ipykernelArgs...)
	}
	env = filterEnv(env)
	procDir, extra := k.opts.Dir, []*os.File(nil)
	if sandbox != nil {
		argv = bwrapArgv(k.sandboxPlan(dir.path, argv), argv)
		// bwrap's own working directory is never the kernel's: the name
		// could lead elsewhere by now.
		procDir, extra = "/", []*os.File{k.sandboxDir}
	}
	proc, err := startProcess(argv, procDir, env, extra)
	if err != nil {
		dir.Remove()
		return nil, err
	}
	proc.sandboxed = sandbox != nil
	g := &generation{proc: proc, dir: dir, ci: ci, file: file, died: make(chan struct{})}
	fail := func(err error) (*generation, error) {
		k.stopGeneration(g, 0)
		return nil, err
	}
	if k.opts.MemoryLimit > 0 && sandbox == nil {
		if err := setMemoryLimit(proc.pid, k.opts.MemoryLimit); err != nil {
			return fail(fmt.Errorf("kernel: setting the memory limit of %d bytes on pid %d: %w", k.opts.MemoryLimit, proc.pid, err))
		}
	}

	// Watch the process from the start, so a kernel that dies while we dial
	// ends the wait at once.
	wctx, stop := context.WithCancel(context.Background())
	g.stop, g.watcher = stop, make(chan struct{})
	go func() {
		defer close(g.watcher)
		select {
		case <-proc.exited:
			g.markDead(proc.diedError())
		case <-wctx.Done():
		}
	}()

	if ownPorts {
		bound, err := waitBoundPorts(ctx, g, ci)
		if err != nil {
			return fail(k.startError(g, ctx, err))
		}
		g.ci, ci = bound, bound
	}

	dctx, dcancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-g.died:
			dcancel()
		case <-dctx.Done():
		}
	}()
	conn, err := dialZMQ(dctx, ci)
	dcancel()
	if err != nil {
		return fail(k.startError(g, ctx, err))
	}
	g.conn = conn
	g.router = newRouter(conn)
	if err := k.waitReady(ctx, g); err != nil {
		return fail(k.startError(g, ctx, err))
	}
	return g, nil
}

// waitBoundPorts polls the connection file until the kernel has written
// the ports it bound. ipykernel does so right after binding, before its
// slow part (importing IPython), so this costs no start-up time.
func waitBoundPorts(ctx context.Context, g *generation, want ConnectionInfo) (ConnectionInfo, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if ci, ok := boundPorts(g.file, want); ok {
			return ci, nil
		}
		select {
		case <-tick.C:
		case <-g.died:
			return ConnectionInfo{}, g.diedErr
		case <-ctx.Done():
			return ConnectionInfo{}, fmt.Errorf("%w (the kernel never wrote the ports it bound into %s)", ctx.Err(), g.file)
		}
	}
}

// startError explains a failed start: the kernel's own last words when it
// died, or the timeout when it stayed silent.
func (k *Kernel) startError(g *generation, ctx context.Context, err error) error {
	argv := strings.Join(k.opts.Spec.ExpandArgv(g.file), " ")
	if d := g.dead(); d != nil {
		var de *DiedError
		if errors.As(d, &de) && strings.TrimSpace(de.Stderr) != "" {
			return fmt.Errorf("kernel: %s exited during start-up: %w\n%s", argv, d, lastLines(de.Stderr, 15))
		}
		return fmt.Errorf("kernel: %s exited during start-up: %w", argv, d)
	}
	if ctx.Err() != nil {
		out := ""
		if g.proc != nil {
			if s := strings.TrimSpace(g.proc.output.String()); s != "" {
				out = "\n" + lastLines(s, 15)
			}
		}
		if !errors.Is(err, ctx.Err()) {
			err = ctx.Err()
		}
		return fmt.Errorf("kernel: %s did not become ready within %v: %w%s", argv, k.opts.StartTimeout, err, out)
	}
	return err
}

// waitReady sends kernel_info_request until one is answered on shell and
// its status seen on iopub. A SUB socket misses what was published before it
// joined, so a reply without a status is followed by another request.
func (k *Kernel) waitReady(ctx context.Context, g *generation) error {
	// Every request sent stays registered on one mailbox until the end:
	// a kernel starting slowly on a loaded machine may answer each one
	// after the next was sent, and only accepting the newest reply would
	// never catch up. The wait between requests doubles, up to 4 s.
	box := newMailbox()
	type progress struct{ replied, idle bool }
	sent := map[string]*progress{}
	defer func() {
		for id := range sent {
			g.router.unregister(id)
		}
	}()
	interval := 500 * time.Millisecond
	var replies, statuses, idles int
	// seen says what the wait saw, for the error of a kernel that never
	// became ready: no replies means shell is stuck, replies without
	// statuses means iopub is.
	seen := func(err error) error {
		lost := ""
		if zc, ok := g.conn.(*zmqConn); ok {
			lost = zc.lostSummary()
		}
		return fmt.Errorf("%w (%d kernel_info requests sent; received %d replies and %d statuses, %d of them idle%s)",
			err, len(sent), replies, statuses, idles, lost)
	}
	for {
		msg, err := wire.NewMessage("kernel_info_request", k.session, nil)
		if err != nil {
			return err
		}
		g.router.registerBox(msg.Header.MsgID, box)
		sent[msg.Header.MsgID] = &progress{}
		if err := g.conn.Send(ctx, Shell, msg); err != nil {
			return err
		}
		retry := time.NewTimer(interval)
		interval = min(2*interval, 4*time.Second)
	wait:
		for {
			select {
			case <-box.notify:
				for _, r := range box.take() {
					p := sent[r.Msg.ParentHeader.MsgID]
					if p == nil {
						continue
					}
					switch {
					case r.Channel == Shell && r.Msg.Header.MsgType == "kernel_info_reply":
						replies++
						p.replied = true
					case r.Channel == IOPub && r.Msg.Header.MsgType == "status":
						// idle, not busy: it is the last message of the
						// request, so State() reads "idle" once Start returns.
						statuses++
						var st iopubContent
						if json.Unmarshal(r.Msg.Content, &st) == nil && st.ExecutionState == "idle" {
							idles++
							p.idle = true
						}
					}
					if p.replied && p.idle {
						retry.Stop()
						return nil
					}
				}
			case <-retry.C:
				// No request has both its reply and its status yet (the
				// SUB socket may have missed a status): ask again.
				break wait
			case <-g.died:
				retry.Stop()
				return g.diedErr
			case <-ctx.Done():
				retry.Stop()
				return seen(ctx.Err())
			}
		}
	}
}

// Attach connects to a kernel someone else started, from its connection
// file. It gives up when ctx ends, also against ports that accept a
// connection and never answer (a stopped kernel, another program). The
// kernel's death is detected by heartbeat: HeartbeatMisses beats in a row
// that get no answer within HeartbeatInterval, whether the kernel exited or
// is stopped. Close disconnects and asks the kernel to shut down (only
// disconnects with Options.DetachOnClose); Restart is not available.
func Attach(ctx context.Context, connectionFile string, opts Options) (*Kernel, error) {
	opts.setDefaults()
	ci, err := ReadConnectionFile(connectionFile)
	if err != nil {
		return nil, err
	}
	k := &Kernel{opts: opts, session: uuid.NewString()}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	conn, err := dialZMQ(ctx, ci)
	if err != nil {
		return nil, err
	}
	g := &generation{conn: conn, router: newRouter(conn), ci: ci, file: connectionFile, died: make(chan struct{})}
	if err := k.waitReady(ctx, g); err != nil {
		conn.Close()
		<-g.router.done
		return nil, fmt.Errorf("kernel: attach to %s: %w", connectionFile, err)
	}
	wctx, stop := context.WithCancel(context.Background())
	g.stop, g.watcher = stop, make(chan struct{})
	go k.watchHeartbeat(wctx, g)
	k.gen = g
	return k, nil
}

// watchHeartbeat marks the generation dead after HeartbeatMisses silent
// beats in a row.
func (k *Kernel) watchHeartbeat(ctx context.Context, g *generation) {
	defer close(g.watcher)
	misses := 0
	t := time.NewTicker(k.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, k.opts.HeartbeatInterval)
		err := g.conn.Heartbeat(hctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			misses = 0
			continue
		}
		if misses++; misses >= k.opts.HeartbeatMisses {
			g.markDead(&DiedError{ExitCode: -1, Heartbeat: true})
			return
		}
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

// ExecuteOptions tunes one execution.
type ExecuteOptions struct {
	// OnEvent, if set, is called for each output as it arrives, on the
	// caller's goroutine inside Execute. It must not call back into Kernel.
	OnEvent func(Event)
	// Silent runs the code without broadcasting it or counting it.
	Silent bool
	// StoreHistory: default true; set NoStoreHistory to turn it off.
	NoStoreHistory bool
	// UserExpressions are evaluated after the code; their results come back
	// in ExecuteResult.UserExpressions.
	UserExpressions map[string]string
	// StopOnError (default true) aborts queued executions after an error.
	ContinueOnError bool
	// MaxStreamBytes bounds the text kept of each stream output: the first
	// and the last half of it, with a note of how much was left out
	// between. MaxOutputs bounds the number of outputs kept; later ones
	// (but errors) are counted and dropped. 0 means no limit. OnEvent sees
	// everything either way.
	MaxStreamBytes int
	MaxOutputs     int
	// OnInput, if set, answers the code's input() and getpass(): the
	// execution is sent with allow_stdin, and each input_request calls
	// OnInput on a goroutine of its own with a context that ends when
	// Execute returns. Its reply goes back as the input_reply; an error
	// (a declined or cancelled question) makes input() raise EOFError in the
	// code, as end of input on a terminal does. Without OnInput, input()
	// fails at once with StdinNotImplementedError.
	OnInput func(ctx context.Context, req InputRequest) (string, error)
}

// InputRequest is a kernel's input_request: the code called input() or, with
// Password set, getpass().
type InputRequest struct {
	Prompt   string `json:"prompt"`
	Password bool   `json:"password"`
}

// inputEOF is the input_reply value that ipykernel turns into EOFError.
const inputEOF = "\x04"

// Execute runs code and returns its outputs once the kernel has both sent
// execute_reply and reported idle for it. input() fails at once unless
// opts.OnInput answers it.
//
// Success and failure follow execute_reply's status, as in a notebook: when
// it is "error", the result has Status "error" and the returned error is the
// reply's *ExecError. Tracebacks a cell showed and survived (showtraceback,
// %run of a failing script) are error outputs in the result, not an error.
// When ctx ends while the kernel runs this request, the kernel is
// interrupted and Execute waits up to InterruptGrace for it to finish,
// returning the outputs so far and ctx.Err(); if the kernel does not finish,
// the error also matches ErrInterruptIgnored. Execute never interrupts code
// that is not its own: when ctx ends before the kernel has started the
// request (it waits behind other code), Execute waits up to InterruptGrace
// for it to start and interrupts it then; if it does not start, Execute
// returns ctx.Err() and ErrNotStarted without interrupting, and the kernel
// runs the request later anyway (Jupyter has no way to withdraw a queued
// request). When the kernel dies, the error matches ErrKernelDied.
func (k *Kernel) Execute(ctx context.Context, code string, opts ExecuteOptions) (*ExecuteResult, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if d := g.dead(); d != nil {
		return nil, d
	}
	uexpr := opts.UserExpressions
	if uexpr == nil {
		uexpr = map[string]string{}
	}
	msg, err := wire.NewMessage("execute_request", k.session, map[string]any{
		"code":             code,
		"silent":           opts.Silent,
		"store_history":    !opts.NoStoreHistory && !opts.Silent,
		"user_expressions": uexpr,
		"allow_stdin":      opts.OnInput != nil,
		"stop_on_error":    !opts.ContinueOnError,
	})
	if err != nil {
		return nil, err
	}
	res := &ExecuteResult{MsgID: msg.Header.MsgID}
	box := g.router.register(msg.Header.MsgID)
	defer g.router.unregister(msg.Header.MsgID)
	if err := g.conn.Send(ctx, Shell, msg); err != nil {
		return nil, err
	}

	col := newCollector(res, opts)
	defer col.flush()
	// Questions asked through stdin are answered on goroutines of their
	// own, so that the loop below keeps reading output and can interrupt.
	inputCtx, stopInput := context.WithCancel(context.Background())
	var inputs sync.WaitGroup
	defer inputs.Wait()
	defer stopInput()
	var (
		// busy is set by the iopub busy status whose parent is this
		// request: the kernel has taken it up, so until its reply or idle
		// it runs this code and no other. inputSeen is set by its
		// execute_input, published once ipykernel's SIGINT handler is in
		// place: a SIGINT between busy and that point would be ignored.
		// Silent requests publish no execute_input; busy must do.
		busy, inputSeen, replied, idle bool
		// waiting is set while ctx has ended but the request has not
		// started: the interrupt is owed, to be sent once it does.
		waiting bool
		ctxDone = ctx.Done()
		grace   <-chan time.Time
		ctxErr  error
	)
	handle := func(rs []Received) {
		for _, r := range rs {
			switch {
			case r.Channel == Shell && r.Msg.Header.MsgType == "execute_reply":
				replied = true
				col.reply(r.Msg.Content)
			case r.Channel == Stdin && r.Msg.Header.MsgType == "input_request" && opts.OnInput != nil:
				var ir InputRequest
				_ = json.Unmarshal(r.Msg.Content, &ir)
				parent := r.Msg.Header
				inputs.Go(func() { k.answerInput(inputCtx, g, parent, ir, opts.OnInput) })
			case r.Channel == IOPub && r.Msg.Header.MsgType == "status":
				var st iopubContent
				if json.Unmarshal(r.Msg.Content, &st) == nil {
					switch st.ExecutionState {
					case "busy":
						busy = true
					case "idle":
						idle = true
					}
				}
			case r.Channel == IOPub:
				if r.Msg.Header.MsgType == "execute_input" {
					inputSeen = true
				}
				col.iopub(r.Msg.Header.MsgType, r.Msg.Content)
			}
		}
	}
	running := func() bool { return (inputSeen || busy && opts.Silent) && !replied && !idle }
	var graceTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	startGrace := func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
		graceTimer = time.NewTimer(k.opts.InterruptGrace)
		grace = graceTimer.C
	}
	interrupt := func() error {
		waiting = false
		res.Interrupted = true
		ictx, cancel := context.WithTimeout(context.Background(), k.opts.InterruptGrace)
		ierr := k.interrupt(ictx, g)
		cancel()
		if ierr != nil && g.dead() == nil {
			return errors.Join(ctxErr, ErrInterruptIgnored, ierr)
		}
		startGrace()
		return nil
	}
	// noReply fires when the kernel reported idle but sent no reply: an
	// interrupt that lands while ipykernel is already handling one makes it
	// drop the reply, and waiting for it would wait forever.
	var noReply <-chan time.Time
	for !(replied && idle) {
		if idle && !replied && noReply == nil {
			t := time.NewTimer(noReplyWait)
			defer t.Stop()
			noReply = t.C
		}
		select {
		case <-noReply:
			if ctxErr != nil {
				return res, errors.Join(ctxErr, ErrNoReply)
			}
			return res, ErrNoReply
		case <-box.notify:
			handle(box.take())
			if waiting && running() {
				if err := interrupt(); err != nil {
					return res, err
				}
			}
		case <-g.died:
			// Drain what arrived before the death.
			for _, r := range box.take() {
				if r.Channel == IOPub {
					col.iopub(r.Msg.Header.MsgType, r.Msg.Content)
				}
			}
			return res, g.diedErr
		case <-ctxDone:
			ctxDone = nil
			ctxErr = ctx.Err()
			// What already arrived decides whether this request runs:
			// select does not prefer the mailbox when both are ready.
			handle(box.take())
			switch {
			case replied || idle:
				// The code has finished; the rest of its messages are
				// on their way. An interrupt now would hit the next
				// request, someone else's.
			case running():
				if err := interrupt(); err != nil {
					return res, err
				}
			default:
				// Not started: queued behind other code, or about to
				// start. An interrupt now would stop that other code,
				// or be lost; it is sent once this request starts, if
				// that happens within the grace period.
				waiting = true
				startGrace()
			}
		case <-grace:
			if !waiting {
				return res, errors.Join(ctxErr, ErrInterruptIgnored)
			}
			if busy && !replied && !idle {
				// Taken up, but no execute_input came (a kernel that
				// publishes none): the code running is this request's.
				if err := interrupt(); err != nil {
					return res, err
				}
				continue
			}
			return res, errors.Join(ctxErr, ErrNotStarted)
		}
	}
	if ctxErr != nil {
		return res, ctxErr
	}
	if res.Error != nil {
		return res, res.Error
	}
	return res, nil
}

// answerInput asks onInput for the reply to one input_request and sends it
// back on stdin. A failed question is answered with end of input, so the
// code sees EOFError rather than waiting forever.
func (k *Kernel) answerInput(ctx context.Context, g *generation, parent wire.Header, ir InputRequest, onInput func(context.Context, InputRequest) (string, error)) {
	value, err := onInput(ctx, ir)
	if ctx.Err() != nil {
		return // the execution ended meanwhile; nobody waits for the reply
	}
	if err != nil {
		value = inputEOF
	}
	msg, err := wire.NewMessage("input_reply", k.session, map[string]string{"value": value})
	if err != nil {
		return
	}
	msg.ParentHeader = parent
	_ = g.conn.Send(ctx, Stdin, msg)
}

// request sends one request and waits for the reply of replyType, decoding
// its content into out.
func (k *Kernel) request(ctx context.Context, g *generation, ch Channel, msgType string, content any, replyType string, out any) error {
	msg, err := wire.NewMessage(msgType, k.session, content)
	if err != nil {
		return err
	}
	box := g.router.register(msg.Header.MsgID)
	defer g.router.unregister(msg.Header.MsgID)
	if err := g.conn.Send(ctx, ch, msg); err != nil {
		return err
	}
	for {
		select {
		case <-box.notify:
			for _, r := range box.take() {
				if r.Channel == ch && r.Msg.Header.MsgType == replyType {
					if out == nil {
						return nil
					}
					if err := json.Unmarshal(r.Msg.Content, out); err != nil {
						return fmt.Errorf("kernel: decode %s: %w", replyType, err)
					}
					return nil
				}
			}
		case <-g.died:
			return g.diedErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// KernelInfo asks the kernel for its language and implementation.
func (k *Kernel) KernelInfo(ctx context.Context) (*KernelInfo, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	var info KernelInfo
	if err := k.request(ctx, g, Shell, "kernel_info_request", nil, "kernel_info_reply", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Complete asks for completions of code at cursorPos (a count of Unicode
// code points, as the protocol says; -1 means the end of code).
func (k *Kernel) Complete(ctx context.Context, code string, cursorPos int) (*CompleteReply, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if cursorPos < 0 {
		cursorPos = len([]rune(code))
	}
	var r CompleteReply
	err = k.request(ctx, g, Shell, "complete_request", map[string]any{"code": code, "cursor_pos": cursorPos}, "complete_reply", &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Inspect asks for documentation of the name at cursorPos (-1: end of code).
// detailLevel 0 gives the docstring, 1 also the source where available.
func (k *Kernel) Inspect(ctx context.Context, code string, cursorPos, detailLevel int) (*InspectReply, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if cursorPos < 0 {
		cursorPos = len([]rune(code))
	}
	var r InspectReply
	err = k.request(ctx, g, Shell, "inspect_request", map[string]any{"code": code, "cursor_pos": cursorPos, "detail_level": detailLevel}, "inspect_reply", &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Interrupt interrupts the running code; the kernel keeps its namespace. A
// kernel whose interrupt_mode is "signal" gets SIGINT (its process group, on
// Unix); otherwise, or on Windows, or when attached or sandboxed, an
// interrupt_request.
func (k *Kernel) Interrupt(ctx context.Context) error {
	g, err := k.current()
	if err != nil {
		return err
	}
	return k.interrupt(ctx, g)
}

func (k *Kernel) interrupt(ctx context.Context, g *generation) error {
	if d := g.dead(); d != nil {
		return d
	}
	if g.gw != nil {
		return g.gw.client.interrupt(ctx, g.gw.id)
	}
	// A sandboxed kernel's pid is in a namespace of its own: the process
	// we could signal is bwrap, so it is interrupted by message.
	if g.proc != nil && canSignalInterrupt && k.opts.Spec.InterruptMode != "message" && k.opts.Sandbox == nil {
		if err := g.proc.interrupt(); err != nil {
			return fmt.Errorf("kernel: interrupt: %w", err)
		}
		return nil
	}
	return k.request(ctx, g, Control, "interrupt_request", nil, "interrupt_reply", nil)
}

// Restart replaces the kernel process with a fresh one (new ports, new
// sockets, empty namespace). Calls in flight on the old process return at
// once with an error matching ErrKernelDied (a *DiedError with Restarted
// set), on local and gateway kernels alike. State reports "starting"
// meanwhile. When
// the new process does not start, the old one is gone all the same: every
// call then returns a *RestartError (matching ErrKernelDied) naming the
// cause, State reports "dead", and another Restart may be tried.
func (k *Kernel) Restart(ctx context.Context) error { return k.restart(ctx, false) }

func (k *Kernel) restart(ctx context.Context, force bool) error {
	k.restartMu.Lock()
	defer k.restartMu.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return ErrClosed
	}
	old := k.gen
	if old.proc == nil && old.gw == nil {
		k.mu.Unlock()
		return ErrNotOwned
	}
	k.restarting = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.restarting = false
		k.mu.Unlock()
	}()
	// Calls in flight on the old process end now, with a death that says
	// why. Stopping the generation would mark it with ErrClosed (which
	// says the caller closed the Kernel) or with the exit status,
	// whichever came first.
	old.markDead(&DiedError{ExitCode: -1, Restarted: true})

	var (
		g   *generation
		err error
	)
	if old.gw != nil {
		g, err = k.restartGateway(ctx, old)
	} else {
		if force {
			k.killGeneration(old)
		} else {
			k.stopGeneration(old, k.opts.ShutdownWait)
		}
		g, err = k.launch(ctx)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		// k.gen stays the stopped generation, so a later Restart or
		// Close finds everything already released.
		k.failed = &RestartError{Err: err}
		return err
	}
	k.gen, k.failed = g, nil
	return nil
}

// ForceRestart is Restart for a kernel that is stuck: it ignored an
// interrupt, so it would ignore a shutdown_request too. The old process is
// killed at once rather than asked to stop.
func (k *Kernel) ForceRestart(ctx context.Context) error { return k.restart(ctx, true) }

// Close shuts the kernel down: a shutdown_request, then SIGTERM after
// ShutdownWait, then SIGKILL after TermWait. It removes the connection file
// and waits for every goroutine of this kernel. An attached kernel is asked
// to shut down and disconnected. A gateway kernel is deleted through REST;
// Close reports a failed DELETE, since the kernel may then still run.
// Close is idempotent.
func (k *Kernel) Close() error {
	k.restartMu.Lock()
	defer k.restartMu.Unlock()
	if !k.markClosed() {
		return nil
	}
	if k.gen.proc == nil && k.gen.gw == nil && k.gen.dead() == nil && !k.opts.DetachOnClose {
		ctx, cancel := context.WithTimeout(context.Background(), k.opts.ShutdownWait)
		k.request(ctx, k.gen, Control, "shutdown_request", map[string]bool{"restart": false}, "shutdown_reply", nil)
		cancel()
	}
	k.stopGeneration(k.gen, k.opts.ShutdownWait)
	k.gwc.release()
	k.closeSandboxDir()
	if gw := k.gen.gw; gw != nil {
		return gw.stopErr
	}
	return nil
}

// Kill ends a kernel this package started at once, with SIGKILL to its
// process group, without asking it to shut down, then releases everything
// Close would. It is for a kernel that is stuck. An attached kernel is
// only disconnected, as by Close.
func (k *Kernel) Kill() error {
	k.mu.Lock()
	owned := k.gen != nil && k.gen.proc != nil
	k.mu.Unlock()
	if !owned {
		return k.Close()
	}
	k.restartMu.Lock()
	defer k.restartMu.Unlock()
	if !k.markClosed() {
		return nil
	}
	k.killGeneration(k.gen)
	k.closeSandboxDir()
	return nil
}

// closeSandboxDir releases the working directory's fd of a sandboxed kernel.
func (k *Kernel) closeSandboxDir() {
	if k.sandboxDir != nil {
		k.sandboxDir.Close()
		k.sandboxDir = nil
	}
}

// markClosed marks the kernel closed, reporting false if it already was.
func (k *Kernel) markClosed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	k.closed = true
	return true
}

// stopGeneration ends one generation: asks the kernel to shut down (when
// wait > 0), escalates to SIGTERM and SIGKILL, then closes the sockets and
// removes the runtime dir. Calls in flight see the generation die.
func (k *Kernel) stopGeneration(g *generation, wait time.Duration) {
	if g.gw != nil && g.gw.deleteOnStop {
		k.deleteGatewayKernel(g)
	}
	if p := g.proc; p != nil {
		if p.running() && wait > 0 && g.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			k.request(ctx, g, Control, "shutdown_request", map[string]bool{"restart": false}, "shutdown_reply", nil)
			cancel()
			p.waitExit(wait)
		}
		if p.running() {
			p.terminate()
			if !p.waitExit(k.opts.TermWait) {
				p.kill()
				p.waitExit(30 * time.Second)
			}
		}
		// Children the kernel left in its process group go too.
		p.kill()
	}
	g.markDead(ErrClosed)
	if g.stop != nil {
		g.stop()
		<-g.watcher
	}
	if g.conn != nil {
		g.conn.Close()
		<-g.router.done
	}
	g.dir.Remove()
}

// killGeneration ends a generation with SIGKILL, without asking.
func (k *Kernel) killGeneration(g *generation) {
	if p := g.proc; p != nil {
		p.kill()
		p.waitExit(30 * time.Second)
	}
	k.stopGeneration(g, 0)
}

// Env returns a copy of the extra environment the kernel was started with.
func (k *Kernel) Env() map[string]string { return maps.Clone(k.opts.Env) }

// sandboxPlan gathers from the host what the bwrap command line of this
// kernel needs. Every path is made absolute: bwrap takes a relative one as
// relative to its new root.
func (k *Kernel) sandboxPlan(runtimeDir string, argv []string) sandboxPlan {
	o := *k.opts.Sandbox
	o.ReadOnly = absPaths(o.ReadOnly)
	p := sandboxPlan{opts: o, dir: k.opts.Dir, runtimeDir: runtimeDir, hideDirs: hostHidden(), mode: o.mode,
		dirFD: 3}
	// The other kernels' runtime dirs (their connection files and
	// sockets) stay hidden even under an allowed parent.
	p.keepDirs = append(p.keepDirs, filepath.Dir(runtimeDir))
	inKept := func(d string) bool {
		return slices.ContainsFunc(p.keepDirs, func(h string) bool { return d == h || strings.HasPrefix(d, h+"/") })
	}
	for _, h := range absPaths(o.Hide) {
		st, err := os.Stat(h)
		switch {
		case err != nil:
			// Nothing there to hide.
		case inKept(h):
			// Hidden already with a folder above it.
		case st.IsDir():
			p.keepDirs = append(p.keepDirs, h)
		default:
			p.keepFiles = append(p.keepFiles, h)
		}
	}
	// An interpreter inside what stays hidden is not shown: it would be
	// hidden again on top, and such a place (a work directory) is one
	// the kernels can write.
	for _, d := range interpreterPrefixes(argv[0], p.hideDirs) {
		if !inKept(d) {
			p.interp = append(p.interp, d)
		}
	}
	if k.opts.MemoryLimit > 0 {
		p.memoryKB = max(k.opts.MemoryLimit/1024, 1)
	}
	return p
}

// absPaths returns the paths made absolute and clean.
func absPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}
