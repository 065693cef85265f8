//go:build unix

package kernel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// holdKernel starts a run that keeps the kernel busy until the returned
// release function is called, so a request sent meanwhile certainly waits
// in the kernel's queue. The channel yields the run's result.
func holdKernel(t *testing.T, k *Kernel) (release func(), done <-chan execReturn) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "release")
	opts, started := startedSignal()
	done = executeAsync(testCtx(t, 60*time.Second), k,
		"import os, time\nprint('started', flush=True)\nwhile not os.path.exists("+strconv.Quote(file)+"):\n    time.sleep(0.01)\nprint('held')", opts)
	await(t, started, "the holding run to start")
	return func() {
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}, done
}

// wantUndisturbed checks that the holding run finished normally.
func wantUndisturbed(t *testing.T, done <-chan execReturn) {
	t.Helper()
	r := await(t, done, "the holding run")
	if r.err != nil {
		t.Fatalf("the holding run was disturbed by another request's cancel: %v (outputs %q)", r.err, describeAll(r.res.Outputs))
	}
	wantOutputs(t, r.res, `stream stdout "started\nheld\n"`)
}

// TestCancelledQueuedExecuteLeavesOthersAlone cancels executions that wait
// in the kernel's queue behind another run (as session_status's probe can
// wait behind user code). The cancel must never interrupt the run ahead:
// that code is not the cancelled request's. A request that starts within
// the grace period is interrupted then; one that does not is left to run.
func TestCancelledQueuedExecuteLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	k := startKernel(t, Options{InterruptGrace: 3 * time.Second})

	// Still queued when the grace period ends: given up, not interrupted.
	release, held := holdKernel(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := k.Execute(ctx, "queued_ran = True", ExecuteOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotStarted) {
		t.Fatalf("queued Execute: err = %v, want DeadlineExceeded and ErrNotStarted", err)
	}
	if res == nil || res.Interrupted {
		t.Errorf("queued Execute reports an interrupt (res %+v)", res)
	}
	release()
	wantUndisturbed(t, held)
	// As documented, the kernel runs the abandoned request when it gets to it.
	wantOutputs(t, mustExecute(t, k, "queued_ran"), "execute_result True")

	// Starts within the grace period: that run, and only it, is interrupted.
	release, held = holdKernel(t, k)
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	late := executeAsync(ctx, k, "import time\nwhile True:\n    time.sleep(0.01)", ExecuteOptions{})
	<-ctx.Done()
	release()
	wantUndisturbed(t, held)
	r := await(t, late, "the late request to be interrupted")
	if !errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, ErrNotStarted) || errors.Is(r.err, ErrInterruptIgnored) {
		t.Fatalf("late request: err = %v, want DeadlineExceeded alone", r.err)
	}
	// Interrupted, and if the reply carries an error it is its own
	// KeyboardInterrupt (on a loaded machine the interrupt can land as the
	// request starts, and ipykernel then replies without one: seen in CI).
	if !r.res.Interrupted || (r.res.Error != nil && r.res.Error.EName != "KeyboardInterrupt") {
		t.Errorf("late request: interrupted %v, error %v; want its own KeyboardInterrupt", r.res.Interrupted, r.res.Error)
	}
	wantOutputs(t, mustExecute(t, k, "1 + 1"), "execute_result 2")
}
