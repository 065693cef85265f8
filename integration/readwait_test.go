//go:build unix

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSubshellReadWhileKernelStarts: a get_value sent while a run's kernel
// is still starting (the first run of a new session), or restarting
// (rerun_code), waits for the start alone, then reads beside the run, which
// goes on for as long as the test holds it. Before, such a read queued
// behind the whole run and failed "busy" after --max-wait. The kernel's
// interpreter waits for a gate file, so the test holds the start.
func TestSubshellReadWhileKernelStarts(t *testing.T) {
	dir := t.TempDir()
	gate, stop := filepath.Join(dir, "gate"), filepath.Join(dir, "stop")
	python := filepath.Join(dir, "python-gated")
	script := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %q ]; do sleep 0.05; done\nexec python3 \"$@\"\n", gate)
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	open := func(path string) {
		t.Helper()
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The server checks the interpreter as it starts: the gate is closed
	// after that.
	open(gate)
	s := startServer(t, "--python", python, "--pool-size", "0", "--max-wait", "20")
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(gate, nil, 0o600)
		_ = os.WriteFile(stop, nil, 0o600)
	})
	hold := fmt.Sprintf("x = 1\nimport os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.05)", stop)

	// readDuringStart sends get_value while the session's kernel starts,
	// opens the gate, and checks that the read went beside run id.
	readDuringStart := func(id string) {
		t.Helper()
		for st := ""; !strings.HasPrefix(st, "Session ws: starting"); {
			st = text(s.call("session_status", map[string]any{"session_id": "ws"}))
			if strings.Contains(st, "Session ws: idle") || strings.Contains(st, "Session ws: busy") {
				t.Fatalf("the kernel started before the gate opened:\n%s", st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		read := make(chan *mcp.CallToolResult, 1)
		failed := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_value", Arguments: map[string]any{"session_id": "ws", "expression": "2 + 2"}})
			if err != nil {
				failed <- err
				return
			}
			read <- res
		}()
		open(gate)
		select {
		case err := <-failed:
			t.Fatalf("get_value: %v", err)
		case res := <-read:
			v := structured[valueRead](t, res)
			if res.IsError || v.DuringRun != id || intOf(t, v.Value) != 4 {
				t.Fatalf("get_value while the kernel of run %s starts: %+v\n%s", id, v, text(res))
			}
			t.Logf("the read's note: %s", v.ReadNote)
		}
	}

	// (a) The first run of a new session starts its kernel.
	res, _ := s.run("ws", hold, "background", true)
	first := structured[runState](t, res).RunID
	readDuringStart(first)
	open(stop)
	var texts []string
	if _, fin := s.waitRunDone("ws", first, &texts); fin.Status != "ok" {
		t.Fatalf("the first run: %+v", fin)
	}

	// (b) rerun_code restarts the kernel before it re-runs the block.
	for _, f := range []string{gate, stop} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	res = s.call("rerun_code", map[string]any{"session_id": "ws", "background": true})
	rerun := structured[runState](t, res).RunID
	if rerun == "" {
		t.Fatalf("rerun_code: %s", text(res))
	}
	readDuringStart(rerun)
	open(stop)
	texts = nil
	if res, fin := s.waitRunDone("ws", rerun, &texts); fin.Status != "ok" {
		t.Fatalf("the rerun: %+v\n%s", fin, text(res))
	}
}
