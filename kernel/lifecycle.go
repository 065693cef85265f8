// Interrupting, restarting and shutting down a running kernel (Start and
// Attach are in start.go).

package kernel

import (
	"context"
	"fmt"
	"time"
)

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
	return k.request(ctx, g, Control, "interrupt_request", nil, "interrupt_reply", nil, nil)
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
	// The new process has no widgets; what the old one still sends is
	// ignored.
	k.widgets.reset()

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
		k.request(ctx, k.gen, Control, "shutdown_request", map[string]bool{"restart": false}, "shutdown_reply", nil, nil)
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
			k.request(ctx, g, Control, "shutdown_request", map[string]bool{"restart": false}, "shutdown_reply", nil, nil)
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
