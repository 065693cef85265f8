package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// slowPython is an interpreter that takes 3 s to start.
func slowPython(t *testing.T) string {
	t.Helper()
	slow := filepath.Join(t.TempDir(), "python-slow")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 3\nexec python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return slow
}

// A reset whose fresh kernel is slow to start answers within MaxWait,
// saying the restart goes on; the next run waits for it and gets the fresh
// kernel. Before, reset_session and reset_run_context held their call for
// as long as the kernel took to start (17 s under the soak's load, with
// --max-wait 6).
func TestResetAnswersWithinMaxWait(t *testing.T) {
	ipytest.Require(t)
	slow := slowPython(t) // longer than MaxWait
	e := newTestEngine(t, Config{PoolSize: 0, Python: slow, MaxWait: time.Second, StartTimeout: 2 * time.Minute})
	ss, err := e.LookupOrCreate("slow")
	if err != nil {
		t.Fatal(err)
	}
	if b := runCode(t, e, ss, "x = 1"); b.Status != "ok" {
		t.Fatalf("x = 1: %s", b.Status)
	}
	pid := ss.Describe().Pid
	for _, clear := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		msg, err := e.Reset(ctx, ss, nil, clear, false)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg, "still restarting its kernel") || !strings.Contains(msg, "the next call on the session waits for it") {
			t.Fatalf("reset (clear history %v) of a kernel that starts in 3 s, with a max wait of 1 s: %q", clear, msg)
		}
		// The next run waits for the reset and runs in the fresh kernel.
		b := runCode(t, e, ss, "x")
		if b.Status != "error" || b.Result.Error == nil || b.Result.Error.EName != "NameError" {
			t.Fatalf("after the reset x should be gone: status %s, error %+v", b.Status, b.Result.Error)
		}
		if now := ss.Describe().Pid; now == pid || now == 0 {
			t.Fatalf("kernel pid after the reset %d (before %d)", now, pid)
		}
		pid = ss.Describe().Pid
	}
	// The history was cleared by the second reset: only the run after it.
	if n := ss.HistoryLen(); n != 1 {
		t.Fatalf("history after reset_session and one run: %d entries, want 1", n)
	}
}

