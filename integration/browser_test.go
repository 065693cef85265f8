//go:build unix

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// browserTools finds what the browser tests need: Debian's chromium
// (KERNEL_MCP_TEST_CHROMIUM, else chromium on PATH), and node with
// playwright-core, ext-apps, the TypeScript client and esbuild from
// integration/node_modules. It fails under CI and skips elsewhere when one
// is missing.
func browserTools(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(msg string) {
		t.Helper()
		msg += " (CI installs them: see .ci/run)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	chromium = os.Getenv("KERNEL_MCP_TEST_CHROMIUM")
	if chromium == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			missing("no chromium: set KERNEL_MCP_TEST_CHROMIUM or install Debian's chromium")
		}
		chromium = p
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("chromium: " + err.Error())
	}
	node, err := filepath.Abs("node_modules/.bin/node")
	if err == nil {
		_, err = os.Stat(node)
	}
	if err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			missing("no node")
		}
	}
	for _, m := range []string{"playwright-core", "@modelcontextprotocol/ext-apps", "@modelcontextprotocol/client", "esbuild"} {
		if _, err := os.Stat(filepath.Join("node_modules", m, "package.json")); err != nil {
			missing("node module " + m + " is not installed: run `npm ci` in integration/")
		}
	}
	return chromium, node
}

// browserArtifacts is where the browser tests keep their screenshots:
// $KERNEL_MCP_TEST_ARTIFACTS/browser when set, else a temp dir of the test.
func browserArtifacts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if a := os.Getenv("KERNEL_MCP_TEST_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "browser")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("browser screenshots in %s", dir)
	return dir
}

// bundleHost bundles the test host (integration/browser/host.js, with the
// TypeScript client and ext-apps' AppBridge) with esbuild into a temp dir,
// beside host.html, and returns the dir.
func bundleHost(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bundle := exec.Command(filepath.Join("node_modules", ".bin", "esbuild"), "browser/host.js",
		"--bundle", "--platform=browser", "--format=iife", "--log-level=warning", "--outfile="+filepath.Join(dir, "host.js"))
	if out, err := bundle.CombinedOutput(); err != nil {
		t.Fatalf("bundling the test host: %v\n%s", err, out)
	}
	html, err := os.ReadFile("browser/host.html")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "host.html"), html, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostOrigin serves the bundled test host in dir under /host/ and proxies
// /mcp to the server's streamable HTTP endpoint mcpURL, so the page and the
// endpoint share one origin. It returns the page's URL.
func hostOrigin(t *testing.T, dir, mcpURL string) string {
	t.Helper()
	target, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = target.Scheme, target.Host
			r.Out.URL.Path = target.Path
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1, // event streams flow as they come
	}
	mux := http.NewServeMux()
	mux.Handle("/host/", http.StripPrefix("/host/", http.FileServer(http.Dir(dir))))
	// Full duplex: the server may start its answer (an event stream)
	// before the proxy has passed on the whole request body, and an
	// HTTP/1 handler otherwise cuts the body off when it starts writing
	// (go.dev/issue/40747: the answer then ends mid-stream).
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/host/host.html"
}

// runBrowser runs `node browser/run.mjs suite config` and answers its sync
// points with onSync; it returns the cases of the driver's verdict.
func runBrowser(t *testing.T, node, suite string, cfg map[string]any, onSync func(name string, msg map[string]any) map[string]any) []map[string]any {
	t.Helper()
	// KERNEL_MCP_TEST_BROWSER_CASES=a,b runs only those cases.
	cfg["only"] = os.Getenv("KERNEL_MCP_TEST_BROWSER_CASES")
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "browser/run.mjs", suite, cfgPath)
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var verdict struct {
		Suite string           `json:"suite"`
		MS    int64            `json:"ms"`
		Cases []map[string]any `json:"cases"`
	}
	got := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Logf("driver: %s", sc.Text())
			continue
		}
		if name, ok := msg["sync"].(string); ok {
			reply := onSync(name, msg)
			if reply == nil {
				reply = map[string]any{}
			}
			rb, _ := json.Marshal(reply)
			if _, err := stdin.Write(append(rb, '\n')); err != nil {
				t.Errorf("answering the driver's %s: %v", name, err)
			}
			continue
		}
		if v, ok := msg["verdict"]; ok {
			vb, _ := json.Marshal(v)
			if err := json.Unmarshal(vb, &verdict); err != nil {
				t.Fatal(err)
			}
			got = true
		}
	}
	stdin.Close()
	werr := cmd.Wait()
	t.Logf("driver log:\n%s", stderr.String())
	if !got {
		t.Fatalf("the browser driver gave no verdict: %v", werr)
	}
	t.Logf("browser suite %s: %d ms", suite, verdict.MS)
	for _, c := range verdict.Cases {
		name, _ := c["name"].(string)
		if ok, _ := c["ok"].(bool); !ok {
			t.Errorf("case %s: %v\nscreenshot: %v\nconsole: %v\ncalls: %v", name, c["error"], c["screenshot"], c["console"], c["calls"])
		}
	}
	return verdict.Cases
}

