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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// stat is a sample summary in milliseconds.
type stat struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
}

func summarize(d []time.Duration) stat {
	if len(d) == 0 {
		return stat{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	med := ms(s[len(s)/2])
	if len(s)%2 == 0 {
		med = (ms(s[len(s)/2-1]) + ms(s[len(s)/2])) / 2
	}
	p95 := ms(s[max(0, int(math.Ceil(0.95*float64(len(s))))-1)]) // nearest rank
	return stat{N: len(s), Median: med, P95: p95}
}

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

// benchKernel measures the kernel package without MCP.
func benchKernel(py string, stock bool) *result {
	r := &result{Name: "kernel package (Go), ipykernel as kernel-mcp starts it"}
	if stock {
		r.Name = "kernel package (Go), stock ipykernel"
	}
	ctx := context.Background()
	k, err := kernel.Start(ctx, kernel.Options{Python: py, StockIPyKernel: stock})
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer k.Close()
	run := func(code string) error {
		res, err := k.Execute(ctx, code, kernel.ExecuteOptions{})
		if err != nil {
			return err
		}
		if res.Status != "ok" {
			return fmt.Errorf("status %s", res.Status)
		}
		return nil
	}
	for range warmup {
		if err := run(codeRoundTrip); err != nil {
			r.Skipped = err.Error()
			return r
		}
	}
	r.RoundTrip = timeN(*flagN, func() error { return run(codeRoundTrip) })
	r.Stdout10MB = timeN(*flagNBig, func() error { return run(codeStdout) })
	r.Lines100k = timeN(*flagNBig, func() error { return run(codeLines) })
	return r
}

// timeN runs f n times and summarizes; a failing run ends the series.
func timeN(n int, f func() error) stat {
	d := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
			break
		}
		d = append(d, time.Since(t0))
	}
	return summarize(d)
}

// pyJSON runs a Python benchmark script and decodes the JSON it prints into
// v; a failure carries the script's last line on stderr.
func pyJSON(cmd *exec.Cmd, v any) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(stderr.String()))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("bad output: %v", err)
	}
	return nil
}

// benchJupyterClient runs bench/jupyter_client_bench.py.
func benchJupyterClient(py string) *result {
	r := &result{Name: "jupyter_client (Python), stock ipykernel"}
	cmd := exec.Command(py, "bench/jupyter_client_bench.py", "--json", "--python", py,
		"--n", strconv.Itoa(*flagN), "--n-big", strconv.Itoa(*flagNBig), "--n-start", strconv.Itoa(*flagNStart))
	var v struct {
		JupyterClient string `json:"jupyter_client"`
		IPyKernel     string `json:"ipykernel"`
		RoundTrip     pyStat `json:"roundtrip_ms"`
		Stdout        pyStat `json:"stdout10mb_ms"`
		Lines         pyStat `json:"lines100k_ms"`
		Start         pyStat `json:"start_ms"`
	}
	if err := pyJSON(cmd, &v); err != nil {
		r.Skipped = err.Error()
		return r
	}
	r.Version = "jupyter_client " + v.JupyterClient + ", ipykernel " + v.IPyKernel
	r.RoundTrip, r.Stdout10MB, r.Lines100k, r.StartCold = v.RoundTrip.stat(), v.Stdout.stat(), v.Lines.stat(), v.Start.stat()
	return r
}

type pyStat struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
}

func (p pyStat) stat() stat { return stat(p) }

// mcpServer is one server process with a go-sdk client session on it.
type mcpServer struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

func connect(cmd *exec.Cmd) (*mcpServer, error) {
	cmd.Stderr = io.Discard
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		return nil, err
	}
	return &mcpServer{cmd: cmd, cs: cs}, nil
}

func (s *mcpServer) close() { s.cs.Close() }

// call invokes a tool; a tool error is an error, with its text.
func (s *mcpServer) call(tool string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return b.String(), fmt.Errorf("%s: %s", tool, firstLine(b.String()))
	}
	return b.String(), nil
}

// peakRSS is the process's peak and current resident set in MB (Linux).
func rss(pid int) (peak, cur float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb / 1024
		case "VmRSS:":
			cur = kb / 1024
		}
	}
	return peak, cur
}

