//go:build unix

package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
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

// BenchmarkRunCodeStdio measures a `run_code "1+1"` tool call from a go-sdk
// client over stdio, end to end: JSON-RPC, the server, the kernel round trip.
// Compare with kernel.BenchmarkExecuteRoundTrip for the MCP overhead.
func BenchmarkRunCodeStdio(b *testing.B) {
	requireKernel(b)
	cmd := exec.Command(fastBinary(b), "--state-dir", "none")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
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
	cmd := exec.Command(fastBinary(b), "--state-dir", state, "--output-limit", "20000")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
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
