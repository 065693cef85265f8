//go:build unix

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Regression tests for runs: results shared by several calls, the order in
// which creating calls act, what a hand-off says, the output limit, and the
// seconds a call may give.

// Several wait_run calls on one finished run each get its result; the
// server (built with -race) reports no data race while they do.
func TestWaitRunsShareAFinishedResult(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	res, out := s.run("w", "print('done')\n6 * 7")
	if res.IsError || out.Result != "42" {
		t.Fatalf("run: %s", text(res))
	}
	st := structured[runState](t, res)
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		texts := make([]string, 4)
		for i := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.call("wait_run", map[string]any{"session_id": "w", "run_id": st.RunID})
				texts[i] = text(r)
			}()
		}
		wg.Wait()
		for i, tx := range texts {
			if !strings.Contains(tx, "42") {
				t.Errorf("wait_run %d: %q", i, tx)
			}
		}
	}
	s.close()
	if e := s.stderr.String(); strings.Contains(e, "DATA RACE") {
		t.Fatalf("the server reported a data race:\n%s", e[:min(len(e), 4000)])
	}
}

// create_session takes its turn: after a delete sent before it, it creates
// the session afresh instead of finding the old one; and a run sent after
// it runs in the session it created, in its working directory.
func TestCreateSessionTakesItsTurn(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	c.send(toolCall(1, "run_code", map[string]any{"session_id": "c", "code": "import time\ntime.sleep(1)"}))
	c.send(toolCall(2, "delete_session", map[string]any{"session_id": "c"}))
	c.send(toolCall(3, "create_session", map[string]any{"session_id": "c"}))
	c.send(toolCall(4, "run_code", map[string]any{"session_id": "c", "code": "x = 1\nx"}))
	got := c.collect("1", "2", "3", "4")
	for _, id := range []string{"1", "2", "3", "4"} {
		if text, isErr, _ := resultOf(t, got[id]); isErr {
			t.Errorf("call %s: %s", id, text)
		}
	}
	c.send(toolCall(5, "list_sessions", nil))
	if _, _, st := resultOf(t, c.collect("5")["5"]); len(st["sessions"].([]any)) != 1 {
		t.Errorf("sessions after delete, create and run: %v", st["sessions"])
	}

	// create_session {cwd} then run_code, sent together: the code runs in
	// that cwd. The handlers' order is random, so several pairs are sent.
	const pairs = 6
	dirs := make([]string, pairs)
	var ids []string
	for i := range dirs {
		dirs[i], _ = filepath.EvalSymlinks(t.TempDir())
		sid := fmt.Sprintf("cwd%d", i)
		c.send(toolCall(100+2*i, "create_session", map[string]any{"session_id": sid, "cwd": dirs[i]}))
		c.send(toolCall(101+2*i, "run_code", map[string]any{"session_id": sid, "code": "import os\nos.getcwd()"}))
		ids = append(ids, fmt.Sprint(100+2*i), fmt.Sprint(101+2*i))
	}
	got = c.collect(ids...)
	for i, dir := range dirs {
		if text, isErr, _ := resultOf(t, got[fmt.Sprint(100+2*i)]); isErr {
			t.Errorf("create_session cwd%d: %s", i, text)
		}
		if text, isErr, _ := resultOf(t, got[fmt.Sprint(101+2*i)]); isErr || text != fmt.Sprintf("'%s'", dir) {
			t.Errorf("run_code after create_session {cwd: %s}: %s (isError %v)", dir, text, isErr)
		}
	}
}

// run_code {background: true} on an idle session says its run is running,
// with its id, not that it is queued behind earlier calls.
func TestBackgroundRunOnIdleSession(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	if res, _ := s.run("b", "1"); res.IsError {
		t.Fatalf("warm-up: %s", text(res))
	}
	for i := 0; i < 5; i++ {
		res := s.call("run_code", map[string]any{"session_id": "b", "code": "import time\ntime.sleep(0.5)", "background": true})
		st := structured[runState](t, res)
		tx := text(res)
		if st.Status != "running" || strings.Contains(tx, "queued") || !strings.Contains(tx, st.RunID) || !strings.Contains(tx, "running") {
			t.Errorf("background run %d on an idle session: status %q\n%s", i, st.Status, tx)
		}
		var texts []string
		if _, fin := s.waitRunDone("b", st.RunID, &texts); fin.Status != "ok" {
			t.Fatalf("run %s ended %s", st.RunID, fin.Status)
		}
	}
}

// textLen is the number of characters of a result's text content.
func textLen(s string) int { return utf8.RuneCountInString(s) }