func ours(bin string, args ...string) (*mcpServer, error) {
	return connect(exec.Command(bin, append([]string{"--state-dir", "none"}, args...)...))
}

// benchOurs measures the kernel-mcp binary over stdio.
func benchOurs(bin, py string) *result {
	r := &result{Name: "kernel-mcp `run_code` over stdio"}
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		r.Version = strings.TrimSpace(string(out))
	}
	fail := func(what string, err error) *result {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", what, err))
		return r
	}
	runCode := func(s *mcpServer, session, code string) error {
		_, err := s.call("run_code", map[string]any{"session_id": session, "code": code})
		return err
	}

	// Round trip, in a server with the default pool.
	s, err := ours(bin, "--python", py)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	for range warmup {
		if err := runCode(s, "rt", codeRoundTrip); err != nil {
			s.close()
			return fail("round trip", err)
		}
	}
	// The session took the pool's kernel; measure once the pool has
	// started its replacement, in the steady state.
	if err := waitPoolReady(s); err != nil {
		s.close()
		return fail("round trip", err)
	}
	// The tool call alternates with a kernel package round trip on a kernel
	// started the same way, so that the MCP layer's overhead is measured
	// pair by pair, under the same machine load, not across phases minutes
	// apart.
	if r.RoundTrip, r.PairedKernel, r.Overhead, err = pairedRoundTrips(py, func() error { return runCode(s, "rt", codeRoundTrip) }); err != nil {
		s.close()
		return fail("round trip", err)
	}

	// A wait_run poll (wait 0) on a run that goes on: the whole tool call,
	// so an upper bound on the server's time per poll.
	if _, err := s.call("run_code", map[string]any{"session_id": "wr", "code": "import time\ntime.sleep(3600)", "background": true}); err != nil {
		s.close()
		return fail("wait_run poll", err)
	}
	r.WaitRunPoll = timeN(*flagN, func() error {
		_, err := s.call("wait_run", map[string]any{"session_id": "wr", "wait": 0})
		return err
	})
	s.close()

	// Create-to-first-result, cold then warm.
	startOnce := func(s *mcpServer, i int) error {
		id := "s" + strconv.Itoa(i)
		if _, err := s.call("create_session", map[string]any{"session_id": id}); err != nil {
			return err
		}
		return runCode(s, id, codeRoundTrip)
	}
	// series creates sessions one after another in a fresh server and times
	// each to its first result; warm ones wait for the pool to refill first.
	series := func(warm bool) (stat, error) {
		pool := "0"
		if warm {
			pool = "1"
		}
		s, err := ours(bin, "--python", py, "--pool-size", pool)
		if err != nil {
			return stat{}, err
		}
		defer s.close()
		var d []time.Duration
		for i := range *flagNStart {
			if warm {
				if err := waitPoolReady(s); err != nil {
					return stat{}, err
				}
			}
			t0 := time.Now()
			if err := startOnce(s, i); err != nil {
				return stat{}, err
			}
			d = append(d, time.Since(t0))
			s.call("delete_session", map[string]any{"session_id": "s" + strconv.Itoa(i)})
		}
		return summarize(d), nil
	}
	if r.StartCold, err = series(false); err != nil {
		return fail("cold start", err)
	}
	if r.StartWarm, err = series(true); err != nil {
		return fail("warm start", err)
	}

	// 10 MB with the three clients taking turns, under one load.
	if r.Interleaved10MB, err = interleaved10MB(bin, py); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("interleaved 10 MB: %v", err))
	}

	// Big outputs, each in a fresh server so its peak RSS is its own.
	big := func(code string) (stat, float64, error) {
		s, err := ours(bin, "--python", py, "--pool-size", "0")
		if err != nil {
			return stat{}, 0, err
		}
		defer s.close()
		if err := runCode(s, "big", codeRoundTrip); err != nil {
			return stat{}, 0, err
		}
		st := timeN(*flagNBig, func() error { return runCode(s, "big", code) })
		peak, _ := rss(s.cmd.Process.Pid)
		return st, peak, nil
	}
	if r.Stdout10MB, r.Stdout10MBPeak, err = big(codeStdout); err != nil {
		return fail("10 MB", err)
	}
	if r.Lines100k, r.Lines100kPeak, err = big(codeLines); err != nil {
		return fail("100,000 lines", err)
	}

	// Parallel sessions: RSS per idle session, then throughput.
	if s, err = ours(bin, "--python", py, "--pool-size", "0"); err != nil {
		return fail("parallel", err)
	}
	defer s.close()
	if err := runCode(s, "base", codeRoundTrip); err != nil {
		return fail("parallel", err)
	}
	for range warmup {
		runCode(s, "base", codeRoundTrip)
	}
	_, base := rss(s.cmd.Process.Pid)
	r.IdleRSS = base
	n := *flagSessions
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := "p" + strconv.Itoa(i)
			for range 5 {
				if err := runCode(s, id, codeRoundTrip); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail("parallel sessions", err)
	}
	_, withN := rss(s.cmd.Process.Pid)
	if base > 0 {
		r.RSSPerSession = (withN - base) / float64(n)
	}
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			id := "p" + strconv.Itoa(i)
			for range *flagPerSess {
				if err := runCode(s, id, codeRoundTrip); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail("parallel throughput", err)
	}
	r.ExecsPerSec = float64(n**flagPerSess) / time.Since(t0).Seconds()
	return r
}

