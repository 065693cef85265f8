//go:build unix

package kernel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// TestFailedRestartSaysSo: a restart whose new process cannot start leaves
// a kernel that reports the failure and its cause, as a death, on every
// call; not ErrClosed, which would say the caller closed it. A later
// restart that works brings it back.
func TestFailedRestartSaysSo(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cwd")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	k := startKernel(t, Options{Dir: dir})
	mustExecute(t, k, "1")
	// The new process cannot start in a working directory that is gone.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	rerr := k.Restart(testCtx(t, 60*time.Second))
	if rerr == nil {
		t.Fatal("Restart in a removed directory succeeded")
	}
	check := func(what string, err error) {
		t.Helper()
		var re *RestartError
		if !errors.Is(err, ErrKernelDied) || errors.Is(err, ErrClosed) || !errors.As(err, &re) || !strings.Contains(err.Error(), "restart failed") || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s after the failed restart: %v, want a *RestartError (ErrKernelDied, not ErrClosed) naming the cause", what, err)
		}
	}
	_, err := k.Execute(testCtx(t, 10*time.Second), "1", ExecuteOptions{})
	check("Execute", err)
	_, err = k.KernelInfo(testCtx(t, 10*time.Second))
	check("KernelInfo", err)
	check("Interrupt", k.Interrupt(testCtx(t, 10*time.Second)))
	dead, why := k.Dead()
	select {
	case <-dead:
	default:
		t.Error("Dead() channel open after the failed restart")
	}
	check("Dead()", why())
	if s := k.State(); s != "dead" {
		t.Errorf("State() = %q, want dead", s)
	}
	if p := k.Pid(); p != 0 {
		t.Errorf("Pid() = %d, want 0: no process runs", p)
	}

	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatalf("second Restart: %v", err)
	}
	wantOutputs(t, mustExecute(t, k, "2 + 2"), "execute_result 4")
}

// TestSendObeysContext: a send that cannot complete (the kernel is stopped
// and a large message fills the socket buffers) returns when its context
// ends, and so does a second send queued behind it on the same socket.
func TestSendObeysContext(t *testing.T) {
	t.Parallel()
	k := startKernel(t, Options{})
	g, err := k.current()
	if err != nil {
		t.Fatal(err)
	}
	pid := k.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Let the kernel go on before Close (registered later, so it runs first).
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	// Far more than loopback TCP buffers take (a few MB). ipykernel
	// ignores content it does not know in a kernel_info_request.
	big := strings.Repeat("a", 32<<20)
	for _, pad := range []string{big, ""} {
		msg, err := wire.NewMessage("kernel_info_request", k.session, map[string]string{"pad": pad})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- g.conn.Send(ctx, Shell, msg) }()
		err = await(t, done, "Send to give up")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send(%d bytes) to a stopped kernel: %v, want DeadlineExceeded", len(pad), err)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The abandoned write finishes once the kernel reads again, and the
	// connection still works.
	if _, err := k.KernelInfo(testCtx(t, 60*time.Second)); err != nil {
		t.Fatalf("KernelInfo after SIGCONT: %v", err)
	}
	wantOutputs(t, mustExecute(t, k, "1 + 1"), "execute_result 2")
}

// restartUnderRun starts code that runs until it is stopped, restarts k
// under it, and checks what the call in flight got: a death saying the
// kernel was restarted, not ErrClosed, with the output before it.
func restartUnderRun(t *testing.T, k *Kernel) {
	t.Helper()
	mustExecute(t, k, "before = 1")
	opts, started := startedSignal()
	done := executeAsync(testCtx(t, 120*time.Second), k, "import time\nprint('started', flush=True)\ntime.sleep(120)", opts)
	await(t, started, "the code to start")
	if err := k.Restart(testCtx(t, 90*time.Second)); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	r := await(t, done, "the call in flight to return")
	var de *DiedError
	if !errors.Is(r.err, ErrKernelDied) || errors.Is(r.err, ErrClosed) || !errors.As(r.err, &de) || !de.Restarted {
		t.Errorf("the call in flight during Restart: %v, want a *DiedError with Restarted (ErrKernelDied, not ErrClosed)", r.err)
	}
	if r.res == nil || len(r.res.Outputs) == 0 || r.res.Outputs[0].Text != "started\n" {
		t.Errorf("the output before the restart is gone: %+v", r.res)
	}
	_, err := k.Execute(testCtx(t, 60*time.Second), "before", ExecuteOptions{})
	wantExecError(t, err, "NameError")
}

// TestRestartEndsCallsAsDeath: a call in flight when Restart replaces the
// process returns ErrKernelDied, as Restart's doc says.
func TestRestartEndsCallsAsDeath(t *testing.T) {
	t.Parallel()
	restartUnderRun(t, startKernel(t, Options{}))
}
