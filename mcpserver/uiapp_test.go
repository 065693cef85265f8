package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/chartlib"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectClient connects an in-memory go-sdk client to srv; with ui set it
// declares the MCP Apps extension.
func connectClient(t *testing.T, ctx context.Context, srv *Server, ui bool) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var opts *mcp.ClientOptions
	if ui {
		caps := &mcp.ClientCapabilities{}
		caps.AddExtension(uiExtension, map[string]any{"mimeTypes": []string{appMIMEType}})
		opts = &mcp.ClientOptions{Capabilities: caps}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "uiapp-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// withoutTimings is a result as JSON, without the fields that measure time.
func withoutTimings(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var v map[string]any
	data, _ := json.Marshal(res)
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if sc, ok := v["structuredContent"].(map[string]any); ok {
		delete(sc, "elapsed_ms")
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func viewRun(t *testing.T, ctx context.Context, cs *mcp.ClientSession, args map[string]any) ViewRunOutput {
	t.Helper()
	res := call(t, ctx, cs, viewRunTool, args)
	if res.IsError {
		t.Fatalf("view_run %v: %s", args, resultText(res))
	}
	var out ViewRunOutput
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppClientsSeeTheSame: a client that declares the MCP Apps extension
// and one that does not see the same tools but view_run and get the same
// results; view_run follows a handed-off run for the first only, without
// taking its output from wait_run.
func TestAppClientsSeeTheSame(t *testing.T) {
	ipytest.Require(t)
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plain, app := connectClient(t, ctx, srv, false), connectClient(t, ctx, srv, true)

	// tools/list: the same, and the app-only tools for the app's client only.
	pl, err := plain.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	al, err := app.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rest []*mcp.Tool
	for _, tool := range al.Tools {
		if slices.Contains(appTools, tool.Name) {
			if ui, _ := tool.Meta["ui"].(map[string]any); fmt.Sprint(ui["visibility"]) != "[app]" {
				t.Errorf("%s's _meta %v", tool.Name, tool.Meta)
			}
			continue
		}
		rest = append(rest, tool)
	}
	pj, _ := json.Marshal(pl.Tools)
	aj, _ := json.Marshal(rest)
	if string(pj) != string(aj) || len(rest) != len(al.Tools)-len(appTools) {
		t.Fatalf("tools/list differs beyond the app-only tools:\nplain %s\napp   %s", pj, aj)
	}

	// The same code in a fresh session gives both clients the same result.
	code := "import sys\nfrom IPython.display import HTML, display\nprint('out')\nprint('err', file=sys.stderr)\ndisplay(HTML('<table><td>cell</td></table>'))\n6*7"
	var results []string
	for _, cs := range []*mcp.ClientSession{plain, app} {
		res := call(t, ctx, cs, "run_code", map[string]any{"session_id": "same", "code": code})
		if res.IsError {
			t.Fatalf("run_code: %s", resultText(res))
		}
		results = append(results, withoutTimings(t, res))
		if res := call(t, ctx, cs, "delete_session", map[string]any{"session_id": "same"}); res.IsError {
			t.Fatalf("delete_session: %s", resultText(res))
		}
	}
	if results[0] != results[1] {
		t.Fatalf("run_code's results differ:\nplain %s\napp   %s", results[0], results[1])
	}

	// A handed-off run (background: the hand-off --max-wait makes, at
	// once): view_run shows its first output while it goes on.
	gate := filepath.Join(t.TempDir(), "go")
	code = fmt.Sprintf("import os, time\nprint('first', flush=True)\nwhile not os.path.exists(%q):\n    time.sleep(0.05)\nprint('last')", gate)
	res := call(t, ctx, app, "run_code", map[string]any{"session_id": "live", "code": code, "background": true})
	if sc, _ := res.StructuredContent.(map[string]any); sc["status"] != "running" {
		t.Fatalf("run_code was not handed off: %s", resultText(res))
	}
	handedOff := resultText(res)
	var live ViewRunOutput
	for {
		live = viewRun(t, ctx, app, map[string]any{"session_id": "live"})
		if len(live.Cells) != 1 || live.Done {
			t.Fatalf("view_run while the run waits: %+v", live)
		}
		if c := live.Cells[0]; len(c.Outputs) > 0 {
			if c.Status != "running" || c.Code != code || c.Index != -1 || c.RunID != "r1" || c.Outputs[0].Text != "first\n" {
				t.Fatalf("live cell %+v", c)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("view_run never showed the first output")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What view_run read is still wait_run's to deliver, once.
	wr := resultText(call(t, ctx, app, "wait_run", map[string]any{"session_id": "live", "wait": 0}))
	if n := strings.Count(handedOff+wr, "first"); n != 1 {
		t.Fatalf("the first line reached the model %d times:\nrun_code: %s\nwait_run: %s", n, handedOff, wr)
	}
	if again := viewRun(t, ctx, app, map[string]any{"session_id": "live", "cursor": live.Cursor}); len(again.Cells[0].Outputs) != 0 || again.Cursor != live.Cursor {
		t.Fatalf("view_run from its cursor repeated output: %+v", again)
	}
	// A view_run that may wait answers with the news when it comes: the
	// line printed after the gate opens, or the run's end.
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	waited := make(chan answer, 1)
	go func() {
		res, err := app.CallTool(ctx, &mcp.CallToolParams{Name: viewRunTool, Arguments: map[string]any{"session_id": "live", "cursor": live.Cursor, "status": "running", "wait": 10}})
		waited <- answer{res, err}
	}()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-waited
	if a.err != nil || a.res.IsError {
		t.Fatalf("a waiting view_run: %v %+v", a.err, a.res)
	}
	var w ViewRunOutput
	data, _ := json.Marshal(a.res.StructuredContent)
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if !w.Done && (len(w.Cells) != 1 || len(w.Cells[0].Outputs) == 0 || w.Cells[0].Outputs[0].Text != "last\n") {
		t.Fatalf("a waiting view_run answered without the news: %+v", w)
	}
	for {
		if res := call(t, ctx, app, "wait_run", map[string]any{"session_id": "live"}); res.StructuredContent.(map[string]any)["status"] == "ok" {
			break
		}
	}
	done := viewRun(t, ctx, app, map[string]any{"session_id": "live", "cursor": live.Cursor})
	if !done.Done || len(done.Cells) != 1 {
		t.Fatalf("view_run after the run: %+v", done)
	}
	c := done.Cells[0]
	var text string
	for _, o := range c.Outputs {
		text += o.Text
	}
	if c.Index != 0 || c.Status != "ok" || c.Code != code || c.Language != "python" || c.ExecutionCount != 1 || text != "first\nlast\n" || c.SessionID != "live" {
		t.Fatalf("final cell %+v", c)
	}

	// The client without the extension cannot call it.
	if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: viewRunTool, Arguments: map[string]any{"session_id": "live"}}); err == nil || !strings.Contains(err.Error(), `unknown tool "view_run"`) {
		t.Fatalf("view_run from a client without the extension: %v", err)
	}

	// The view is listed for the app's client only, and read by either.
	for _, cs := range []*mcp.ClientSession{plain, app} {
		list, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := slices.ContainsFunc(list.Resources, func(r *mcp.Resource) bool { return r.URI == cellURI && r.MIMEType == appMIMEType })
		if listed != (cs == app) {
			t.Errorf("resources/list (app client: %v) lists the view: %v", cs == app, listed)
		}
		charts := slices.ContainsFunc(list.Resources, func(r *mcp.Resource) bool { return strings.HasPrefix(r.URI, chartURIPrefix) })
		if charts != (cs == app) {
			t.Errorf("resources/list (app client: %v) lists the chart libraries: %v", cs == app, charts)
		}
	}
	// The chart libraries the view loads when a chart appears.
	for _, name := range chartlib.Names {
		uri := chartURIPrefix + name + ".js"
		rr, err := app.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := chartlib.Text(name)
		if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != chartMIMEType || rr.Contents[0].Text != want || len(want) < 100_000 {
			t.Fatalf("resources/read %s: %d contents", uri, len(rr.Contents))
		}
		rr, err = app.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri + ".gz"})
		if err != nil {
			t.Fatal(err)
		}
		gz, _ := chartlib.Gzip(name)
		if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != chartGzipMIMEType || !bytes.Equal(rr.Contents[0].Blob, gz) {
			t.Fatalf("resources/read %s.gz: %d contents", uri, len(rr.Contents))
		}
	}
	rr, err := plain.ReadResource(ctx, &mcp.ReadResourceParams{URI: cellURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != appMIMEType || rr.Contents[0].Text != uiPages(t)["cell.html"] {
		t.Fatalf("resources/read %s: %+v", cellURI, rr.Contents)
	}
}

// The tools that run code link the view in their _meta, and view_run
// refuses a bad cursor and an unknown session clearly.
func TestViewRunErrors(t *testing.T) {
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := connectClient(t, ctx, srv, true)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"cursor": -1}, "invalid cursor -1"},
		{map[string]any{"session_id": "nope"}, `no session "nope"`},
	} {
		res := call(t, ctx, app, viewRunTool, tc.args)
		if !res.IsError || !strings.Contains(resultText(res), tc.want) {
			t.Errorf("view_run %v: %s, want an error saying %q", tc.args, resultText(res), tc.want)
		}
	}
	tools, err := app.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, tool := range tools.Tools {
		if ui, _ := tool.Meta["ui"].(map[string]any); ui["resourceUri"] == cellURI && tool.Meta["ui/resourceUri"] == cellURI {
			linked = append(linked, tool.Name)
		}
	}
	slices.Sort(linked)
	if want := []string{"describe_data", "estimate_ols", "load_data", "plot_data", "rerun_code", "run_code", "run_file", "run_notebook", "wait_run"}; !slices.Equal(linked, want) {
		t.Errorf("tools linking the view: %v, want %v", linked, want)
	}
}

// A cell the person ran is the person's in the cell view too.
func TestEntryCellAuthor(t *testing.T) {
	if c := engine.EntryCell("s", "r1", "python", 0, history.Entry{Code: "1", By: history.ByPerson}); c.By != "person" {
		t.Errorf("the person's entry shows as %q's", c.By)
	}
	if c := engine.EntryCell("s", "r1", "python", 0, history.Entry{Code: "1"}); c.By != "assistant" {
		t.Errorf("the assistant's entry shows as %q's", c.By)
	}
}

// A finished run's view shows its own blocks after a delete_history moved
// them, and none of another run's.
func TestViewRunAfterDeleteHistory(t *testing.T) {
	ipytest.Require(t)
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	app := connectClient(t, ctx, srv, true)
	runID := func(code string) string {
		t.Helper()
		res := call(t, ctx, app, "run_code", map[string]any{"session_id": "del", "code": code})
		var out RunOutput
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &out); err != nil || out.Status != "ok" || out.RunID == "" {
			t.Fatalf("run_code %q: %s (%v)", code, data, err)
		}
		return out.RunID
	}
	first, second, third := runID("a = 1"), runID("b = 2"), runID("c = 3")
	if res := call(t, ctx, app, "delete_history", map[string]any{"session_id": "del", "blocks": []int{1}}); res.IsError {
		t.Fatalf("delete_history: %s", resultText(res))
	}
	for _, c := range []struct{ run, code string }{{second, "b = 2"}, {third, "c = 3"}} {
		v := viewRun(t, ctx, app, map[string]any{"session_id": "del", "run_id": c.run})
		if !v.Done || len(v.Cells) != 1 || v.Cells[0].Code != c.code || v.Cells[0].RunID != c.run {
			t.Errorf("view_run %s after deleting block 1: %+v, want its one cell %q", c.run, v.Cells, c.code)
		}
	}
	// The deleted block's run has no recorded cell left: the view shows
	// its code as the run's own, not the block now in its place.
	v := viewRun(t, ctx, app, map[string]any{"session_id": "del", "run_id": first})
	if len(v.Cells) != 1 || v.Cells[0].Code != "a = 1" || v.Cells[0].Index != -1 {
		t.Errorf("view_run %s, its block deleted: %+v, want its own code as a cell of no block", first, v.Cells)
	}
}
