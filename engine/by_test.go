package engine

import (
	"context"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// A run started as the person's records its blocks with By "person"; an
// ordinary run's blocks name no author. Runs lists both, with their code.
func TestRunSetByRecorded(t *testing.T) {
	requireIPyKernel(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("by")
	if err != nil {
		t.Fatal(err)
	}
	runCode(t, e, ss, "x = 1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "web_view", func(ctx context.Context, r *Run) (any, error) {
		r.SetBy(history.ByPerson)
		return r.RunBlock(ctx, "x + 1", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Await(ctx, 2*time.Minute); got != AwaitDone {
		t.Fatalf("await: %v", got)
	}
	if r.By() != history.ByPerson || r.Code() != "x + 1" {
		t.Errorf("run by %q, code %q", r.By(), r.Code())
	}
	h := ss.History()
	if len(h) != 2 {
		t.Fatalf("%d entries", len(h))
	}
	if h[0].By != "" || h[1].By != history.ByPerson {
		t.Errorf("by: %q, %q; want \"\", person", h[0].By, h[1].By)
	}
	runs := ss.Runs()
	if len(runs) != 2 || runs[1] != r || runs[0].By() != "" {
		t.Errorf("runs %v", runs)
	}
}
