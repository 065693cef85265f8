// The kernel-mcp binary's workloads over stdio, and the same-load
// comparisons with the kernel package and jupyter_client.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
