package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func requireWidgets(t *testing.T) {
	t.Helper()
	ipytest.Require(t)
	if out, err := exec.Command("python3", "-c", "import ipywidgets").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and python3 lacks ipywidgets: %v %s", err, out)
		}
		t.Skipf("python3 lacks ipywidgets: %s", out)
	}
}

// widgetViewOf is the structured content of view_widgets.
func widgetViewOf(t *testing.T, res *mcp.CallToolResult) engine.WidgetView {
	t.Helper()
	if res.IsError {
		t.Fatalf("view_widgets: %s", resultText(res))
	}
	var v engine.WidgetView
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The cell view's widget tools with a real kernel: the models a view
// reaches from its roots, their changes after a version (waiting for
// one), a change and a click sent back, a restart seen as a reset, and
// their errors.
func TestCellViewWidgetTools(t *testing.T) {
	requireWidgets(t)
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	app, plain := connectClient(t, ctx, srv, true), connectClient(t, ctx, srv, false)

	res := call(t, ctx, app, "run_code", map[string]any{"session_id": "w", "code": "import ipywidgets as w\nclicks = []\nb = w.Button(description='go')\nb.on_click(lambda _: clicks.append(1))\ns = w.IntSlider(value=3, description='n')\nw.VBox([s, b])"})
	var ro RunOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &ro); err != nil || ro.Status != "ok" {
		t.Fatalf("run_code: %v %s", err, resultText(res))
	}
	ss, err := srv.eng.Lookup("w")
	if err != nil {
		t.Fatal(err)
	}
	var box, slider, button string
	for _, m := range ss.Widgets().All() {
		switch m.ModelName() {
		case "VBoxModel":
			box = m.ModelID
		case "IntSliderModel":
			slider = m.ModelID
		case "ButtonModel":
			button = m.ModelID
		}
	}
	if box == "" || slider == "" || button == "" {
		t.Fatalf("models: box %q slider %q button %q", box, slider, button)
	}

	// Version 0: everything the box reaches (its children, their layouts
	// and styles), and nothing else of the kernel.
	v := widgetViewOf(t, call(t, ctx, app, viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": []string{box}}))
	names := map[string]string{}
	for _, m := range v.Models {
		names[m.ModelID], _ = m.State["_model_name"].(string)
	}
	if !v.Reset || names[box] != "VBoxModel" || names[slider] != "IntSliderModel" || names[button] != "ButtonModel" {
		t.Fatalf("view_widgets from the box: reset %v, models %v", v.Reset, names)
	}
	if n := len(ss.Widgets().All()); len(v.Models) != n {
		// box, slider, button, their layouts and styles: every model of
		// this kernel is reached from the box.
		t.Errorf("%d models reached of the kernel's %d", len(v.Models), n)
	}
	// Nothing changed since: nothing, at once with no wait.
	if again := widgetViewOf(t, call(t, ctx, app, viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": []string{box}, "version": v.Version})); again.Reset || len(again.Models) != 0 || again.Version != v.Version {
		t.Errorf("unchanged: %+v", again)
	}

	// A change sent: a call waiting from the version sees the slider's
	// echo, and the kernel's variable has the value.
	got := make(chan engine.WidgetView, 1)
	go func() {
		r, err := app.CallTool(ctx, &mcp.CallToolParams{Name: viewWidgetsTool, Arguments: map[string]any{"session_id": "w", "model_ids": []string{box}, "version": v.Version, "wait": 10}})
		if err != nil || r.IsError {
			t.Errorf("waiting view_widgets: %v %v", err, r)
			got <- engine.WidgetView{}
			return
		}
		var w engine.WidgetView
		b, _ := json.Marshal(r.StructuredContent)
		json.Unmarshal(b, &w)
		got <- w
	}()
	if r := call(t, ctx, app, sendWidgetTool, map[string]any{"session_id": "w", "model_id": slider, "state": map[string]any{"value": 7}}); r.IsError {
		t.Fatalf("send_widget: %s", resultText(r))
	}
	changed := <-got
	if changed.Version <= v.Version || changed.Reset || len(changed.Models) == 0 || changed.Models[0].ModelID != slider || changed.Models[0].State["value"] != float64(7) {
		t.Errorf("after the change: %+v", changed)
	}
	if out := resultText(call(t, ctx, app, "run_code", map[string]any{"session_id": "w", "code": "print('value', s.value)"})); !strings.Contains(out, "value 7") {
		t.Errorf("s.value after send_widget: %s", out)
	}
	// A click: the button's own message runs its handler.
	if r := call(t, ctx, app, sendWidgetTool, map[string]any{"session_id": "w", "model_id": button, "method": "custom", "content": map[string]any{"event": "click"}}); r.IsError {
		t.Fatalf("send_widget click: %s", resultText(r))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := resultText(call(t, ctx, app, "run_code", map[string]any{"session_id": "w", "code": "print('clicks', len(clicks))"}))
		if regexp.MustCompile(`clicks 1\b`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the click did not run the handler: %s", out)
		}
	}

	// Bad input: a clear error, and the session intact.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{viewWidgetsTool, map[string]any{"session_id": "w"}, "model_ids"},
		{viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": make([]string, maxWidgetRoots+1)}, "invalid model_ids"},
		{viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": []string{box}, "wait": -1}, "invalid wait"},
		{viewWidgetsTool, map[string]any{"session_id": "nope", "model_ids": []string{box}}, `no session "nope"`},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": "", "state": map[string]any{"value": 1}}, "model_id is empty"},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": "nope", "state": map[string]any{"value": 1}}, "no such widget model"},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": slider}, "state is empty"},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": slider, "method": "exec", "state": map[string]any{"value": 1}}, `method "exec"`},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": button, "method": "custom"}, "needs content"},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": slider, "state": map[string]any{"value": 1}, "buffer_paths": []any{[]any{"x"}}, "buffers": []string{"%%"}}, "not base64"},
		{sendWidgetTool, map[string]any{"session_id": "w", "model_id": slider, "state": map[string]any{"value": 1}, "buffers": []string{"AA=="}}, "0 buffer paths for 1 buffers"},
	} {
		r := call(t, ctx, app, tc.tool, tc.args)
		if !r.IsError || !strings.Contains(resultText(r), tc.want) {
			t.Errorf("%s %v: %s, want an error saying %q", tc.tool, tc.args, resultText(r), tc.want)
		}
	}
	if out := resultText(call(t, ctx, app, "run_code", map[string]any{"session_id": "w", "code": "print('still', s.value)"})); !strings.Contains(out, "still 7") {
		t.Errorf("the session after bad input: %s", out)
	}

	// A client without the extension has neither tool.
	for _, name := range []string{viewWidgetsTool, sendWidgetTool} {
		if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"model_ids": []string{box}, "model_id": box}}); err == nil || !strings.Contains(err.Error(), `unknown tool "`+name+`"`) {
			t.Errorf("%s from a client without the extension: %v", name, err)
		}
	}

	// A reset (a new kernel): the version is stale, the roots are gone.
	before := widgetViewOf(t, call(t, ctx, app, viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": []string{box}})).Version
	if r := call(t, ctx, app, "reset_session", map[string]any{"session_id": "w"}); r.IsError {
		t.Fatalf("reset: %s", resultText(r))
	}
	after := widgetViewOf(t, call(t, ctx, app, viewWidgetsTool, map[string]any{"session_id": "w", "model_ids": []string{box}, "version": before}))
	if !after.Reset || len(after.Models) != 1 || !after.Models[0].Gone || after.Models[0].ModelID != box {
		t.Errorf("after a reset: %+v", after)
	}
}

// A read-only profile (no run_code) offers no send_widget: the cell view
// says the web view has the live control.
func TestCellViewWidgetToolsReadOnly(t *testing.T) {
	srv, err := New(Config{Tools: []string{"get_value", "wait_run"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := connectClient(t, ctx, srv, true)
	tools, err := app.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), viewWidgetsTool) || strings.Contains(strings.Join(names, " "), sendWidgetTool) {
		t.Errorf("tools of a server that runs no code: %v", names)
	}
}
