//go:build unix

package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Load: many sessions and many calls at once, every output accounted for.

// 10 sessions × 100 executes from 10 goroutines on one client: each result
// carries its own token (none lost, none crossed) and each history has 100
// entries.
func TestLoadManySessions(t *testing.T) {
	t.Parallel()
	const sessions, runs = 10, 100
	s := startServer(t)
	var wg sync.WaitGroup
	start := time.Now()
	var slowest atomic.Int64
	for k := range sessions {
		sid := fmt.Sprintf("load%d", k)
		wg.Go(func() {
			for i := range runs {
				t0 := time.Now()
				res, out := s.run(sid, fmt.Sprintf("print(f'{%q}-{%d}')", sid, i))
				if d := time.Since(t0); d.Milliseconds() > slowest.Load() {
					slowest.Store(d.Milliseconds())
				}
				want := fmt.Sprintf("%s-%d\n", sid, i)
				if res.IsError || out.Status != "ok" || out.Stdout != want || out.SessionID != sid {
					t.Errorf("%s run %d: want stdout %q, got isError=%v session %q stdout %q", sid, i, want, res.IsError, out.SessionID, out.Stdout)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("MEASURE: %d sessions x %d executes, 10 goroutines: %v in all (%.1f ms per call, %.0f calls/s; slowest call %d ms incl. kernel start); server peak RSS %.0f MB",
		sessions, runs, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/float64(sessions*runs),
		float64(sessions*runs)/elapsed.Seconds(), slowest.Load(), relMB(relPeakRSS(s.cmd.Process.Pid)))
	if t.Failed() {
		return
	}
	rows := s.sessions()
	if len(rows) != sessions {
		t.Fatalf("%d sessions listed, want %d", len(rows), sessions)
	}
	for _, r := range rows {
		if r.HistoryCount != runs || r.State != "idle" {
			t.Errorf("session %s: history %d (want %d), state %s", r.SessionID, r.HistoryCount, runs, r.State)
		}
	}
	// The histories hold each session's own tokens, in order.
	res := s.call("get_history", map[string]any{"session_id": "load3", "start": -2})
	if txt := text(res); !strings.Contains(txt, "load3-98") || !strings.Contains(txt, "load3-99") || strings.Contains(txt, "load4") {
		t.Fatalf("history of load3: %q", txt)
	}
}

// 50 concurrent calls on one session all complete, one at a time: their
// execution counts form a contiguous range and their run times never
// overlap.
func TestLoadConcurrentCallsOneSession(t *testing.T) {
	t.Parallel()
	const n = 50
	s := startServer(t)
	if _, out := s.run("serial", "import time\nspans = []"); out.Status != "ok" {
		t.Fatalf("setup: %+v", out)
	}
	counts := make([]int, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			res, out := s.run("serial", fmt.Sprintf("_t0 = time.time()\ntime.sleep(0.01)\nspans.append((%d, _t0, time.time()))\n%d", i, i))
			if res.IsError || out.Result != fmt.Sprint(i) {
				t.Errorf("call %d: isError=%v %+v", i, res.IsError, out)
			}
			counts[i] = out.ExecutionCount
		})
	}
	wg.Wait()
	t.Logf("MEASURE: 50 concurrent calls on one session (10 ms each): %v in all", time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		return
	}
	sorted := slices.Clone(counts)
	slices.Sort(sorted)
	for i := 1; i < n; i++ {
		if sorted[i] != sorted[0]+i {
			t.Fatalf("execution counts are not a permutation of a contiguous range: %v", sorted)
		}
	}
	_, out := s.run("serial", "import json\njson.dumps(spans)")
	var spans [][3]float64
	if err := json.Unmarshal([]byte(strings.Trim(out.Result, "'")), &spans); err != nil || len(spans) != n {
		t.Fatalf("spans %q: %v (%d)", out.Result, err, len(spans))
	}
	slices.SortFunc(spans, func(a, b [3]float64) int {
		switch {
		case a[1] < b[1]:
			return -1
		case a[1] > b[1]:
			return 1
		}
		return 0
	})
	for i := 1; i < n; i++ {
		if spans[i][1] < spans[i-1][2] {
			t.Fatalf("calls %v and %v overlapped", spans[i-1][0], spans[i][0])
		}
	}
	if rows := s.sessions(); len(rows) != 1 || rows[0].HistoryCount != n+2 {
		t.Fatalf("history after 50 concurrent calls: %+v", rows)
	}
}

// An interrupt storm on a running session ends the run with
// KeyboardInterrupt promptly; the kernel survives and works afterwards. The
// storm is repeated: whether a late SIGINT lands inside ipykernel's own code
// is a matter of timing.
func TestLoadInterruptStorm(t *testing.T) {
	t.Parallel()
	const rounds = 5
	s := startServer(t)
	check := relBystander(t, s, "bystander")
	s.run("storm", "before = 'kept'")
	pid := s.pidOf("storm")
	type result struct {
		out runOutput
		at  time.Time
	}
	for round := range rounds {
		done := make(chan result, 1)
		go func() {
			_, out := s.run("storm", "import time\nfor _ in range(200):\n    time.sleep(0.05)\n'finished'")
			done <- result{out, time.Now()}
		}()
		waitState(t, s, "storm", "busy")
		var wg sync.WaitGroup
		var answers sync.Map
		stormStart := time.Now()
		for range 4 {
			wg.Go(func() {
				for range 5 {
					res := s.call("interrupt_session", map[string]any{"session_id": "storm"})
					key := fmt.Sprintf("isError=%v %s", res.IsError, text(res))
					v, _ := answers.LoadOrStore(key, new(atomic.Int32))
					v.(*atomic.Int32).Add(1)
				}
			})
		}
		wg.Wait()
		stormTime := time.Since(stormStart)
		var r result
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			// Kill the kernel so the stuck call returns and the server can close.
			syscall.Kill(pid, syscall.SIGKILL)
			r := <-done
			t.Fatalf("round %d: the run outlived an interrupt storm by 20 s (the 10 s loop should have ended on its own by then); after SIGKILL of the kernel it returned %+v", round, r.out)
		}
		t.Logf("MEASURE: interrupt storm round %d (20 calls, 4 goroutines) took %v; run ended %v after the storm began",
			round, stormTime.Round(time.Millisecond), r.at.Sub(stormStart).Round(time.Millisecond))
		answers.Range(func(k, v any) bool {
			t.Logf("interrupt_session answered %d× %q", v.(*atomic.Int32).Load(), k)
			return true
		})
		// Either the run raised KeyboardInterrupt, or ipykernel, hit by a
		// signal while it was between messages, went idle without sending a
		// reply at all; the server then says so (status "interrupted").
		raised := r.out.Status == "error" && r.out.Error != nil && r.out.Error.EName == "KeyboardInterrupt"
		noReply := r.out.Status == "interrupted" && strings.Contains(r.out.Note, "without a reply")
		if !raised && !noReply {
			t.Fatalf("round %d: interrupted run: %+v", round, r.out)
		}
		if d := r.at.Sub(stormStart); d > 5*time.Second {
			t.Fatalf("round %d: run ended %v after the first interrupt", round, d)
		}
		if got := s.pidOf("storm"); got != pid {
			t.Fatalf("round %d: kernel replaced by the storm: pid %d -> %d", round, pid, got)
		}
		if _, out := s.run("storm", "before"); out.Result != "'kept'" {
			t.Fatalf("round %d: after the storm: %+v", round, out)
		}
		if _, out := s.run("storm", "import time\ntime.sleep(0.2)\n'uninterrupted'"); out.Result != "'uninterrupted'" {
			t.Fatalf("round %d: a stray interrupt hit a later run: %+v", round, out)
		}
	}
	check()
}