// benchSameLoad measures only what is compared under one load: the paired
// `1+1` round trips and the interleaved 10 MB.
func benchSameLoad(bin, py string) *result {
	r := &result{Name: "kernel-mcp `run_code` over stdio"}
	s, err := ours(bin, "--python", py, "--pool-size", "0")
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer s.close()
	runCode := func() error {
		_, err := s.call("run_code", map[string]any{"session_id": "rt", "code": codeRoundTrip})
		return err
	}
	for range warmup {
		if err := runCode(); err != nil {
			r.Skipped = err.Error()
			return r
		}
	}
	if r.RoundTrip, r.PairedKernel, r.Overhead, err = pairedRoundTrips(py, runCode); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("round trip: %v", err))
	}
	if r.Interleaved10MB, err = interleaved10MB(bin, py); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("interleaved 10 MB: %v", err))
	}
	return r
}

// interleaved holds the 10 MB workload timed with three clients in turn.
type interleaved struct {
	Kernel        stat `json:"kernel_package"`
	JupyterClient stat `json:"jupyter_client"`
	Tool          stat `json:"tool_call"`
}

// interleaved10MB runs the 10 MB workload 2×-n-big times with each of the
// kernel package (on ipykernel as kernel-mcp starts it), jupyter_client
// (bench/jupyter_client_bench.py --serve, stock ipykernel) and a run_code
// tool call, one run each in turn, the order rotating every round, so the
// ratios are not skewed by the machine's load changing between phases.
func interleaved10MB(bin, py string) (*interleaved, error) {
	ctx := context.Background()
	jc := exec.Command(py, "bench/jupyter_client_bench.py", "--serve", "--python", py)
	jc.Stderr = io.Discard
	jcIn, err := jc.StdinPipe()
	if err != nil {
		return nil, err
	}
	jcOut, err := jc.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := jc.Start(); err != nil {
		return nil, err
	}
	defer func() {
		jcIn.Close()
		jc.Wait()
	}()
	lines := bufio.NewScanner(jcOut)
	if !lines.Scan() || lines.Text() != "ready" {
		return nil, fmt.Errorf("jupyter_client_bench.py --serve did not start: %q %v", lines.Text(), lines.Err())
	}
	k, err := kernel.Start(ctx, kernel.Options{Python: py})
	if err != nil {
		return nil, err
	}
	defer k.Close()
	s, err := ours(bin, "--python", py, "--pool-size", "0")
	if err != nil {
		return nil, err
	}
	defer s.close()
	if _, err := s.call("run_code", map[string]any{"session_id": "big", "code": codeRoundTrip}); err != nil {
		return nil, err
	}
	clients := []func() (time.Duration, error){
		func() (time.Duration, error) {
			t0 := time.Now()
			res, err := k.Execute(ctx, codeStdout, kernel.ExecuteOptions{})
			d := time.Since(t0)
			if err == nil && (len(res.Outputs) != 1 || len(res.Outputs[0].Text) != 10<<20) {
				err = fmt.Errorf("kernel package: %d outputs, not one of 10 MiB", len(res.Outputs))
			}
			return d, err
		},
		func() (time.Duration, error) {
			if _, err := fmt.Fprintln(jcIn, "stdout10mb"); err != nil {
				return 0, err
			}
			if !lines.Scan() {
				return 0, fmt.Errorf("jupyter_client_bench.py: %v", lines.Err())
			}
			ms, err := strconv.ParseFloat(lines.Text(), 64)
			return time.Duration(ms * float64(time.Millisecond)), err
		},
		func() (time.Duration, error) {
			t0 := time.Now()
			_, err := s.call("run_code", map[string]any{"session_id": "big", "code": codeStdout})
			return time.Since(t0), err
		},
	}
	samples := make([][]time.Duration, len(clients))
	for round := range 2 * *flagNBig {
		for i := range clients {
			c := (round + i) % len(clients)
			d, err := clients[c]()
			if err != nil {
				return nil, err
			}
			samples[c] = append(samples[c], d)
		}
	}
	return &interleaved{Kernel: summarize(samples[0]), JupyterClient: summarize(samples[1]), Tool: summarize(samples[2])}, nil
}

