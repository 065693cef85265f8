package engine

import (
	"context"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
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

// A block re-run in place (RerunBlock) is shown once, where it is in the
// history: live while it runs, then as its history cell with the new
// outputs; the history keeps its length.
func TestCellsShowABlockRerunInPlaceOnce(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("inplace")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCode(t, e, ss, "print('first')")
	ss.Record(history.Entry{Code: "x = input('go? ')\nprint('got', x)", Status: "loaded", Outputs: []history.Output{}})
	runCode(t, e, ss, "print('last')")

	sub := e.Events().Subscribe(64, func(ev *Event) bool { return ev.Kind == InputRequested && ev.Session == "inplace" })
	defer sub.Close()
	var old history.Entry
	r, err := e.StartRun(ctx, ss, nil, "rerun_code", func(ctx context.Context, r *Run) (any, error) {
		out, prev, err := r.RerunBlock(ctx, 1, 0)
		old = prev
		return out, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != nil {
		t.Fatalf("no input_requested event: %v", err)
	}
	mid := ss.Cells("python")
	if len(mid) != 3 || mid[1].Index != 1 || mid[1].RunID != r.ID() || mid[1].Status != StatusInputRequested || mid[2].Code != "print('last')" {
		t.Fatalf("cells while the re-run block waits for input: %+v", mid)
	}
	if _, ok := r.Answer(0, Reply{Text: "yes"}); !ok {
		t.Fatal("the question could not be answered")
	}
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await gave %v", got)
	}
	hist := ss.History()
	if len(hist) != 3 || hist[1].Status != "ok" || hist[1].Run != r.ID() || len(hist[1].Outputs) == 0 || hist[1].Outputs[0].Text != "got yes\n" {
		t.Fatalf("history after the re-run: %+v", hist)
	}
	if old.Status != "loaded" || history.SameOutputs(old.Outputs, hist[1].Outputs) {
		t.Fatalf("the entry replaced: %+v", old)
	}
	if s := r.ViewSince(0); len(s.Blocks) != 1 || s.Blocks[0] != 1 {
		t.Fatalf("the run's blocks: %v; want [1]", s.Blocks)
	}
	if done := ss.Cells("python"); len(done) != 3 || done[1].Status != "ok" {
		t.Fatalf("cells after the run: %+v", done)
	}
}
