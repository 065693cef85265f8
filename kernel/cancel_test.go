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

// TestCancelledQueuedExecuteLeavesOthersAlone cancels an execution that is
// still queued in the kernel behind another one (as session_status's probe
// can be queued behind user code). The cancel must not interrupt the code
// that runs: that code is not the cancelled request's.
func TestCancelledQueuedExecuteLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	k := startKernel(t, Options{})
	release := filepath.Join(t.TempDir(), "release")

	// The first run holds the kernel until the test creates release, so
	// the second request is certainly queued while its context ends.
	opts, started := startedSignal()
	first := executeAsync(testCtx(t, 60*time.Second), k,
		"import os, time\nprint('started', flush=True)\nwhile not os.path.exists("+strconv.Quote(release)+"):\n    time.sleep(0.01)\nprint('first done')", opts)
	await(t, started, "the first run to start")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := k.Execute(ctx, "queued_ran = True", ExecuteOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotStarted) {
		t.Fatalf("queued Execute: err = %v, want DeadlineExceeded and ErrNotStarted", err)
	}
	if res == nil || res.Interrupted {
		t.Errorf("queued Execute reports an interrupt (res %+v)", res)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := await(t, first, "the first run")
	if r.err != nil {
		t.Fatalf("the first run was disturbed by the other request's cancel: %v (outputs %q)", r.err, describeAll(r.res.Outputs))
	}
	wantOutputs(t, r.res, `stream stdout "started\nfirst done\n"`)
	// As documented, the kernel runs the abandoned request when it gets to it.
	wantOutputs(t, mustExecute(t, k, "queued_ran"), "execute_result True")
}