// updateScreenshot copies an artifact into docs/img when
// KERNEL_MCP_UPDATE_SCREENSHOTS=1.
func updateScreenshot(t *testing.T, artifacts, name string) {
	t.Helper()
	if os.Getenv("KERNEL_MCP_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	b, err := os.ReadFile(filepath.Join(artifacts, name))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "img", name), b, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("docs/img/%s updated (%d bytes)", name, len(b))
}

// haveIRkernel reports whether the R kernel's kernelspec is installed.
func haveIRkernel(t *testing.T) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kernelspec.Get(ctx, "ir", kernelspec.FindOptions{})
	return err == nil
}

// chartCode makes the charts both views must draw interactively: a Plotly
// scatter of three traces (12 points) and an Altair layered chart, shown
// the way a notebook user does (fig.show(), display(chart)), which gives
// Plotly's MIME type and Altair's default HTML.
const chartCode = `import plotly.graph_objects as go
fig = go.Figure([go.Scatter(x=[1, 2, 3, 4], y=[i + 1, i + 3, i + 2, i + 4], mode="markers", name=f"trace {i}") for i in range(3)])
fig.update_layout(width=600, height=360, title="three traces")
fig.show()
import altair as alt, pandas as pd
from IPython.display import display
df = pd.DataFrame({"x": range(6), "y": [3, 1, 4, 1, 5, 9]})
base = alt.Chart(df).encode(x="x:Q", y="y:Q", tooltip=["x", "y"])
display(alt.layer(base.mark_line(), base.mark_point(size=80)).properties(width=400, height=200, title="layered"))
print("charts done")`

// chartSanitizeCode makes hostile charts: Plotly labels with an <img
// onerror> and a javascript: link, a Vega-Lite chart whose points link to
// javascript: URLs, and one whose data is at a URL off this machine.
const chartSanitizeCode = `import plotly.graph_objects as go
from IPython.display import display
bad = go.Figure(go.Scatter(x=[1, 2], y=[1, 2], mode="markers", name='<img src=x onerror="window.__pwned=1">evil'))
bad.update_layout(width=500, height=300, title='<img src=x onerror="window.__pwned=1">title',
    annotations=[dict(x=1.5, y=1.5, text='<a href="javascript:window.__pwned=1">click me</a>', showarrow=False)])
bad.show()
rows = [{"a": 1, "b": 2, "u": "javascript:window.__pwned=1"}, {"a": 2, "b": 3, "u": "javascript:void(window.__pwned=1)"}]
display({"application/vnd.vegalite.v6.json": {"$schema": "https://vega.github.io/schema/vega-lite/v6.json",
    "data": {"values": rows}, "mark": {"type": "point", "size": 400, "filled": True},
    "encoding": {"x": {"field": "a", "type": "quantitative"}, "y": {"field": "b", "type": "quantitative"}, "href": {"field": "u"}},
    "width": 300, "height": 200}}, raw=True)
display({"application/vnd.vegalite.v6+json": {"$schema": "https://vega.github.io/schema/vega-lite/v6.json",
    "data": {"url": "http://192.0.2.1/leak.json"}, "mark": "point", "encoding": {"x": {"field": "a", "type": "quantitative"}}}}, raw=True)
print("chart sanitize done")`

// chartGLCode shows a WebGL trace: what Plotly Express draws past 1,000
// points (render_mode "auto"). The default plotly.js build compiles its
// shaders' code with Function, which neither view's CSP allows.
const chartGLCode = `import plotly.express as px
fig = px.scatter(x=list(range(2000)), y=[i % 7 for i in range(2000)], title='webgl')
print(fig.data[0].type)
fig.show()`

// widgetCode shows live widgets: a slider, and an interact whose output
// follows its slider.
const widgetCode = `import ipywidgets as w
s = w.IntSlider(value=3, min=0, max=10, description='n')
display(s)
clicks = []
bt = w.Button(description='go')
bt.on_click(lambda _: clicks.append(1))
display(bt)
def f(x):
    print('x is', x)
w.interact(f, x=w.IntSlider(value=5, min=0, max=10, description='x'));`

