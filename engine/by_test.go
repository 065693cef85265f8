package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A run started as the person's records its blocks with By "person"; an
// ordinary run's blocks name no author. Runs lists both, with their code.
func TestRunSetByRecorded(t *testing.T) {
	ipytest.Require(t)
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

// A cell the person runs in a fresh kernel shows why the kernel is new, and
// leaves the note for the assistant's next run: the assistant must learn
// that its variables are gone. A queued run started WithCode and WrittenBy
// shows both while it waits.
func TestPersonRunLeavesTheNotesToTheAssistant(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("notes")
	if err != nil {
		t.Fatal(err)
	}
	runCode(t, e, ss, "x = 1")
	k := ss.RunningKernel()
	if err := k.Kill(); err != nil {
		t.Fatal(err)
	}
	<-func() <-chan struct{} { d, _ := k.Dead(); return d }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "web_view", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, "1 + 1", "", 0)
	}, WithCode("1 + 1"), WrittenBy(history.ByPerson))
	if err != nil {
		t.Fatal(err)
	}
	if r.Code() != "1 + 1" || r.By() != history.ByPerson {
		t.Errorf("queued run: code %q, by %q", r.Code(), r.By())
	}
	r.Await(ctx, 2*time.Minute)
	v, _ := r.Result()
	if b := v.(*Block); !strings.Contains(b.Note, "fresh kernel") {
		t.Errorf("the person's block has no note of the fresh kernel: %q", b.Note)
	}
	if b := runCode(t, e, ss, "2 + 2"); !strings.Contains(b.Note, "fresh kernel") {
		t.Errorf("the assistant's next run was not told: %q", b.Note)
	}
	if b := runCode(t, e, ss, "3 + 3"); b.Note != "" {
		t.Errorf("told twice: %q", b.Note)
	}
}