func (r *result) interleaved() *interleaved {
	if r == nil {
		return nil
	}
	return r.Interleaved10MB
}

// pairedRoundTrips times tool() and a kernel package `1+1` in alternation,
// -n times each, the order swapped every pair, and returns the tool call's
// times, the kernel package's, and their differences pair by pair.
func pairedRoundTrips(py string, tool func() error) (toolStat, kernelStat, diffStat stat, err error) {
	ctx := context.Background()
	k, err := kernel.Start(ctx, kernel.Options{Python: py})
	if err != nil {
		return stat{}, stat{}, stat{}, err
	}
	defer k.Close()
	direct := func() error {
		res, err := k.Execute(ctx, codeRoundTrip, kernel.ExecuteOptions{})
		if err == nil && res.Status != "ok" {
			err = fmt.Errorf("status %s", res.Status)
		}
		return err
	}
	for range warmup {
		if err := direct(); err != nil {
			return stat{}, stat{}, stat{}, err
		}
	}
	timed := func(f func() error) (time.Duration, error) {
		t0 := time.Now()
		err := f()
		return time.Since(t0), err
	}
	var tools, kernels, diffs []time.Duration
	for i := range *flagN {
		var dt, dk time.Duration
		var e1, e2 error
		if i%2 == 0 {
			dt, e1 = timed(tool)
			dk, e2 = timed(direct)
		} else {
			dk, e2 = timed(direct)
			dt, e1 = timed(tool)
		}
		if err := errors.Join(e1, e2); err != nil {
			return stat{}, stat{}, stat{}, err
		}
		tools, kernels, diffs = append(tools, dt), append(kernels, dk), append(diffs, dt-dk)
	}
	return summarize(tools), summarize(kernels), summarizeSigned(diffs), nil
}

