package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseUIConfig(t *testing.T) {
	for _, c := range []struct {
		args     []string
		env      map[string]string
		ui       string
		readOnly bool
	}{
		{nil, nil, "", false},
		{[]string{"--ui", "127.0.0.1:8765"}, nil, "127.0.0.1:8765", false},
		{[]string{"--ui", ":0"}, nil, "127.0.0.1:0", false},
		{[]string{"--ui", "[::1]:9000", "--ui-readonly"}, nil, "[::1]:9000", true},
		{nil, map[string]string{"KERNEL_MCP_UI": "0.0.0.0:8765", "KERNEL_MCP_UI_READONLY": "yes"}, "0.0.0.0:8765", true},
		{[]string{"--ui", "none"}, map[string]string{"KERNEL_MCP_UI": "127.0.0.1:1"}, "", false},
	} {
		cfg, err := parseConfig(c.args, env(with(c.env)))
		if err != nil || cfg.UI != c.ui || cfg.UIReadOnly != c.readOnly {
			t.Errorf("%v %v: ui %q read-only %v, %v; want %q %v", c.args, c.env, cfg.UI, cfg.UIReadOnly, err, c.ui, c.readOnly)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ui", "8765"}, "--ui / KERNEL_MCP_UI"},
		{[]string{"--ui", "127.0.0.1:http"}, "port from 0 to 65535"},
		{[]string{"--ui", "127.0.0.1:70000"}, "port from 0 to 65535"},
		{[]string{"--ui-readonly"}, "has no effect without --ui"},
		{[]string{"--ui", ":1", "--ui-readonly=maybe"}, "--ui-readonly / KERNEL_MCP_UI_READONLY"},
	} {
		if _, err := parseConfig(c.args, env(base)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// With --tokens-file each user has a web view of their own, printed with
// their name, over their own sessions, on --ui's listener and under /ui/ on
// the HTTP one; list_sessions gives each user their own URL.
func TestRunWebViewPerUser(t *testing.T) {
	ipytest.Require(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+tokA+"\nbob "+tokB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	type found struct{ kind, user, url string }
	lines := make(chan found, 8)
	go func() {
		sc := bufio.NewScanner(pr)
		serving := regexp.MustCompile(`serving \S+ at (http://\S+)`)
		view := regexp.MustCompile(`web view for user (\S+) (also )?at (http://\S+)`)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				lines <- found{"mcp", "", m[1]}
			}
			if m := view.FindStringSubmatch(sc.Text()); m != nil {
				lines <- found{"ui" + m[2], m[1], m[3]}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--transport", "streamable-http", "--port", "0", "--state-dir", "none", "--pool-size", "0",
			"--tokens-file", tokens, "--ui", "127.0.0.1:0"}, env(base), io.Discard, pw)
		pw.Close()
	}()
	var mcpURL string
	views := map[string]string{} // kind+user -> URL
	for len(views) < 4 || mcpURL == "" {
		select {
		case f := <-lines:
			if f.kind == "mcp" {
				mcpURL = f.url
			} else {
				views[f.kind+f.user] = f.url
			}
		case code := <-exit:
			t.Fatalf("run exited %d before serving", code)
		}
	}
	alice, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, clientTransport(transportStreamableHTTP, mcpURL, tokA), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "alices", "code": "1"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	res, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions"})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, views["uialice"]) {
		t.Errorf("alice's list_sessions does not give her web view %s: %v %+v", views["uialice"], err, res)
	}

	sessionsOf := func(url string) (int, []string) {
		t.Helper()
		api := strings.Replace(url, "/ui/?", "/ui/api/sessions?", 1)
		resp, err := http.Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Sessions []struct {
				SessionID string `json:"session_id"`
			} `json:"sessions"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		var ids []string
		for _, s := range body.Sessions {
			ids = append(ids, s.SessionID)
		}
		return resp.StatusCode, ids
	}
	for _, kind := range []string{"ui", "uialso "} {
		if code, ids := sessionsOf(views[kind+"alice"]); code != 200 || len(ids) != 1 || ids[0] != "alices" {
			t.Errorf("%s alice sees %d %v", kind, code, ids)
		}
		if code, ids := sessionsOf(views[kind+"bob"]); code != 200 || len(ids) != 0 {
			t.Errorf("%s bob sees %d %v", kind, code, ids)
		}
		noToken := views[kind+"alice"][:strings.Index(views[kind+"alice"], "?")]
		if resp, err := http.Get(noToken); err != nil || resp.StatusCode != 401 {
			t.Errorf("%s without a token: %v %v", kind, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	// The MCP endpoint still wants a user's bearer token, not a view's.
	if resp, err := http.Post(mcpURL, "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != 401 {
		t.Errorf("MCP endpoint without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d", code)
	}
}