// The output limit holds for what a hand-off and wait_run return, text and
// structured output alike, and for the joined result of run_notebook,
// rerun_code and run_code {start}.
func TestOutputLimitWholeResult(t *testing.T) {
	t.Parallel()
	const limit = 1000
	// The note a cut leaves, the hand-off's own sentences and the labels
	// of the blocks are not output; this is room for them.
	const slack = 600
	s := startServer(t, "--output-limit", fmt.Sprint(limit), "--max-wait", "2")
	res, _ := s.run("o", "import time\nfor i in range(1000):\n    print('x' * 99)\ntime.sleep(3)\nfor i in range(1000):\n    print('y' * 99)\ntime.sleep(3)")
	st := structured[runState](t, res)
	if st.Status != "running" {
		t.Fatalf("run did not hand off: %s", text(res))
	}
	check := func(what string, tx, output string) {
		t.Helper()
		if n := textLen(output); n > limit+slack {
			t.Errorf("%s: structured output of %d characters with --output-limit %d", what, n, limit)
		}
		if n := textLen(tx); n > limit+slack {
			t.Errorf("%s: text of %d characters with --output-limit %d", what, n, limit)
		}
	}
	check("hand-off", text(res), st.Output)
	for i := 0; i < 20; i++ {
		r := s.call("wait_run", map[string]any{"session_id": "o", "run_id": st.RunID})
		p := structured[runState](t, r)
		check("wait_run", text(r), p.Output)
		if !p.going() {
			check("final", text(r), p.Stdout)
			break
		}
	}

	// Ten blocks of 2,000 characters each, whose outputs differ from one
	// run to the next: rerun_code shows in full only the blocks whose
	// outputs changed.
	dir := t.TempDir()
	var cells [][2]string
	for i := 0; i < 10; i++ {
		cells = append(cells, [2]string{"code", fmt.Sprintf("import time\nprint('%d' * 2000, time.time_ns())", i)})
	}
	nb := writeNotebook(t, dir, "big.ipynb", "python", cells)
	for _, tc := range []struct {
		what string
		tool string
		args map[string]any
	}{
		{"run_notebook", "run_notebook", map[string]any{"session_id": "nb", "path": nb}},
		{"rerun_code", "rerun_code", map[string]any{"session_id": "nb"}},
		{"run_code {start}", "run_code", map[string]any{"session_id": "nb", "start": 0}},
	} {
		r := s.call(tc.tool, tc.args)
		if st := structured[runState](t, r); st.going() {
			// A fresh kernel can take longer than --max-wait to start.
			var texts []string
			r, _ = s.waitRunDone("nb", st.RunID, &texts)
		}
		if r.IsError {
			t.Fatalf("%s: %s", tc.what, text(r))
		}
		tx := text(r)
		if n := textLen(tx); n > limit+slack {
			t.Errorf("%s: text of %d characters with --output-limit %d", tc.what, n, limit)
		}
		if !strings.Contains(tx, "left out") && !strings.Contains(tx, "omitted") {
			t.Errorf("%s: no note of the cut:\n%s", tc.what, tx[:min(len(tx), 500)])
		}
		if !strings.Contains(tx, strings.Repeat("0", 100)) || !strings.Contains(tx, strings.Repeat("9", 100)) {
			t.Errorf("%s: the head or the tail is missing:\n%s", tc.what, tx)
		}
	}
}

// send_input without run_id answers the run that asks, even when a later
// run is queued behind it.
func TestSendInputFindsTheAskingRun(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "2")
	r1 := structured[runState](t, s.call("run_code", map[string]any{"session_id": "i", "code": "a = input('A? ')\nprint('got', a)", "background": true}))
	r2 := structured[runState](t, s.call("run_code", map[string]any{"session_id": "i", "code": "'second'", "background": true}))
	s.waitRunUntil("i", r1.RunID, "input request", func(p runState) bool { return p.Status == "input_requested" })
	if r := s.call("send_input", map[string]any{"session_id": "i", "text": "yes"}); r.IsError {
		t.Fatalf("send_input without run_id while %s asks and %s is queued: %s", r1.RunID, r2.RunID, text(r))
	}
	var texts []string
	if _, fin := s.waitRunDone("i", r1.RunID, &texts); fin.Stdout != "got yes\n" {
		t.Errorf("the asking run: %+v", fin)
	}
	if _, fin := s.waitRunDone("i", r2.RunID, &texts); fin.Result != "'second'" {
		t.Errorf("the run behind it: %+v", fin)
	}
}

// A wait far beyond any Duration is clamped to --max-wait like any other
// too long wait, and says so.
func TestWaitRunHugeWait(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "1")
	res := s.call("run_code", map[string]any{"session_id": "h", "code": "import time\ntime.sleep(30)", "background": true})
	st := structured[runState](t, res)
	for _, w := range []float64{1e10, 1e300} {
		r := s.call("wait_run", map[string]any{"session_id": "h", "run_id": st.RunID, "wait": w})
		if r.IsError || !strings.Contains(text(r), "more than the server's max wait") {
			t.Errorf("wait %v with --max-wait 1: %s", w, text(r))
		}
	}
	s.call("interrupt_session", map[string]any{"session_id": "h"})
	var texts []string
	s.waitRunDone("h", st.RunID, &texts)
}
