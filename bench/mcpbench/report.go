package main

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

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
