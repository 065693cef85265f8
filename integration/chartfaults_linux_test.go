package integration

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// chartBrowsers are the pids of server s's chart browser processes (their
// profile folder is named km-chart-*), not other tests' servers'.
func chartBrowsers(s *server) []int {
	var pids []int
	for _, pid := range descendants(s.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.Contains(string(cmdline), "user-data-dir=") && strings.Contains(string(cmdline), "km-chart-") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The renderer's faults cost one image: a 1,000,000-point scatter is
// refused at once, a chart past --chart-timeout ends with a line saying
// so while another session runs on, a killed browser is replaced by the
// next chart; each chart still gets its summary, and the session its
// variables.
func TestChartRendererFaults(t *testing.T) {
	requirePython(t, "plotly", "numpy", "pandas", "nbformat")
	requireChartBrowser(t)
	s := startServer(t, "--chart-timeout", "0.5")
	s.run("c", `import numpy as np, plotly.express as px
rng = np.random.default_rng(1)
kept = 42`)
	small := `px.scatter(x=[1, 2, 3], y=[3, 1, 2], title="small")`

	res, out := s.run("c", `n = 1_000_000
px.scatter(x=rng.random(n), y=rng.random(n), title="million")`)
	txt := text(res)
	if out.Status != "ok" || !strings.Contains(txt, `"million"`) || !strings.Contains(txt, "1000000 points") || !strings.Contains(txt, "[no image of this chart: the chart's spec is") || hasImage(res) {
		t.Errorf("the million-point scatter: status %s, image %v:\n%s", out.Status, hasImage(res), txt)
	}

	// A chart past its bound, and another session's run beside it.
	var wg sync.WaitGroup
	var other string
	wg.Go(func() {
		r, o := s.run("other", `sum(range(10))`)
		other = o.Status + " " + text(r)
	})
	res, out = s.run("c", `n = 500_000
px.scatter(x=rng.random(n), y=rng.random(n), title="slow")`)
	wg.Wait()
	txt = text(res)
	if out.Status != "ok" || !strings.Contains(txt, `"slow"`) || !strings.Contains(txt, "took longer than 500ms") || hasImage(res) {
		t.Errorf("the slow scatter: status %s:\n%s", out.Status, txt)
	}
	if other != "ok 45" {
		t.Errorf("the other session's run beside it: %q", other)
	}

	if res, _ = s.run("c", small); !hasImage(res) {
		t.Fatalf("the chart after the slow one has no image:\n%s", text(res))
	}
	pids := chartBrowsers(s)
	if len(pids) == 0 {
		t.Fatal("no browser found to kill")
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	if res, _ = s.run("c", small); !hasImage(res) {
		t.Errorf("the chart after the browser was killed has no image:\n%s", text(res))
	}
	if res, out = s.run("c", `kept`); out.Result != "42" {
		t.Errorf("the session lost its variables: %s", text(res))
	}
}