// summarizeSigned is summarize for samples that can be negative.
func summarizeSigned(d []time.Duration) stat {
	if len(d) == 0 {
		return stat{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e6 }
	med := ms(s[len(s)/2])
	if len(s)%2 == 0 {
		med = (ms(s[len(s)/2-1]) + ms(s[len(s)/2])) / 2
	}
	return stat{N: len(s), Median: med, P95: ms(s[max(0, int(math.Ceil(0.95*float64(len(s))))-1)])}
}

// waitPoolReady polls list_sessions until a warm kernel is ready.
func waitPoolReady(s *mcpServer) error {
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions"})
		cancel()
		if err != nil {
			return err
		}
		b, _ := json.Marshal(res.StructuredContent)
		var v struct {
			Pool struct{ Ready int } `json:"pool"`
		}
		json.Unmarshal(b, &v)
		if v.Pool.Ready > 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("the pool never had a kernel ready")
}

// peer is an MCP server from PyPI that runs Python.
type peer struct {
	name    string
	pkg     string   // pip requirement
	command []string // relative to the venv's bin directory
	tool    string
	args    func(code string) map[string]any
	check   func(out string) bool // is this the result of 1+1?
	env     func(py string) []string
	notes   []string
}

var peers = []peer{
	{
		name:    "python-session-mcp",
		pkg:     "python-session-mcp",
		command: []string{"python-session-mcp"},
		tool:    "run_python",
		args:    func(code string) map[string]any { return map[string]any{"code": code} },
		check:   func(out string) bool { return strings.Contains(out, "2") },
		env:     func(py string) []string { return []string{"PYTHON_MCP_INTERPRETER=" + py} },
		notes: []string{"one session per server process: no create_session, and the parallel-sessions workload does not apply",
			"user code runs in a plain Python worker over pipes, not a Jupyter kernel"},
	},
	{
		name:    "python-repl-mcp",
		pkg:     "python-repl-mcp",
		command: []string{"python", "-m", "python_repl_mcp"},
		tool:    "run_code",
		args:    func(code string) map[string]any { return map[string]any{"code": code} },
		check:   func(out string) bool { return strings.Contains(out, "2") },
		env:     func(string) []string { return nil },
	},
}

// peerVenv makes (once) a virtualenv for a peer under the user cache dir
// and installs it; it returns the venv's bin directory.
func peerVenv(p peer, py string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	venv := filepath.Join(cache, "kernel-mcp-bench", p.name)
	bin := filepath.Join(venv, "bin")
	if runtime.GOOS == "windows" {
		bin = filepath.Join(venv, "Scripts")
	}
	if _, err := os.Stat(filepath.Join(venv, ".installed")); err == nil {
		return bin, nil
	}
	os.RemoveAll(venv)
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		return "", fmt.Errorf("python -m venv: %v: %s", err, lastLine(string(out)))
	}
	out, err := exec.Command(filepath.Join(bin, "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q", p.pkg).CombinedOutput()
	if err != nil {
		os.RemoveAll(venv)
		return "", fmt.Errorf("pip install %s failed: %s", p.pkg, lastLine(string(out)))
	}
	return bin, os.WriteFile(filepath.Join(venv, ".installed"), nil, 0o644)
}

func benchPeer(p peer, py string) *result {
	r := &result{Name: p.name, Notes: p.notes}
	bin, err := peerVenv(p, py)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	if out, err := exec.Command(filepath.Join(bin, "python"), "-m", "pip", "show", p.pkg).Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "Version: "); ok {
				r.Version = p.pkg + " " + v
			}
		}
	}
	start := func() (*mcpServer, error) {
		argv := slices.Clone(p.command)
		argv[0] = filepath.Join(bin, argv[0])
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), p.env(py)...)
		return connect(cmd)
	}
	run := func(s *mcpServer, code string) (string, error) { return s.call(p.tool, p.args(code)) }

	s, err := start()
	if err != nil {
		r.Skipped = "cannot start: " + err.Error()
		return r
	}
	out, err := run(s, codeRoundTrip)
	if err != nil || !p.check(out) {
		s.close()
		r.Skipped = fmt.Sprintf("1+1 gave %q, %v", firstLine(out), err)
		return r
	}
	for range warmup {
		run(s, codeRoundTrip)
	}
	r.RoundTrip = timeN(*flagN, func() error { _, err := run(s, codeRoundTrip); return err })
	s.close()

	var first []time.Duration
	for range *flagNStart {
		s, err := start()
		if err != nil {
			r.Notes = append(r.Notes, "first result: "+err.Error())
			break
		}
		t0 := time.Now()
		_, err = run(s, codeRoundTrip)
		d := time.Since(t0)
		s.close()
		if err != nil {
			r.Notes = append(r.Notes, "first result: "+err.Error())
			break
		}
		first = append(first, d)
	}
	r.StartCold = summarize(first)

	big := func(code string, check func(string) bool) (stat, float64, error) {
		s, err := start()
		if err != nil {
			return stat{}, 0, err
		}
		defer s.close()
		if _, err := run(s, codeRoundTrip); err != nil {
			return stat{}, 0, err
		}
		st := timeN(*flagNBig, func() error {
			out, err := run(s, code)
			if err == nil && !check(out) {
				err = fmt.Errorf("incomplete output (%d bytes)", len(out))
			}
			return err
		})
		peak, _ := rss(s.cmd.Process.Pid)
		return st, peak, nil
	}
	var berr error
	if r.Stdout10MB, r.Stdout10MBPeak, berr = big(codeStdout, func(out string) bool { return len(out) > 0 }); berr != nil {
		r.Notes = append(r.Notes, "10 MB: "+berr.Error())
	}
	if r.Lines100k, r.Lines100kPeak, berr = big(codeLines, func(out string) bool { return len(out) > 0 }); berr != nil {
		r.Notes = append(r.Notes, "100,000 lines: "+berr.Error())
	}
	return r
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return firstLine(lines[len(lines)-1])
}

