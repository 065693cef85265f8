//go:build unix

package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
