package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Under --sandbox the chart renderer's browser, which reads what kernels
// send, runs confined as a kernel is: in a network namespace of its own
// (no network), its profile its only writable folder. A chart still
// becomes an image, and one that names data at a URL says it was not
// fetched.
func TestChartRendererSandboxed(t *testing.T) {
	requireBwrap(t)
	requireChartBrowser(t)
	requirePython(t, "plotly", "altair", "nbformat")
	home := t.TempDir()
	s := startServerEnv(t, []string{"HOME=" + home}, "--sandbox")
	res, out := s.run("c", `import plotly.express as px
px.bar(x=["a", "b"], y=[1, 3], title="confined")`)
	if out.Status != "ok" || !hasImage(res) || !strings.Contains(text(res), `"confined"`) {
		t.Fatalf("status %s, image %v:\n%s", out.Status, hasImage(res), text(res))
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var browsers int
	for _, pid := range descendants(s.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if !strings.Contains(string(cmdline), "km-chart-") || strings.HasPrefix(string(cmdline), "bwrap") {
			continue
		}
		browsers++
		ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
		if err == nil && ns == self {
			t.Errorf("browser process %d shares the server's network namespace: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if browsers == 0 {
		t.Error("no browser process of the renderer found under the server")
	}

	res, _ = s.run("c", `from IPython.display import display
display({"application/vnd.vegalite.v5+json": {"mark": "bar", "data": {"url": "https://example.com/d.csv"},
  "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}}, raw=True)`)
	if txt := text(res); !strings.Contains(txt, "not fetched") || hasImage(res) {
		t.Errorf("a chart with data at a URL:\n%s", txt)
	}
}