// A create_session whose kernel is slow to start answers within MaxWait
// with the session and StillStarting; the next run waits for the start and
// runs in that kernel. Before, the call was held for the whole start (up to
// the 60 s start timeout).
func TestCreateAnswersWithinMaxWait(t *testing.T) {
	ipytest.Require(t)
	slow := slowPython(t)
	e := newTestEngine(t, Config{PoolSize: 0, Python: slow, MaxWait: time.Second, StartTimeout: 2 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ss, err := e.Create(ctx, "slow", Choice{}, nil)
	var starting *StillStarting
	if !errors.As(err, &starting) || ss == nil || starting.Session != "slow" {
		t.Fatalf("create with a kernel that starts in 3 s and a max wait of 1 s: session %v, error %v", ss, err)
	}
	if !strings.Contains(err.Error(), "still starting") || !strings.Contains(err.Error(), "the next call on the session waits for it") {
		t.Fatalf("the create's message: %v", err)
	}
	if b := runCode(t, e, ss, "1 + 1"); b.Status != "ok" {
		t.Fatalf("the run after the create: %s", b.Status)
	}
	if ss.Describe().Pid == 0 {
		t.Fatal("no kernel after the first run")
	}
	// A kernel that cannot start: the session is gone, and the next call
	// says its create_session failed.
	bad := filepath.Join(t.TempDir(), "python-bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\nsleep 2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ss2, err := e.Create(ctx, "bad", Choice{Python: bad}, nil)
	if !errors.As(err, &starting) {
		if err == nil || !strings.Contains(err.Error(), "cannot start a kernel") {
			t.Fatalf("create with an interpreter that exits: %v", err)
		}
		return // the start failed within the max wait: nothing more to see
	}
	// WaitTurn gives up after MaxWait (1 s) while the start goes on: ask
	// again until the start has ended.
	for {
		release, err := e.WaitTurn(ctx, ss2, nil)
		if err == nil {
			release()
			t.Fatal("the session of a failed start took a call")
		}
		if strings.Contains(err.Error(), "stayed busy") && ctx.Err() == nil {
			continue
		}
		if !strings.Contains(err.Error(), "create_session failed") {
			t.Fatalf("the call after a failed start: %v", err)
		}
		return
	}
}

// A reset that outlasts MaxWait and then fails is reported by the next call
// in the session's turn, once, as the reset's answer promised; and the
// history it was to clear is cleared, as the answer said, since the old
// kernel is gone. Before, the outcome went to a channel nobody read: the
// next call ran as if nothing had happened, and the history stayed.
func TestLateResetFailureIsReported(t *testing.T) {
	ipytest.Require(t)
	// An interpreter that starts normally until the marker exists, then
	// exits after 2 s: the reset's restart, and the start after it, fail
	// after MaxWait.
	dir := t.TempDir()
	marker := filepath.Join(dir, "fail")
	script := filepath.Join(dir, "python-failing")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nif [ -e "+marker+" ]; then sleep 2; exit 3; fi\nexec python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Config{PoolSize: 0, Python: script, MaxWait: time.Second, StartTimeout: 2 * time.Minute})
	ss, err := e.LookupOrCreate("late")
	if err != nil {
		t.Fatal(err)
	}
	if b := runCode(t, e, ss, "x = 1"); b.Status != "ok" {
		t.Fatalf("x = 1: %s", b.Status)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	msg, err := e.Reset(ctx, ss, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "still restarting its kernel") || !strings.Contains(msg, "reports it if it failed") {
		t.Fatalf("reset of a kernel whose restart fails after the max wait: %q", msg)
	}
	// WaitTurn gives up after MaxWait (1 s) while the reset goes on: ask
	// again until it has ended.
	for {
		release, err := e.WaitTurn(ctx, ss, nil)
		if err == nil {
			release()
			t.Fatal("the call after a reset that failed got its turn without a word of the failure")
		}
		if strings.Contains(err.Error(), "stayed busy") && ctx.Err() == nil {
			continue
		}
		if !strings.Contains(err.Error(), "reset_session") || !strings.Contains(err.Error(), "failed") || !strings.Contains(err.Error(), "history was cleared") {
			t.Fatalf("the call after a reset that failed: %v", err)
		}
		t.Logf("the call after the failed reset: %v", err)
		break
	}
	if n := ss.HistoryLen(); n != 0 {
		t.Fatalf("history after a reset_session that said it clears it: %d entries", n)
	}
	// Reported once: the next call runs, in a fresh kernel.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	b := runCode(t, e, ss, "x")
	if b.Status != "error" || b.Result.Error == nil || b.Result.Error.EName != "NameError" {
		t.Fatalf("after the failed reset x should be gone: status %s, error %+v", b.Status, b.Result.Error)
	}
}

// A run cancelled (tasks/cancel) while its session's kernel starts ends
// saying so: before, the start's own error stood in for the cause (an
// interpreter check killed: "no Python interpreter found", or a ready wait
// cut short: "did not become ready within 1m0s"). The next run starts a
// kernel.
func TestCancelDuringKernelStart(t *testing.T) {
	ipytest.Require(t)
	slow := slowPython(t)
	e := newTestEngine(t, Config{PoolSize: 0, Python: slow, MaxWait: time.Second, StartTimeout: 2 * time.Minute})
	ss, err := e.LookupOrCreate("slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, "x = 1", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	for !r.Started() {
		select {
		case <-r.Changed():
		case <-ctx.Done():
			t.Fatal("the run never started")
		}
	}
	r.Cancel()
	if got := r.Await(ctx, 2*time.Minute); got != AwaitDone {
		t.Fatalf("await after the cancel: %v", got)
	}
	_, err = r.Result()
	if err == nil || !strings.Contains(err.Error(), "cancelled while the kernel was starting") || strings.Contains(err.Error(), "interpreter") {
		t.Fatalf("a run cancelled during its kernel's start: %v", err)
	}

	// interrupt_session during the start does the same (it said there was
	// nothing to interrupt).
	ss2, err := e.LookupOrCreate("slow2")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := e.StartRun(ctx, ss2, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, "x = 1", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	for !r2.Started() {
		select {
		case <-r2.Changed():
		case <-ctx.Done():
			t.Fatal("the run never started")
		}
	}
	// The run may be in the start or just before it (the message says
	// which); either way its start is stopped.
	msg, sent, err := e.Interrupt(ctx, ss2)
	if err != nil || !sent || !strings.Contains(msg, "Run "+r2.ID()) || !strings.Contains(msg, "cancelled") {
		t.Fatalf("interrupt during the start: %q %v %v", msg, sent, err)
	}
	r2.Await(ctx, 2*time.Minute)
	if _, err := r2.Result(); err == nil || !strings.Contains(err.Error(), "cancelled while the kernel was starting") {
		t.Fatalf("the interrupted run: %v", err)
	}
	if b := runCode(t, e, ss, "1 + 1"); b.Status != "ok" {
		t.Fatalf("the run after: %s", b.Status)
	}
}
