package engine

import (
	"context"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A crash does not give the id of a run it cut short to another run: the
// history never got that run, but its number was reserved in the state
// folder before it was given out, and the next server goes on past the
// reservation. After a clean stop the ids go on without a gap.
func TestRunIDsNotReusedAfterACrash(t *testing.T) {
	ipytest.Require(t)
	dir := t.TempDir()
	e1 := newTestEngine(t, Config{PoolSize: 0, StateDir: dir})
	ss, err := e1.LookupOrCreate("a")
	if err != nil {
		t.Fatal(err)
	}
	if b := runCode(t, e1, ss, "x = 1"); b.Run != "r1" {
		t.Fatalf("first run %q", b.Run)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cut, err := e1.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, "import time; time.sleep(600)", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if cut.ID() != "r2" {
		t.Fatalf("second run %q", cut.ID())
	}

	// e1 never stops in order: a second engine on the same folder is the
	// server started again after a crash.
	e2 := newTestEngine(t, Config{PoolSize: 0, StateDir: dir})
	ss2, err := e2.Lookup("a")
	if err != nil {
		t.Fatalf("session a was not restored: %v", err)
	}
	b := runCode(t, e2, ss2, "1 + 1")
	if n := runNumber(b.Run); n <= 2 {
		t.Fatalf("the first run after the crash is %s: the id of the run the crash cut short (r2) or an earlier one", b.Run)
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	e3 := newTestEngine(t, Config{PoolSize: 0, StateDir: dir})
	ss3, err := e3.Lookup("a")
	if err != nil {
		t.Fatal(err)
	}
	if got := runCode(t, e3, ss3, "2 + 2"); runNumber(got.Run) != runNumber(b.Run)+1 {
		t.Errorf("after a clean stop at %s, the next run is %s", b.Run, got.Run)
	}
}
