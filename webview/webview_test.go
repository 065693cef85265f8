package webview_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/chartlib"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/webview"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { os.Exit(ipytest.Main(m, "webview")) }

const token = "0123456789abcdef0123456789abcdef"

// fixture is an MCP server with a client connected in memory, and the web
// view over its engine behind a real HTTP server.
type fixture struct {
	srv *mcpserver.Server
	cs  *mcp.ClientSession
	web *httptest.Server
	ctx context.Context
}

func newFixture(t *testing.T, readOnly bool) *fixture {
	t.Helper()
	ipytest.Require(t)
	srv, err := mcpserver.New(mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, srv.OrderedTransport(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "webview-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(webview.Prefix, webview.New(webview.Options{Engine: srv.Engine(), Token: token, ReadOnly: readOnly, HTML: "<!doctype html><title>page</title>"}))
	web := httptest.NewServer(mux)
	t.Cleanup(func() {
		web.CloseClientConnections()
		web.Close()
		cs.Close()
		ss.Close()
		srv.Close()
		cancel()
	})
	return &fixture{srv: srv, cs: cs, web: web, ctx: ctx}
}

// call calls an MCP tool and returns its text, failing on an error result.
func (f *fixture) call(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res, err := f.cs.CallTool(f.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: %s", name, text.String())
	}
	return text.String()
}

// do sends a request to the web view with the token as a Bearer header
// (auth "") or as given.
func (f *fixture) do(t *testing.T, method, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, f.web.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// getJSON GETs path with the token and decodes the 200 answer into v.
func (f *fixture) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp := f.do(t, "GET", path, "", nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

func status(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAuthAndOrigin(t *testing.T) {
	f := newFixture(t, false)
	for _, c := range []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"no token", "/ui/", map[string]string{"Authorization": ""}, 401},
		{"wrong bearer", "/ui/api/sessions", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 32)}, 401},
		{"wrong query token", "/ui/?token=nope", map[string]string{"Authorization": ""}, 401},
		{"query token", "/ui/?token=" + token, map[string]string{"Authorization": ""}, 200},
		{"bearer", "/ui/api/sessions", nil, 200},
		{"cross-origin", "/ui/api/sessions", map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site fetch", "/ui/api/sessions", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		// The person clicks the view's link in a web chat: the page opens,
		// the API and the event stream still refuse another site.
		{"link from another site", "/ui/?token=" + token, map[string]string{"Authorization": "", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 200},
		{"navigation to the API", "/ui/api/sessions?token=" + token, map[string]string{"Authorization": "", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 403},
		{"cross-site events", "/ui/api/events?token=" + token, map[string]string{"Authorization": "", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, 403},
		{"same origin", "/ui/api/sessions", map[string]string{"Origin": f.web.URL}, 200},
	} {
		code, body := status(t, f.do(t, "GET", c.path, "", c.header))
		if code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	code, body := status(t, f.do(t, "POST", "/ui/api/sessions/default/run", `{"code":"1"}`, map[string]string{"Origin": "http://evil.example"}))
	if code != 403 {
		t.Errorf("cross-origin run: %d %s", code, body)
	}
	resp := f.do(t, "GET", "/ui/?token="+token, "", map[string]string{"Authorization": ""})
	code, body = status(t, resp)
	if code != 200 || body != "<!doctype html><title>page</title>" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("page: %d %q %q", code, resp.Header.Get("Content-Type"), body)
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("the page may leak its token through Referer: %q", resp.Header.Get("Referrer-Policy"))
	}
}

type cell struct {
	SessionID      string            `json:"session_id"`
	RunID          string            `json:"run_id"`
	Index          int               `json:"index"`
	Code           string            `json:"code"`
	By             string            `json:"by"`
	Status         string            `json:"status"`
	ExecutionCount int               `json:"execution_count"`
	Outputs        []json.RawMessage `json:"outputs"`
}

// The page lists sessions, reads a session's cells, follows a run's output
// on the event stream, runs the person's cell (which the assistant then
// finds in get_history, marked), and downloads the session.
func TestSessionsCellsEventsRun(t *testing.T) {
	f := newFixture(t, false)
	f.call(t, "run_code", map[string]any{"session_id": "s1", "code": "x = 20\nprint('hello')"})

	var list struct {
		Sessions []struct {
			SessionID    string          `json:"session_id"`
			State        string          `json:"state"`
			Language     string          `json:"language"`
			HistoryCount int             `json:"history_count"`
			Run          json.RawMessage `json:"run"`
		} `json:"sessions"`
	}
	f.getJSON(t, "/ui/api/sessions", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != "s1" || list.Sessions[0].HistoryCount != 1 ||
		list.Sessions[0].Language != "python" || string(list.Sessions[0].Run) != "null" {
		t.Fatalf("sessions: %+v", list)
	}

	var cells struct{ Cells []cell }
	f.getJSON(t, "/ui/api/sessions/s1/cells", &cells)
	if len(cells.Cells) != 1 {
		t.Fatalf("cells: %+v", cells)
	}
	c := cells.Cells[0]
	if c.Code != "x = 20\nprint('hello')" || c.By != "assistant" || c.Status != "ok" || c.Index != 0 || c.ExecutionCount == 0 ||
		len(c.Outputs) != 1 || !strings.Contains(string(c.Outputs[0]), `"text":"hello\n"`) {
		t.Errorf("cell: %+v outputs %s", c, c.Outputs)
	}
	if code, _ := status(t, f.do(t, "GET", "/ui/api/sessions/nope/cells", "", nil)); code != 404 {
		t.Errorf("cells of a missing session: %d", code)
	}

	// The event stream: subscribed once its first comment arrives; a run
	// started then streams its output.
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.web.URL+"/ui/api/events?token="+token, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewReader(resp.Body)
	if l, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(l, ":") {
		t.Fatalf("first line %q, %v", l, err)
	}

	code, body := status(t, f.do(t, "POST", "/ui/api/sessions/s1/run", `{"code":"for i in range(3):\n    print('tick', i, flush=True)\nx * 2"}`, nil))
	if code != 202 {
		t.Fatalf("run: %d %s", code, body)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(body), &started); err != nil || started.RunID == "" {
		t.Fatalf("run answer %s: %v", body, err)
	}
	var ticks strings.Builder
	finished := false
	for !finished {
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the run finished: %v (ticks %q)", err, ticks.String())
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(l), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Kind    string `json:"kind"`
			Session string `json:"session_id"`
			Run     string `json:"run_id"`
			Status  string `json:"status"`
			Output  *struct {
				OutputType string `json:"output_type"`
				Text       string `json:"text"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if ev.Run != started.RunID {
			continue
		}
		switch ev.Kind {
		case "run_output":
			if ev.Output != nil && ev.Output.OutputType == "stream" {
				ticks.WriteString(ev.Output.Text)
			}
		case "run_finished":
			finished = true
			if ev.Status != "ok" {
				t.Errorf("run finished %q", ev.Status)
			}
		}
	}
	if ticks.String() != "tick 0\ntick 1\ntick 2\n" {
		t.Errorf("streamed %q", ticks.String())
	}
	cancel()

	f.getJSON(t, "/ui/api/sessions/s1/cells", &cells)
	if len(cells.Cells) != 2 || cells.Cells[1].By != "person" || cells.Cells[1].Index != 1 {
		t.Fatalf("cells after the person's run: %+v", cells.Cells)
	}
	hist := f.call(t, "get_history", map[string]any{"session_id": "s1"})
	if !strings.Contains(hist, "[2] (by the person) for i in range(3):") || strings.Contains(hist, "[1] (by") || !strings.Contains(hist, "40") {
		t.Errorf("get_history does not mark the person's block:\n%s", hist)
	}

	// Downloads.
	resp = f.do(t, "GET", "/ui/api/sessions/s1/notebook.ipynb", "", nil)
	code, body = status(t, resp)
	var nb struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			Metadata struct {
				KernelMCP map[string]any `json:"kernel_mcp"`
			} `json:"metadata"`
		} `json:"cells"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &nb) != nil || nb.NBFormat != 4 || len(nb.Cells) != 2 || nb.Cells[1].Metadata.KernelMCP["by"] != "person" {
		t.Errorf("notebook: %d %s", code, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename=s1.ipynb` {
		t.Errorf("notebook disposition %q", cd)
	}
	code, body = status(t, f.do(t, "GET", "/ui/api/sessions/s1/script.py", "", nil))
	if code != 200 || !strings.HasPrefix(body, "# kernel-mcp session s1") || !strings.Contains(body, "# by the person\nfor i in range(3):") {
		t.Errorf("script: %d %s", code, body)
	}

	// Bad input leaves the session as it was.
	for _, b := range []string{`{"code":"   "}`, `not json`, `{"code":"1","extra":1}`} {
		if code, body := status(t, f.do(t, "POST", "/ui/api/sessions/s1/run", b, nil)); code != 400 {
			t.Errorf("run %s: %d %s", b, code, body)
		}
	}
	if code, _ := status(t, f.do(t, "POST", "/ui/api/sessions/nope/run", `{"code":"1"}`, nil)); code != 404 {
		t.Errorf("run in a missing session: %d", code)
	}
}

// A run waiting in input() shows as a live cell, is answered from the page,
// and an interrupt from the page stops a long run.
func TestInputAndInterrupt(t *testing.T) {
	f := newFixture(t, false)
	f.call(t, "run_code", map[string]any{"session_id": "q", "code": "1"})
	sub := f.srv.Engine().Events().Subscribe(0, func(e *engine.Event) bool { return e.Session == "q" })
	defer sub.Close()
	code, body := status(t, f.do(t, "POST", "/ui/api/sessions/q/run", `{"code":"name = input('name? ')\nprint('hi', name)"}`, nil))
	if code != 202 {
		t.Fatalf("run: %d %s", code, body)
	}
	waitFor(t, f.ctx, sub, engine.InputRequested)
	var cells struct{ Cells []cell }
	f.getJSON(t, "/ui/api/sessions/q/cells", &cells)
	if n := len(cells.Cells); n != 2 || cells.Cells[1].Status != "input_requested" || cells.Cells[1].Index != -1 || cells.Cells[1].By != "person" || cells.Cells[1].RunID == "" {
		t.Fatalf("live cell: %+v", cells.Cells)
	}
	if code, body := status(t, f.do(t, "POST", "/ui/api/sessions/q/input", `{"text":"ada"}`, nil)); code != 200 || !strings.Contains(body, "message") {
		t.Fatalf("input: %d %s", code, body)
	}
	waitFor(t, f.ctx, sub, engine.RunFinished)
	f.getJSON(t, "/ui/api/sessions/q/cells", &cells)
	if len(cells.Cells) != 2 || !strings.Contains(string(cells.Cells[1].Outputs[0]), "hi ada") {
		t.Fatalf("after the answer: %+v", cells.Cells)
	}
	if code, body := status(t, f.do(t, "POST", "/ui/api/sessions/q/input", `{"text":"again"}`, nil)); code != 409 {
		t.Errorf("input with no question: %d %s", code, body)
	}

	code, body = status(t, f.do(t, "POST", "/ui/api/sessions/q/run", `{"code":"import time\nprint('go', flush=True)\ntime.sleep(120)"}`, nil))
	if code != 202 {
		t.Fatalf("run: %d %s", code, body)
	}
	waitFor(t, f.ctx, sub, engine.RunOutput)
	// A page opened now shows what the run printed so far.
	f.getJSON(t, "/ui/api/sessions/q/cells", &cells)
	if live := cells.Cells[len(cells.Cells)-1]; live.Index != -1 || !strings.Contains(live.Code, "print('go'") || len(live.Outputs) == 0 || !strings.Contains(string(live.Outputs[0]), "go") {
		t.Fatalf("the live cell mid-run: %+v", live)
	}
	if code, body := status(t, f.do(t, "POST", "/ui/api/sessions/q/interrupt", ``, nil)); code != 200 || !strings.Contains(body, "Interrupt sent") {
		t.Fatalf("interrupt: %d %s", code, body)
	}
	waitFor(t, f.ctx, sub, engine.RunFinished)
	f.getJSON(t, "/ui/api/sessions/q/cells", &cells)
	if last := cells.Cells[len(cells.Cells)-1]; len(cells.Cells) != 3 || (len(last.Outputs) != 2 || !strings.Contains(string(last.Outputs[1]), `"ename":"KeyboardInterrupt"`)) {
		t.Errorf("after the interrupt: %+v", cells.Cells)
	}
}

func waitFor(t *testing.T, ctx context.Context, sub *engine.Subscription, kind engine.Kind) engine.Event {
	t.Helper()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", kind, err)
		}
		if e.Kind == kind {
			return e
		}
	}
}

// Read-only: the page may watch, not run.
func TestReadOnly(t *testing.T) {
	f := newFixture(t, true)
	f.call(t, "run_code", map[string]any{"session_id": "ro", "code": "1"})
	code, body := status(t, f.do(t, "POST", "/ui/api/sessions/ro/run", `{"code":"2"}`, nil))
	if code != 403 || !strings.Contains(body, "read-only") {
		t.Errorf("run under read-only: %d %s", code, body)
	}
	var cells struct{ Cells []cell }
	f.getJSON(t, "/ui/api/sessions/ro/cells", &cells)
	if len(cells.Cells) != 1 {
		t.Errorf("cells: %+v", cells.Cells)
	}
}

// The chart libraries: gzipped to a client that accepts it, plain to one
// that does not, behind the token and the origin check like the page.
func TestChartLibraries(t *testing.T) {
	f := newFixture(t, false)
	// The chart libraries, and the widgets bundle the web view alone loads.
	for _, name := range append(slices.Clone(chartlib.Names), chartlib.Widgets) {
		want, _ := chartlib.Text(name)
		path := "/ui/charts/" + name + ".js"
		resp := f.do(t, "GET", path, "", map[string]string{"Accept-Encoding": "gzip, deflate, br"})
		code, body := status(t, resp)
		if code != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Fatalf("GET %s accepting gzip: %d %v", path, code, resp.Header)
		}
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || string(plain) != want {
			t.Fatalf("GET %s: the gzipped body is not the library (%d bytes, %v)", path, len(plain), err)
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("GET %s: Vary %q", path, resp.Header.Get("Vary"))
		}
		for _, ae := range []string{"identity", "gzip;q=0"} {
			resp = f.do(t, "GET", path, "", map[string]string{"Accept-Encoding": ae})
			code, body = status(t, resp)
			if code != 200 || resp.Header.Get("Content-Encoding") != "" || body != want {
				t.Errorf("GET %s with Accept-Encoding %s: %d, encoding %q, %d bytes", path, ae, code, resp.Header.Get("Content-Encoding"), len(body))
			}
		}
		if code, _ := status(t, f.do(t, "GET", path, "", map[string]string{"Authorization": ""})); code != 401 {
			t.Errorf("GET %s without the token: %d", path, code)
		}
		if code, _ := status(t, f.do(t, "GET", path, "", map[string]string{"Origin": "http://evil.example"})); code != 403 {
			t.Errorf("GET %s from another origin: %d", path, code)
		}
	}
	for _, bad := range []string{"/ui/charts/render.js", "/ui/charts/plotly", "/ui/charts/plotly.js.gz", "/ui/charts/..%2Fwebview.go"} {
		if code, _ := status(t, f.do(t, "GET", bad, "", nil)); code != 404 {
			t.Errorf("GET %s: %d, want 404", bad, code)
		}
	}
}
