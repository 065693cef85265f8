// Starting a kernel process, or attaching to one, and waiting until it
// answers; the heartbeat watch.

package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

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
	k := &Kernel{opts: opts, session: uuid.NewString(), widgets: newWidgets()}
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

	// A kernel listens on ipc sockets in its private runtime dir where
	// the platform has them (localTransport): any local user can connect
	// to a port on 127.0.0.1, and read a PUB socket's messages. A
	// sandboxed kernel always does: its loopback is its own, out of the
	// server's reach, and its runtime dir is bound into the sandbox.
	// Over TCP, ipykernel binds ports of its own choosing when given 0 and
	// writes them back into the file. Ports we pick are free only until we
	// close them: on a busy machine another process (another kernel binding
	// a random port) can take one before the kernel binds it, and the
	// kernel then dies, or our dial meets a stranger. Other kernels get
	// ports we pick.
	sandbox := k.opts.Sandbox
	ipc := sandbox != nil || localTransport == "ipc"
	ownPorts := isIPyKernel(k.opts.Spec.Argv) && !ipc
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
	if ipc {
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
	conn, err := dialZMQ(dctx, ci, k.limits(g))
	dcancel()
	if err != nil {
		return fail(k.startError(g, ctx, err))
	}
	g.conn = conn
	g.router = newRouter(conn, k.widgets.observer())
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
		newest := sent[msg.Header.MsgID]
		if err := g.conn.Send(ctx, Shell, msg); err != nil {
			return err
		}
		retry := time.NewTimer(interval)
		retryC := retry.C
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
						var info struct {
							Features       []string `json:"supported_features"`
							Implementation string   `json:"implementation"`
							Version        string   `json:"implementation_version"`
						}
						if json.Unmarshal(r.Msg.Content, &info) == nil {
							g.features = info.Features
							g.implementation = strings.TrimSpace(info.Implementation + " " + info.Version)
						}
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
					// Ready once the newest request is done: the kernel
					// answers requests in order, so none is left to turn
					// it busy after Start returns. An earlier one done
					// first proves that iopub is joined, so the newest's
					// status cannot be missed: stop asking, and wait.
					switch {
					case newest.replied && newest.idle:
						retry.Stop()
						return nil
					case p.replied && p.idle:
						retry.Stop()
						retryC = nil
					}
				}
			case <-retryC:
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
	k := &Kernel{opts: opts, session: uuid.NewString(), widgets: newWidgets()}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	g := &generation{ci: ci, file: connectionFile, died: make(chan struct{})}
	conn, err := dialZMQ(ctx, ci, k.limits(g))
	if err != nil {
		return nil, err
	}
	g.conn, g.router = conn, newRouter(conn, k.widgets.observer())
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
