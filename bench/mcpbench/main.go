// Command mcpbench measures kernel-mcp side by side with Python's
// jupyter_client on the same kernel and with the MCP servers it replaces,
// all in one run on one machine, and prints a Markdown report of medians,
// p95s and ratios.
//
// Run it from the repository root (make bench does):
//
//	go run ./bench/mcpbench [-n 300] [-n-big 5] [-n-start 10] [-peers=true]
//
// What it measures:
//
//   - `1+1` round trip: the kernel package directly, a run_code tool call
//     over stdio from the go-sdk client, jupyter_client by hand (reply and
//     idle status), and each peer's tool call from the same client. The
//     tool call alternates with a kernel package round trip, so the MCP
//     layer's overhead is their difference pair by pair, under one load.
//   - Session create-to-first-result: create_session then run_code "1+1",
//     with the warm pool off (cold) and on (warm); for a peer, its first
//     tool call in a fresh server (its session starts on first use).
//   - 10 MB of stdout and 100,000 lines: time to the full result and the
//     server process's peak RSS (its kernels and workers excluded).
//   - Kernels behind Jupyter Kernel Gateway and Enterprise Gateway: `1+1`,
//     kernel start through REST and 10 MB of stdout over the WebSocket,
//     next to a Python WebSocket client of the same gateway.
//   - 20 sessions in parallel: run_code calls per second, and the server's
//     RSS per idle session.
//
// Peers are installed from PyPI into a virtualenv under the user cache
// directory; one that cannot be installed or run is reported with why.
// Linux reads RSS from /proc; elsewhere the RSS columns say n/a.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

var (
	flagN        = flag.Int("n", 300, "1+1 round trips per client")
	flagNBig     = flag.Int("n-big", 5, "runs of the 10 MB and 100,000-line workloads")
	flagNStart   = flag.Int("n-start", 10, "session starts, cold and warm")
	flagSessions = flag.Int("sessions", 20, "sessions in the parallel workload")
	flagPerSess  = flag.Int("per-session", 50, "run_code calls per session in the parallel workload")
	flagPeers    = flag.Bool("peers", true, "install and measure the peer servers from PyPI")
	flagPython   = flag.String("python", "python3", "interpreter for kernels, jupyter_client and peers' user code")
	flagJSON     = flag.String("json", "", "also write the raw results to this file")
	flagGateways = flag.Bool("gateways", true, "measure kernels behind the test gateways (venvs from .ci/run)")
	flagSameLoad = flag.Bool("same-load-only", false, "measure only the same-load comparisons: the paired `1+1` (MCP overhead) and the interleaved 10 MB")
)

const (
	codeRoundTrip = "1+1"
	codeStdout    = "for _ in range(10240): print('x'*1023)" // 10 MiB
	codeLines     = "for i in range(100000): print(i)"
	warmup        = 20
)

// result is one client's or server's figures; a zero stat was not measured.
type result struct {
	Name           string  `json:"name"`
	Version        string  `json:"version,omitempty"`
	Skipped        string  `json:"skipped,omitempty"` // why nothing was measured
	RoundTrip      stat    `json:"roundtrip"`
	WaitRunPoll    stat    `json:"wait_run_poll"`
	StartCold      stat    `json:"start_cold"`
	StartWarm      stat    `json:"start_warm"`
	Stdout10MB     stat    `json:"stdout10mb"`
	Stdout10MBPeak float64 `json:"stdout10mb_peak_rss_mb,omitempty"`
	Lines100k      stat    `json:"lines100k"`
	Lines100kPeak  float64 `json:"lines100k_peak_rss_mb,omitempty"`
	ExecsPerSec    float64 `json:"parallel_execs_per_s,omitempty"`
	RSSPerSession  float64 `json:"rss_per_idle_session_mb,omitempty"`
	IdleRSS        float64 `json:"idle_server_rss_mb,omitempty"`
	// Interleaved10MB: 10 MB of stdout with the kernel package, jupyter_client
	// and the tool call taking turns run by run (kernel-mcp only).
	Interleaved10MB *interleaved `json:"interleaved_stdout10mb,omitempty"`
	// PairedKernel and Overhead: the kernel package's `1+1` timed in
	// alternation with the tool call, and the tool call minus it, pair by
	// pair (kernel-mcp only).
	PairedKernel stat `json:"paired_kernel_roundtrip"`
	Overhead     stat `json:"mcp_overhead"`
	Notes        []string
}

func main() {
	flag.Parse()
	log := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "mcpbench: "+format+"\n", a...) }
	if _, err := os.Stat("go.mod"); err != nil {
		fatal("run from the repository root (make bench)")
	}
	py, err := exec.LookPath(*flagPython)
	if err != nil {
		fatal("no %s: %v", *flagPython, err)
	}
	tmp, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		fatal("%v", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "kernel-mcp")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	log("building kernel-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/kernel-mcp").CombinedOutput(); err != nil {
		fatal("go build: %v\n%s", err, out)
	}

	started := time.Now()
	var all []*result
	if *flagSameLoad {
		log("same-load comparisons only")
		all = append(all, benchSameLoad(bin, py))
		report(os.Stdout, all, py, time.Since(started))
		return
	}

	if *flagSandboxOnly {
		log("kernels under --sandbox and unconfined")
		reportSandbox(os.Stdout, benchSandbox(bin, py))
		return
	}

	log("kernel package, direct")
	all = append(all, benchKernel(py, false), benchKernel(py, true))

	log("jupyter_client")
	all = append(all, benchJupyterClient(py))

	if *flagGateways {
		log("kernels behind Jupyter Kernel Gateway and Enterprise Gateway")
		all = append(all, benchGateways()...)
	}

	log("kernel-mcp over stdio")
	all = append(all, benchOurs(bin, py))

	var sandbox *sandboxResult
	if *flagSandbox {
		log("kernels under --sandbox and unconfined")
		sandbox = benchSandbox(bin, py)
	}

	if *flagPeers {
		for _, p := range peers {
			log("peer %s", p.name)
			all = append(all, benchPeer(p, py))
		}
	}

	report(os.Stdout, all, py, time.Since(started))
	reportSandbox(os.Stdout, sandbox)
	if *flagJSON != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(*flagJSON, b, 0o644); err != nil {
			fatal("%v", err)
		}
	}
}

func fatal(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "mcpbench: "+format+"\n", a...)
	os.Exit(1)
}
