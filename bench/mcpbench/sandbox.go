package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

var flagSandbox = flag.Bool("sandbox", true, "also measure kernels under --sandbox next to unconfined ones (Linux, needs bwrap)")

var flagSandboxOnly = flag.Bool("sandbox-only", false, "measure only kernels under --sandbox next to unconfined ones")

// sandboxFigures are one configuration's figures: the kernel package's
// start to ready, and through the binary the `1+1` tool call and the
// create-to-first-result, cold and from the warm pool.
type sandboxFigures struct {
	KernelStart stat `json:"kernel_start"`
	RoundTrip   stat `json:"round_trip"`
	StartCold   stat `json:"start_cold"`
	StartWarm   stat `json:"start_warm"`
}

// sandboxResult sets sandboxed kernels beside unconfined ones, measured
// the same way in the same run.
type sandboxResult struct {
	Unconfined, Sandboxed sandboxFigures
	Skipped               string
	Notes                 []string
}

func benchSandbox(bin, py string) *sandboxResult {
	r := &sandboxResult{}
	if err := kernel.CheckSandbox(kernel.SandboxOptions{}); err != nil {
		r.Skipped = err.Error()
		return r
	}
	var err error
	if r.Unconfined, err = sandboxFiguresFor(bin, py, false); err != nil {
		r.Notes = append(r.Notes, "unconfined: "+err.Error())
	}
	if r.Sandboxed, err = sandboxFiguresFor(bin, py, true); err != nil {
		r.Notes = append(r.Notes, "sandboxed: "+err.Error())
	}
	return r
}

func sandboxFiguresFor(bin, py string, sandboxed bool) (sandboxFigures, error) {
	var f sandboxFigures
	dir, err := os.MkdirTemp("", "mcpbench-sandbox-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	opts := kernel.Options{Python: py, Dir: dir}
	flags := []string{"--python", py}
	if sandboxed {
		opts.Sandbox = &kernel.SandboxOptions{}
		flags = append(flags, "--sandbox")
	}
	f.KernelStart = timeN(*flagNStart, func() error {
		k, err := kernel.Start(context.Background(), opts)
		if err != nil {
			return err
		}
		return k.Close()
	})

	runCode := func(s *mcpServer, session, code string) error {
		_, err := s.call("run_code", map[string]any{"session_id": session, "code": code})
		return err
	}
	s, err := ours(bin, flags...)
	if err != nil {
		return f, err
	}
	for range warmup {
		if err := runCode(s, "rt", codeRoundTrip); err != nil {
			s.close()
			return f, err
		}
	}
	f.RoundTrip = timeN(*flagN, func() error { return runCode(s, "rt", codeRoundTrip) })
	s.close()

	series := func(pool string) (stat, error) {
		s, err := ours(bin, append(flags, "--pool-size", pool)...)
		if err != nil {
			return stat{}, err
		}
		defer s.close()
		var d []time.Duration
		for i := range *flagNStart {
			if pool != "0" {
				if err := waitPoolReady(s); err != nil {
					return stat{}, err
				}
			}
			id := "s" + strconv.Itoa(i)
			t0 := time.Now()
			if _, err := s.call("create_session", map[string]any{"session_id": id}); err != nil {
				return stat{}, err
			}
			if err := runCode(s, id, codeRoundTrip); err != nil {
				return stat{}, err
			}
			d = append(d, time.Since(t0))
			s.call("delete_session", map[string]any{"session_id": id})
		}
		return summarize(d), nil
	}
	if f.StartCold, err = series("0"); err != nil {
		return f, err
	}
	f.StartWarm, err = series("1")
	return f, err
}

// reportSandbox prints the sandbox table and its targets.
func reportSandbox(w io.Writer, r *sandboxResult) {
	if r == nil {
		return
	}
	fmt.Fprint(w, "\nKernels under `--sandbox` (bubblewrap) next to unconfined ones, median (p95) ms:\n\n")
	if r.Skipped != "" {
		fmt.Fprintf(w, "- not measured: %s\n", r.Skipped)
		return
	}
	st := func(s stat) string {
		if s.N == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f (%.2f)", s.Median, s.P95)
	}
	ratio := func(a, b stat) string {
		if a.N == 0 || b.N == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", a.Median/b.Median)
	}
	u, s := r.Unconfined, r.Sandboxed
	fmt.Fprint(w, "| measurement | unconfined | --sandbox | ratio | target |\n|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| kernel start to ready (kernel package) | %s | %s | %s | ≤ 1.2× |\n", st(u.KernelStart), st(s.KernelStart), ratio(s.KernelStart, u.KernelStart))
	fmt.Fprintf(w, "| `1+1` tool call | %s | %s | %s | ≤ 1.1× |\n", st(u.RoundTrip), st(s.RoundTrip), ratio(s.RoundTrip, u.RoundTrip))
	fmt.Fprintf(w, "| session create to first result, cold | %s | %s | %s | ≤ 1.2× |\n", st(u.StartCold), st(s.StartCold), ratio(s.StartCold, u.StartCold))
	fmt.Fprintf(w, "| session create to first result, warm pool | %s | %s | %s | pool works |\n", st(u.StartWarm), st(s.StartWarm), ratio(s.StartWarm, u.StartWarm))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}