// report prints the Markdown report: the figures, then the targets.
func report(w io.Writer, all []*result, py string, took time.Duration) {
	pyVersion, _ := exec.Command(py, "-c", "import sys; print(sys.version.split()[0])").Output()
	fmt.Fprintf(w, "Machine: %s/%s, %d CPUs; %s; Python %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), strings.TrimSpace(string(pyVersion)))
	for _, r := range all {
		if r.Version != "" {
			fmt.Fprintf(w, "; %s", r.Version)
		}
	}
	fmt.Fprintf(w, ". One run of `make bench`, %s; median (p95) in ms unless noted.\n\n", took.Round(time.Second))

	fmt.Fprint(w, "| measurement |")
	for _, r := range all {
		fmt.Fprintf(w, " %s |", r.Name)
	}
	fmt.Fprint(w, "\n|---|")
	for range all {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	row := func(label string, cell func(r *result) string) {
		fmt.Fprintf(w, "| %s |", label)
		for _, r := range all {
			c := "—"
			if r.Skipped == "" {
				if v := cell(r); v != "" {
					c = v
				}
			}
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	st := func(s stat) string {
		if s.N == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f (%.2f)", s.Median, s.P95)
	}
	mb := func(v float64) string {
		if v == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f MB", v)
	}
	row("`1+1` round trip", func(r *result) string { return st(r.RoundTrip) })
	row("`wait_run` poll (wait 0) on a running run", func(r *result) string { return st(r.WaitRunPoll) })
	row("`1+1`: kernel package, alternating with the tool call", func(r *result) string { return st(r.PairedKernel) })
	row("`1+1`: MCP overhead (tool call minus kernel package, pair by pair)", func(r *result) string {
		if r.Overhead.N == 0 {
			return ""
		}
		return fmt.Sprintf("%.3f (%.3f)", r.Overhead.Median, r.Overhead.P95)
	})
	row("session create to first result, cold (kernel start for jupyter_client; first call in a fresh server for peers)", func(r *result) string { return st(r.StartCold) })
	row("session create to first result, warm pool", func(r *result) string { return st(r.StartWarm) })
	row("10 MB of stdout", func(r *result) string { return st(r.Stdout10MB) })
	row("10 MB of stdout: server peak RSS", func(r *result) string { return mb(r.Stdout10MBPeak) })
	row("10 MB of stdout, interleaved: kernel package / jupyter_client / tool call, one run each in turn", func(r *result) string {
		if r.Interleaved10MB == nil {
			return ""
		}
		il := r.Interleaved10MB
		return fmt.Sprintf("%s / %s / %s", st(il.Kernel), st(il.JupyterClient), st(il.Tool))
	})
	row("100,000 lines", func(r *result) string { return st(r.Lines100k) })
	row("100,000 lines: server peak RSS", func(r *result) string { return mb(r.Lines100kPeak) })
	row(fmt.Sprintf("%d sessions in parallel: `run_code` calls per second", *flagSessions), func(r *result) string {
		if r.ExecsPerSec == 0 {
			return ""
		}
		return fmt.Sprintf("%.0f/s", r.ExecsPerSec)
	})
	row("server RSS with one session", func(r *result) string { return mb(r.IdleRSS) })
	row("server RSS per further idle session", func(r *result) string {
		if r.RSSPerSession == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f MB", r.RSSPerSession)
	})

	find := func(prefix string) *result {
		for _, r := range all {
			if strings.HasPrefix(r.Name, prefix) && r.Skipped == "" {
				return r
			}
		}
		return nil
	}
	ours, jc, kpkg := find("kernel-mcp"), find("jupyter_client"), find("kernel package (Go), ipykernel as")
	var fastest *result
	for _, p := range peers {
		if r := find(p.name); r != nil && r.RoundTrip.N > 0 && (fastest == nil || r.RoundTrip.Median < fastest.RoundTrip.Median) {
			fastest = r
		}
	}
	fmt.Fprint(w, "\n| target | measured | met |\n|---|---|---|\n")
	target := func(label string, ok bool, measured string) {
		mark := "no"
		if ok {
			mark = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", label, measured, mark)
	}
	ratio := func(a, b stat) float64 { return a.Median / b.Median }
	if ours != nil && jc != nil && jc.RoundTrip.N > 0 {
		x := ratio(ours.RoundTrip, jc.RoundTrip)
		target("`1+1` tool call ≤ 0.8× jupyter_client's raw round trip", x <= 0.8, fmt.Sprintf("%.2f×", x))
	}
	if ours != nil && ours.Overhead.N > 0 {
		target("MCP overhead on `1+1` ≤ 0.3 ms median (tool call minus kernel package, paired)", ours.Overhead.Median <= 0.3, fmt.Sprintf("%.3f ms", ours.Overhead.Median))
	}
	if ours != nil && fastest != nil {
		x := ratio(ours.RoundTrip, fastest.RoundTrip)
		target("`1+1` tool call ≤ 1.0× the fastest peer's ("+fastest.Name+")", x <= 1.0, fmt.Sprintf("%.2f×", x))
	}
	if ours != nil && ours.WaitRunPoll.N > 0 {
		target("`wait_run` poll ≤ 1 ms beyond its wait (whole tool call, wait 0)", ours.WaitRunPoll.Median <= 1, fmt.Sprintf("%.2f ms", ours.WaitRunPoll.Median))
	}
	if ours != nil && ours.StartWarm.N > 0 {
		target("warm create-to-first-result ≤ 50 ms median", ours.StartWarm.Median <= 50, fmt.Sprintf("%.1f ms", ours.StartWarm.Median))
		x := ours.StartCold.Median / ours.StartWarm.Median
		target("warm ≥ 15× faster than cold", x >= 15, fmt.Sprintf("%.0f×", x))
	}
	if il := ours.interleaved(); il != nil && il.JupyterClient.N > 0 {
		// The same-load figures: the phases above run minutes apart.
		x := ratio(il.Tool, il.JupyterClient)
		target("10 MB of output ≤ 0.9× jupyter_client (tool call; interleaved)", x <= 0.9, fmt.Sprintf("%.2f×", x))
		x = ratio(il.Kernel, il.JupyterClient)
		target("10 MB of output ≤ 0.9× jupyter_client (kernel package; interleaved)", x <= 0.9, fmt.Sprintf("%.2f×", x))
	} else if ours != nil && jc != nil && jc.Stdout10MB.N > 0 {
		x := ratio(ours.Stdout10MB, jc.Stdout10MB)
		target("10 MB of output ≤ 0.9× jupyter_client (tool call)", x <= 0.9, fmt.Sprintf("%.2f×", x))
		if kpkg != nil {
			x := ratio(kpkg.Stdout10MB, jc.Stdout10MB)
			target("10 MB of output ≤ 0.9× jupyter_client (kernel package)", x <= 0.9, fmt.Sprintf("%.2f×", x))
		}
	}
	// Remote kernels: the gateway's kernel is stock ipykernel, so it is
	// held against the stock direct figure as well.
	stock := find("kernel package (Go), stock")
	for _, name := range []string{"kernel package over Kernel Gateway", "kernel package over Enterprise Gateway"} {
		if gw := find(name); gw != nil && kpkg != nil && gw.RoundTrip.N > 0 {
			x := ratio(gw.RoundTrip, kpkg.RoundTrip)
			m := fmt.Sprintf("%.2f×", x)
			if stock != nil {
				m += fmt.Sprintf(" (%.2f× stock)", ratio(gw.RoundTrip, stock.RoundTrip))
			}
			target("`1+1` "+strings.TrimPrefix(name, "kernel package ")+" ≤ 1.5× direct ZeroMQ", x <= 1.5, m)
		}
	}
	if ours != nil && ours.RSSPerSession != 0 {
		target("server overhead per idle session ≤ 2 MB RSS", ours.RSSPerSession <= 2, fmt.Sprintf("%.2f MB", ours.RSSPerSession))
	}

	fmt.Fprintln(w)
	for _, r := range all {
		if r.Skipped != "" {
			fmt.Fprintf(w, "- **%s**: not measured: %s\n", r.Name, r.Skipped)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- **%s**: %s\n", r.Name, n)
		}
	}
}
