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

// BenchmarkWaitRunPollInProcess is a wait_run {wait: 0} call on a run that
// goes on: what a poll costs beyond its wait.
func BenchmarkWaitRunPollInProcess(b *testing.B) {
	cs := benchClient(b)
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "import time\ntime.sleep(3600)", "background": true}}); err != nil {
		b.Fatal(err)
	}
	benchCall(b, cs, &mcp.CallToolParams{Name: "wait_run", Arguments: map[string]any{"wait": 0}})
}

func benchRunCode(b *testing.B, code string) {
	cs := benchClient(b)
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}}
	for range 20 {
		if _, err := cs.CallTool(context.Background(), params); err != nil {
			b.Fatal(err)
		}
	}
	benchCall(b, cs, params)
}

// benchClient is a client of an in-process server over in-memory
// transports; both end with the benchmark.
func benchClient(b *testing.B) *mcp.ClientSession {
	if err := exec.Command("python3", "-c", "import ipykernel").Run(); err != nil {
		b.Skip("python3 with ipykernel is needed")
	}
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, srv.OrderedTransport(st), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchCall times one tool call per iteration and reports the median.
func benchCall(b *testing.B, cs *mcp.ClientSession, params *mcp.CallToolParams) {
	ctx := context.Background()
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
