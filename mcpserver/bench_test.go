package mcpserver

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRunCodeInProcess is a `run_code "1+1"` tool call through the
// whole MCP stack (client, JSON-RPC, ordering, handler, rendering, history)
// over an in-memory transport, for profiling the server's own overhead.
// integration.BenchmarkRunCodeStdio measures the same through the binary.
func BenchmarkRunCodeInProcess(b *testing.B) { benchRunCode(b, "1+1") }

// BenchmarkRunCode10MBInProcess is a run_code printing 10 MiB of stdout, the
// server's side of the 10 MB workload in make bench.
func BenchmarkRunCode10MBInProcess(b *testing.B) {
	benchRunCode(b, "for _ in range(10240): print('x'*1023)")
}

func benchRunCode(b *testing.B, code string) {
	if err := exec.Command("python3", "-c", "import ipykernel").Run(); err != nil {
		b.Skip("python3 with ipykernel is needed")
	}
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, srv.OrderedTransport(st), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}}
	for range 20 {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
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
