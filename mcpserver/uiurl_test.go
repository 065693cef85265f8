package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With a web view, list_sessions and session_status give its URL, in the
// text and as ui_url; wait_run on a cell the person ran says whose it was.
func TestWebViewURLAndPersonsRun(t *testing.T) {
	ipytest.Require(t)
	const url = "http://127.0.0.1:1/ui/?token=abc"
	srv, err := New(Config{UIURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, srv.OrderedTransport(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		return text.String(), out
	}
	text, out := call("list_sessions", nil)
	if !strings.Contains(text, url) || out["ui_url"] != url {
		t.Errorf("list_sessions: %q %v", text, out)
	}
	call("run_code", map[string]any{"code": "1"})
	text, out = call("session_status", map[string]any{})
	if !strings.Contains(text, "Web view: "+url) || out["ui_url"] != url || out["session_id"] != "default" {
		t.Errorf("session_status: %q %v", text, out)
	}

	sess, err := srv.Engine().Lookup("default")
	if err != nil {
		t.Fatal(err)
	}
	r, err := srv.Engine().StartRun(ctx, sess, nil, "web_view", func(ctx context.Context, r *engine.Run) (any, error) {
		r.SetBy(history.ByPerson)
		return r.RunBlock(ctx, "2", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	text, _ = call("wait_run", map[string]any{"run_id": r.ID()})
	if !strings.Contains(text, "was the person's, from the web view; it ended ok") {
		t.Errorf("wait_run: %q", text)
	}
	text, _ = call("get_history", map[string]any{})
	if !strings.Contains(text, "[2] (by the person) 2") {
		t.Errorf("get_history: %q", text)
	}
}
