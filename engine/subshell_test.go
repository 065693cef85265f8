package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A read sent beside the run right after an answer sees what the answer
// set. The answer reaches the code through the stdin channel, which the
// kernel polls every 10 ms, and the read through a subshell, which takes
// it up at once: the read first waits in the kernel until its input()
// has returned (py/subshell_guard.py). Before, a get_value sent right
// after send_input read the name's earlier value, once in five in CI.
func TestReadBesideAfterAnswer(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("settle")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	asked := e.Events().Subscribe(64, func(ev *Event) bool { return ev.Kind == InputRequested && ev.Session == "settle" })
	defer asked.Close()
	const rounds = 40
	code := fmt.Sprintf("name = None\nfor i in range(%d):\n    name = input('Name? ')\ninput('Done? ')", rounds)
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, code, "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		if _, err := asked.Next(ctx); err != nil {
			t.Fatalf("question %d never came: %v", i+1, err)
		}
		want := fmt.Sprintf("Ada %d", i)
		if _, ok := r.Answer(0, Reply{Text: want}); !ok {
			t.Fatalf("question %d could not be answered", i+1)
		}
		b, waited, err := e.ReadBeside(ctx, ss, nil)
		if err != nil || b == nil {
			t.Fatalf("round %d: no read beside the run (%q, %v)", i, waited, err)
		}
		raw, err := b.Query(ctx, PyGetValue, map[string]any{"expression": "name", "limit": 1 << 16, "max_cells": 1000, "orient": "split"})
		b.Release()
		if err != nil {
			t.Fatalf("round %d: get_value: %v", i, err)
		}
		var got struct {
			Value any `json:"value"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.Value != want {
			t.Fatalf("round %d: a read right after the answer %q found name = %v (%s)", i, want, got.Value, raw)
		}
	}
	if _, err := asked.Next(ctx); err != nil {
		t.Fatalf("the last question never came: %v", err)
	}
	if _, ok := r.Answer(0, Reply{Text: ""}); !ok {
		t.Fatal("the last question could not be answered")
	}
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await gave %v", got)
	}
}
