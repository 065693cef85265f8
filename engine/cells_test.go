package engine

import (
	"context"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A run's block is one cell from start to end: live while it runs, then
// its history cell (with the run's id) while the run is still finishing,
// never both.
func TestCellsShowABlockOnce(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("cells")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub := e.Events().Subscribe(64, func(ev *Event) bool { return ev.Kind == InputRequested && ev.Session == "cells" })
	defer sub.Close()
	recorded, release := make(chan struct{}), make(chan struct{})
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		out, err := r.RunBlock(ctx, "x = input('go? ')\nprint('got', x)", "", 0)
		close(recorded)
		<-release // the run has recorded its block and has not finished
		return out, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != nil {
		t.Fatalf("no input_requested event: %v", err)
	}
	mid := ss.Cells("python")
	if len(mid) != 1 || mid[0].Index != -1 || mid[0].RunID != r.ID() || mid[0].Status != StatusInputRequested {
		t.Fatalf("cells while the block waits for input: %+v", mid)
	}
	if _, ok := r.Answer(0, Reply{Text: "yes"}); !ok {
		t.Fatal("the question could not be answered")
	}
	<-recorded
	fin := ss.Cells("python")
	if len(fin) != 1 || fin[0].Index != 0 || fin[0].RunID != r.ID() || fin[0].Status != "ok" {
		t.Fatalf("cells once the block is recorded, before the run ends: %+v", fin)
	}
	close(release)
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await gave %v", got)
	}
	done := ss.Cells("python")
	if len(done) != 1 || done[0].Index != 0 || done[0].RunID != "" {
		t.Fatalf("cells after the run: %+v", done)
	}
}
