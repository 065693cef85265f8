//go:build unix

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	benchBinaryOnce sync.Once
	benchBinary     string
	benchBinaryErr  error
)

// fastBinary builds kernel-mcp without the race detector, for benchmarks.
func fastBinary(b *testing.B) string {
	benchBinaryOnce.Do(func() {
		benchBinary = filepath.Join(filepath.Dir(binary), "kernel-mcp-bench")
		out, err := exec.Command("go", "build", "-o", benchBinary, "../cmd/kernel-mcp").CombinedOutput()
		if err != nil {
			benchBinaryErr = err
			b.Logf("%s", out)
		}
	})
	if benchBinaryErr != nil {
		b.Fatal(benchBinaryErr)
	}
	return benchBinary
}

// benchClient starts kernel-mcp (built without the race detector) with
// args and connects a go-sdk client over stdio; both end with the benchmark.
func benchClient(b *testing.B, args ...string) *mcp.ClientSession {
	cmd := exec.Command(fastBinary(b), args...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchCaller calls a tool on cs, failing the benchmark on any error.
func benchCaller(b *testing.B, cs *mcp.ClientSession) func(name string, args map[string]any) *mcp.CallToolResult {
	return func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			b.Fatalf("%s: %s", name, text(res))
		}
		return res
	}
}

// BenchmarkRunCodeStdio measures a `run_code "1+1"` tool call from a go-sdk
// client over stdio, end to end: JSON-RPC, the server, the kernel round trip.
// Compare with kernel.BenchmarkExecuteRoundTrip for the MCP overhead.
func BenchmarkRunCodeStdio(b *testing.B) {
	requireKernel(b)
	cs := benchClient(b, "--state-dir", "none")
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "1+1"}}
	for range 20 { // start the kernel and warm up
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, params)
		durations = append(durations, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "ms/median")
	b.ReportMetric(float64(durations[len(durations)*95/100].Microseconds())/1000, "ms/p95")
}

// BenchmarkGetHistory10000 is a get_history tool call on a session with
// 10,000 blocks, restored from a history file the benchmark writes. The
// transcript is rendered whole, then cut to the output limit.
func BenchmarkGetHistory10000(b *testing.B) {
	requireKernel(b)
	state := b.TempDir()
	st, err := history.Create(filepath.Join(state, "sessions"), history.Meta{SessionID: "big", CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		e := history.Entry{
			Code:    fmt.Sprintf("x%d = %d * 2\nprint(x%d)", i, i, i),
			Outputs: []history.Output{{OutputType: "stream", Name: "stdout", Text: fmt.Sprintf("%d\n", 2*i)}},
			Status:  "ok", ExecutionCount: i + 1, Generation: 1, Start: time.Now(), End: time.Now(),
		}
		if err := st.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	cs := benchClient(b, "--state-dir", state, "--output-limit", "20000")
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "get_history", Arguments: map[string]any{"session_id": "big"}}
	var d []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, params)
		d = append(d, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms/median")
}

// BenchmarkGetValueDuringRun is a get_value tool call while a run is in
// progress (read beside it on the session's subshell), next to the same
// call on an idle kernel (in its turn, on the main shell). The run sleeps
// in a loop, as a fit waiting on I/O or releasing the GIL does.
func BenchmarkGetValueDuringRun(b *testing.B) {
	requireKernel(b)
	call := benchCaller(b, benchClient(b, "--state-dir", "none"))
	get := map[string]any{"expression": "len(losses)"}
	measure := func(during bool) time.Duration {
		for range 20 { // warm up (and create the subshell)
			call("get_value", get)
		}
		durations := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			res := call("get_value", get)
			durations = append(durations, time.Since(t0))
			if sc, _ := res.StructuredContent.(map[string]any); (sc["during_run"] != nil) != during {
				b.Fatalf("during_run = %v, want a read during the run: %v", sc["during_run"], during)
			}
		}
		slices.Sort(durations)
		return durations[len(durations)/2]
	}
	stop := filepath.Join(b.TempDir(), "stop")
	call("run_code", map[string]any{"code": "losses = []"})
	b.ResetTimer()
	call("run_code", map[string]any{"background": true, "code": fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    losses.append(0)\n    time.sleep(0.01)", stop)})
	during := measure(true)
	b.StopTimer()
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	call("wait_run", map[string]any{})
	b.StartTimer()
	idle := measure(false)
	b.StopTimer()
	b.ReportMetric(float64(during.Microseconds())/1000, "ms/median-during-run")
	b.ReportMetric(float64(idle.Microseconds())/1000, "ms/median-idle")
	b.ReportMetric(float64(during)/float64(idle), "ratio")
}

// BenchmarkGetValueDuringCPURun: get_value beside a run that keeps the GIL
// busy in Python (a counting loop, as a model fit in pure Python would),
// and the run's own speed with and without those reads: its loop rate
// while b.N reads go on, against the same loop alone for 2 s. The loop
// looks for its stop file once every 10^6 additions (about 0.3 s): a
// GIL-releasing call every few milliseconds would starve the kernel's
// other threads (docs/long-runs.md), and no read would get through.
func BenchmarkGetValueDuringCPURun(b *testing.B) {
	requireKernel(b)
	call := benchCaller(b, benchClient(b, "--state-dir", "none"))
	dir := b.TempDir()
	loop := func(stop string) {
		call("run_code", map[string]any{"background": true, "code": fmt.Sprintf("import os, time\nn = 0\nt0 = time.perf_counter()\nwhile True:\n    for _ in range(1000000):\n        n += 1\n    if os.path.exists(%q):\n        break\nrate = n / (time.perf_counter() - t0)", stop)})
	}
	end := func(stop string) float64 {
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		call("wait_run", map[string]any{})
		res := call("get_value", map[string]any{"expression": "rate"})
		sc, _ := res.StructuredContent.(map[string]any)
		r, err := strconv.ParseFloat(fmt.Sprint(sc["value"]), 64)
		if err != nil {
			b.Fatalf("rate: %v", sc)
		}
		return r
	}
	call("run_code", map[string]any{"code": "n = 0"})
	b.StopTimer()
	alone := filepath.Join(dir, "alone")
	loop(alone)
	time.Sleep(2 * time.Second) // the loop alone for a while: a rate, not a wait for an event
	rateAlone := end(alone)
	beside := filepath.Join(dir, "beside")
	loop(beside)
	get := map[string]any{"expression": "n"}
	for range 5 { // warm up (and create the subshell)
		call("get_value", get)
	}
	b.StartTimer()
	durations := make([]time.Duration, 0, b.N)
	for range b.N {
		t0 := time.Now()
		res := call("get_value", get)
		durations = append(durations, time.Since(t0))
		if sc, _ := res.StructuredContent.(map[string]any); sc["during_run"] == nil {
			b.Fatalf("a read did not go beside the run: %v", sc)
		}
	}
	b.StopTimer()
	rateBeside := end(beside)
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "ms/median-during-cpu-run")
	b.ReportMetric(rateAlone, "loops/s-alone")
	b.ReportMetric(rateBeside, "loops/s-with-reads")
	b.ReportMetric(rateBeside/rateAlone, "run-speed-ratio")
}
