package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A reset whose fresh kernel is slow to start answers within MaxWait,
// saying the restart goes on; the next run waits for it and gets the fresh
// kernel. Before, reset_session and reset_run_context held their call for
// as long as the kernel took to start (17 s under the soak's load, with
// --max-wait 6).
func TestResetAnswersWithinMaxWait(t *testing.T) {
	ipytest.Require(t)
	// An interpreter that takes 3 s to start: longer than MaxWait.
	slow := filepath.Join(t.TempDir(), "python-slow")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 3\nexec python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
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