// widgetSanitizeCode makes hostile widgets: HTML with a script and an
// <img onerror>, descriptions that allow HTML, toggle button labels, and a
// widget of a module the view does not have (which a CDN loader would
// fetch from unpkg).
const widgetSanitizeCode = `import ipywidgets as w
from traitlets import Unicode
evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
class Evil(w.DOMWidget):
    _model_name = Unicode('EvilModel').tag(sync=True)
    _model_module = Unicode('evil-widgets').tag(sync=True)
    _model_module_version = Unicode('1.0.0').tag(sync=True)
    _view_name = Unicode('EvilView').tag(sync=True)
    _view_module = Unicode('evil-widgets<img src=x onerror="window.__pwned=5">').tag(sync=True)
    _view_module_version = Unicode('1.0.0').tag(sync=True)
display(w.HTML(evil + '<b>html widget</b>'), w.HTMLMath(evil + 'math widget'),
    w.IntSlider(description=evil + 'desc', description_allow_html=True),
    w.Checkbox(description=evil + 'check', description_allow_html=True),
    w.ToggleButtons(options=[evil + 'tb', 'b']), w.Label(evil), Evil())
print('widgets bad done')`

// logChartTimes logs the charts' time from output to drawn marks.
func logChartTimes(t *testing.T, view string, cases []map[string]any) {
	t.Helper()
	for _, c := range cases {
		if c["name"] != "charts" && c["name"] != "chart-sanitize" {
			continue
		}
		b, _ := json.Marshal(map[string]any{"timing": c["timing"], "requests": c["requests"], "cellViewBytes": c["cellViewBytes"], "hover": c["hover"], "vega": c["vega"], "libraries": c["libraries"]})
		t.Logf("%s %s: %s", view, c["name"], b)
	}
}

// The cell view in a real browser and a real MCP Apps host: AppBridge and
// the official TypeScript client on the origin of the server's streamable
// HTTP endpoint. The driver's cases assert on the view's DOM.
func TestBrowserApp(t *testing.T) {
	t.Parallel()
	chromium, node := browserTools(t)
	artifacts := browserArtifacts(t)
	host := bundleHost(t)
	cfg := map[string]any{
		"chromium":  chromium,
		"artifacts": artifacts,
		"hostURL":   hostOrigin(t, host, startHTTPServer(t, "--max-wait", "2")),
		"chartCode": chartCode, "chartSanitizeCode": chartSanitizeCode, "chartGLCode": chartGLCode,
		"widgetCode": widgetCode, "widgetSanitizeCode": widgetSanitizeCode,
	}
	if haveIRkernel(t) {
		cfg["rHostURL"] = hostOrigin(t, host, startHTTPServer(t, "--kernel", "ir"))
	} else if os.Getenv("CI") == "true" {
		t.Error("no IRkernel kernelspec \"ir\": CI installs r-cran-irkernel (see .ci/run)")
	} else {
		t.Log("no IRkernel: the R case is left out")
	}
	cases := runBrowser(t, node, "app", cfg, func(name string, _ map[string]any) map[string]any {
		return map[string]any{"error": "no sync point " + name + " in the app suite"}
	})
	logChartTimes(t, "cell view", cases)
	for _, c := range cases {
		if c["name"] == "latency" && c["latencyMedianMs"] != nil {
			t.Logf("kernel output to the view's DOM: median %v ms over %v outputs (min %v, max %v)",
				c["latencyMedianMs"], c["latencySamples"], c["latencyMinMs"], c["latencyMaxMs"])
		}
	}
	if !t.Failed() {
		updateScreenshot(t, artifacts, "cell-view.png")
		updateScreenshot(t, artifacts, "cell-view-charts.png")
	}
}

// uiURL waits for the server's "web view at URL" line on its stderr.
func uiURL(t *testing.T, s *server) string {
	t.Helper()
	re := regexp.MustCompile(`web view at (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no web view URL on the server's stderr:\n%s", s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond) // polling a log: no event to wait on
	}
}

// userUIURL is the web view URL list_sessions gives a user.
func userUIURL(t *testing.T, u *userClient) string {
	t.Helper()
	res := u.call("list_sessions", nil)
	var out struct {
		UIURL string `json:"ui_url"`
	}
	if b, err := json.Marshal(res.StructuredContent); err == nil {
		json.Unmarshal(b, &out)
	}
	if out.UIURL == "" {
		if m := regexp.MustCompile(`http://\S+/ui/\?token=[0-9a-f]+`).FindString(text(res)); m != "" {
			out.UIURL = m
		}
	}
	if out.UIURL == "" {
		t.Fatalf("list_sessions gives no web view URL: %s", text(res))
	}
	return out.UIURL
}

