package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// Reads while the run holding the session is not executing a block: its
// kernel starts or restarts, or the run is between two blocks. They wait
// for the kernel's start, never for the run, then go beside it. Before,
// they went beside a run only while a block executed, and otherwise queued
// behind the whole run and failed "busy" after MaxWait.

// gatedPython is an interpreter that starts only once the file gate exists,
// and a kernel restart with it waits for the gate again: the test holds a
// kernel's start with it. The gate is opened when the test ends, before
// its engine closes.
func gatedPython(t *testing.T) (python, gate string) {
	t.Helper()
	dir := t.TempDir()
	gate = filepath.Join(dir, "gate")
	python = filepath.Join(dir, "python-gated")
	script := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %q ]; do sleep 0.05; done\nexec python3 \"$@\"\n", gate)
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return python, gate
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// holdCode is a block that waits until the file stop exists.
func holdCode(stop string) string {
	return fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.05)", stop)
}

// waitFor polls cond, failing t when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type besideResult struct {
	b      *Beside
	waited string
	err    error
}

// readWhileHeld starts ReadBeside on ss and returns once the read waits
// for the session's kernel; open then lets the kernel start. A read that
// returns without waiting fails t.
func readWhileHeld(ctx context.Context, t *testing.T, e *Engine, ss *Session) <-chan besideResult {
	t.Helper()
	done := make(chan besideResult, 1)
	go func() {
		b, waited, err := e.ReadBeside(ctx, ss, nil)
		done <- besideResult{b, waited, err}
	}()
	for ss.rd.waiting.Load() == 0 {
		select {
		case got := <-done:
			t.Fatalf("the read did not wait for the kernel: beside %v, waited %q, error %v", got.b != nil, got.waited, got.err)
		default:
		}
		if ctx.Err() != nil {
			t.Fatal("the read never waited for the kernel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return done
}

// blockResult is a run's result from RunBlock's: no *Block at all when
// there is none (the engine's stopping ends a test's run that way).
func blockResult(b *Block, err error) (any, error) {
	if b == nil {
		return nil, err
	}
	return b, err
}

// readValue reads expr beside the run with get_value's helper.
func readValue(ctx context.Context, t *testing.T, b *Beside, expr string) any {
	t.Helper()
	defer b.Release()
	raw, err := b.Query(ctx, PyGetValue, map[string]any{"expression": expr, "limit": 1 << 16, "max_cells": 1000, "orient": "split"})
	if err != nil {
		t.Fatalf("get_value(%s) beside the run: %v", expr, err)
	}
	var got struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	return got.Value
}

// (a) The first run of a new session starts its kernel: a read sent then
// waits for the start, then goes beside the run, and says it waited.
func TestReadWaitsForKernelStart(t *testing.T) {
	ipytest.Require(t)
	python, gate := gatedPython(t)
	e := newTestEngine(t, Config{PoolSize: 0, Python: python, MaxWait: time.Hour, StartTimeout: 2 * time.Minute})
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	ss, err := e.LookupOrCreate("first")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := filepath.Join(t.TempDir(), "stop")
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o600) })
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return blockResult(r.RunBlock(ctx, "x = 41\n"+holdCode(stop), "", 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the kernel's start", func() bool { return ss.State() == "starting" })
	read := readWhileHeld(ctx, t, e, ss)
	touch(t, gate)
	got := <-read
	if got.err != nil || got.b == nil {
		t.Fatalf("the read after the kernel started: beside %v, waited %q, error %v", got.b != nil, got.waited, got.err)
	}
	if got.b.RunID() != r.ID() || !strings.Contains(got.b.Note(), "first waited") || !strings.Contains(got.b.Note(), "for the session's kernel to start") {
		t.Errorf("the read beside run %s: run %s, note %q", r.ID(), got.b.RunID(), got.b.Note())
	}
	if v := readValue(ctx, t, got.b, "40 + 2"); fmt.Sprint(v) != "42" {
		t.Errorf("40 + 2 read beside the run: %v", v)
	}
	touch(t, stop)
	if a := r.Await(ctx, time.Minute); a != AwaitDone {
		t.Fatalf("the run: await %v", a)
	}
}

// A kernel whose start outlasts MaxWait: the read gives up after MaxWait
// and says it waited for the kernel's start, not that the session is busy
// with the run.
func TestReadSlowKernelStart(t *testing.T) {
	ipytest.Require(t)
	python, gate := gatedPython(t)
	e := newTestEngine(t, Config{PoolSize: 0, Python: python, MaxWait: time.Second, StartTimeout: 2 * time.Minute})
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	ss, err := e.LookupOrCreate("slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return blockResult(r.RunBlock(ctx, "1", "", 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the kernel's start", func() bool { return ss.State() == "starting" })
	b, waited, err := e.ReadBeside(ctx, ss, nil)
	if b != nil || err == nil {
		t.Fatalf("a read while the kernel starts for longer than MaxWait: beside %v, waited %q, error %v", b != nil, waited, err)
	}
	want := `session "slow": the read waited 1s for the session's kernel to start (for run r1), and gave up; nothing was read.`
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "busy") {
		t.Errorf("the read's error:\n%v\nwant it to begin\n%s", err, want)
	}
	touch(t, gate)
	if a := r.Await(ctx, time.Minute); a != AwaitDone {
		t.Fatalf("the run: await %v", a)
	}
}

// (b) rerun_code restarts the kernel in its run before its blocks: a read
// sent during the restart waits for the fresh kernel, then reads it beside
// the run.
func TestReadDuringRestart(t *testing.T) {
	ipytest.Require(t)
	python, gate := gatedPython(t)
	e := newTestEngine(t, Config{PoolSize: 0, Python: python, MaxWait: time.Hour, StartTimeout: 2 * time.Minute})
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	ss, err := e.LookupOrCreate("rerun")
	if err != nil {
		t.Fatal(err)
	}
	touch(t, gate)
	if b := runCode(t, e, ss, "x = 1"); b.Status != "ok" {
		t.Fatalf("x = 1: %s", b.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	stop := filepath.Join(t.TempDir(), "stop")
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o600) })
	r, err := e.StartRun(ctx, ss, nil, "rerun_code", func(ctx context.Context, r *Run) (any, error) {
		if err := ss.Restart(ctx); err != nil {
			return nil, err
		}
		return blockResult(r.RunBlock(ctx, holdCode(stop), "", 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the kernel's restart", func() bool { return ss.State() == "starting" })
	read := readWhileHeld(ctx, t, e, ss)
	touch(t, gate)
	got := <-read
	if got.err != nil || got.b == nil {
		t.Fatalf("the read after the restart: beside %v, waited %q, error %v", got.b != nil, got.waited, got.err)
	}
	if got.b.RunID() != r.ID() || !strings.Contains(got.b.Note(), "for the session's kernel to restart") {
		t.Errorf("the read beside run %s: run %s, note %q", r.ID(), got.b.RunID(), got.b.Note())
	}
	// It reads the fresh kernel: x went with the old one.
	if v := readValue(ctx, t, got.b, "'x' in globals()"); v != false {
		t.Errorf("'x' in globals() beside the run after the restart: %v", v)
	}
	touch(t, stop)
	if a := r.Await(ctx, time.Minute); a != AwaitDone {
		t.Fatalf("the run: await %v", a)
	}
	if v, err := r.Result(); err != nil || v.(*Block).Status != "ok" {
		t.Fatalf("the run after the restart: %v, %v", v, err)
	}
}

// (c) Between two blocks of a run (rerun_code, run_notebook) the read goes
// beside the run at once instead of queueing behind its remaining blocks.
func TestReadBetweenBlocks(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{PoolSize: 0, MaxWait: time.Hour})
	ss, err := e.LookupOrCreate("blocks")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	between, next := make(chan struct{}), make(chan struct{})
	r, err := e.StartRun(ctx, ss, nil, "rerun_code", func(ctx context.Context, r *Run) (any, error) {
		r.SetProgress(1, 2)
		if b, err := r.RunBlock(ctx, "x = 1", "", 0); err != nil || b.Status != "ok" {
			return blockResult(b, err)
		}
		close(between)
		select {
		case <-next:
		case <-ctx.Done(): // the engine closes
			return nil, ctx.Err()
		}
		r.SetProgress(2, 2)
		return blockResult(r.RunBlock(ctx, "x = 2", "", 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-between:
	case <-r.done:
		t.Fatalf("the first block failed: %v", r.err)
	}
	b, waited, err := e.ReadBeside(ctx, ss, nil)
	if err != nil || b == nil {
		t.Fatalf("a read between two blocks: beside %v, waited %q, error %v", b != nil, waited, err)
	}
	if b.RunID() != r.ID() || strings.Contains(b.Note(), "waited") {
		t.Errorf("the read beside run %s: run %s, note %q", r.ID(), b.RunID(), b.Note())
	}
	if v := readValue(ctx, t, b, "x"); fmt.Sprint(v) != "1" {
		t.Errorf("x between the blocks: %v", v)
	}
	close(next)
	if a := r.Await(ctx, time.Minute); a != AwaitDone {
		t.Fatalf("the run: await %v", a)
	}
}