// The web view in the same browser: a client's cell streams into the page;
// a cell the person types runs and is the person's in get_history;
// --ui-readonly refuses it; a wrong token is refused; a second user's page
// shows none of the first user's sessions.
func TestBrowserWebView(t *testing.T) {
	t.Parallel()
	chromium, node := browserTools(t)
	artifacts := browserArtifacts(t)

	// The web view beside a stdio client.
	s := startServer(t, "--ui", "127.0.0.1:0")
	if _, out := s.run("web", "print('first cell')"); out.Status != "ok" {
		t.Fatalf("first run: %+v", out)
	}
	webURL := uiURL(t, s)
	for sid, code := range map[string]string{"charts": chartCode, "charts-bad": chartSanitizeCode, "charts-gl": chartGLCode, "widgets": widgetCode, "widgets-bad": widgetSanitizeCode} {
		if _, out := s.run(sid, code); out.Status != "ok" {
			t.Fatalf("chart run in %s: %+v", sid, out)
		}
	}
	ro := startServer(t, "--ui", "127.0.0.1:0", "--ui-readonly")
	if _, out := ro.run("ro", "print('read only')"); out.Status != "ok" {
		t.Fatalf("run in the read-only server: %+v", out)
	}
	if _, out := ro.run("ro-widgets", "import ipywidgets as w\ns = w.IntSlider(value=3, min=0, max=10, description='n')\ns"); out.Status != "ok" {
		t.Fatalf("widget run in the read-only server: %+v", out)
	}
	roURL := uiURL(t, ro)

	// Two users of one server over HTTP.
	const tok1, tok2 = "user-one-token-0123456789abcdef", "user-two-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("one "+tok1+"\ntwo "+tok2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpURL := startHTTPServer(t, "--tokens-file", tokens, "--pool-size", "0", "--ui", "127.0.0.1:0")
	u1, u2 := connectUser(t, httpURL, tok1), connectUser(t, httpURL, tok2)
	if res := u1.call("run_code", map[string]any{"session_id": "u1-private", "code": "secret_of_user_1 = 7\nprint(secret_of_user_1)"}); res.IsError {
		t.Fatalf("user 1: %s", text(res))
	}
	if res := u2.call("run_code", map[string]any{"session_id": "u2-own", "code": "print('user two')"}); res.IsError {
		t.Fatalf("user 2: %s", text(res))
	}

	cfg := map[string]any{
		"chromium": chromium, "artifacts": artifacts,
		"webURL": webURL, "readonlyURL": roURL,
		"user2URL": userUIURL(t, u2), "user1Session": "u1-private", "user2Session": "u2-own",
	}
	streamed := make(chan error, 1)
	runs, drained := 0, false
	cases := runBrowser(t, node, "web", cfg, func(name string, msg map[string]any) map[string]any {
		switch name {
		case "client-run":
			runs++
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
					"session_id": "web",
					"code":       "import time\nfor i in range(6):\n    print(f'stream {i} lat {i} {time.time()*1000:.1f}', flush=True)\n    time.sleep(0.5)",
				}})
				if err == nil && res.IsError {
					err = fmt.Errorf("run_code: %s", text(res))
				}
				streamed <- err
			}()
		case "client-run-done":
			drained = true
			if err := <-streamed; err != nil {
				return map[string]any{"error": err.Error()}
			}
		case "client-code", "client-value":
			// The assistant runs code in a session and reads what it
			// printed, or reads a value with get_value.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sid, _ := msg["session"].(string)
			tool, args := "run_code", map[string]any{"session_id": sid, "code": msg["code"]}
			if name == "client-value" {
				tool, args = "get_value", map[string]any{"session_id": sid, "expression": msg["expression"]}
			}
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				return map[string]any{"error": err.Error()}
			}
			return map[string]any{"text": text(res), "isError": res.IsError}
		case "person-ran":
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_history", Arguments: map[string]any{"session_id": "web"}})
			if err != nil {
				return map[string]any{"error": err.Error()}
			}
			h := text(res)
			code, _ := msg["code"].(string)
			for _, line := range strings.Split(h, "\n") {
				if strings.Contains(line, "(by the person) "+code) {
					return map[string]any{"ok": true, "detail": line}
				}
			}
			return map[string]any{"ok": false, "detail": "no block marked as the person's with the code in get_history:\n" + h}
		default:
			return map[string]any{"error": "no sync point " + name}
		}
		return nil
	})
	logChartTimes(t, "web view", cases)
	for _, c := range cases {
		if c["name"] == "stream" && c["latencyMedianMs"] != nil {
			t.Logf("kernel output to the web view's DOM: median %v ms over %v outputs (min %v, max %v)",
				c["latencyMedianMs"], c["latencySamples"], c["latencyMinMs"], c["latencyMaxMs"])
		}
	}
	if runs == 1 && !drained {
		<-streamed // the client's run ends before its server does
	}
	if only := os.Getenv("KERNEL_MCP_TEST_BROWSER_CASES"); runs != 1 && (only == "" || slices.Contains(strings.Split(only, ","), "stream")) {
		t.Errorf("the client ran %d times, want 1", runs)
	}
	if !t.Failed() {
		updateScreenshot(t, artifacts, "web-view.png")
		updateScreenshot(t, artifacts, "web-view-charts.png")
	}
}
