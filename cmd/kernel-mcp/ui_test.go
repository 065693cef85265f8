package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
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

// The web view, on --ui's port and under /ui/ on the MCP port, refuses a
// request naming a foreign Host on loopback (DNS rebinding) even with the
// token, as the MCP endpoint does; and a request it refuses gets its answer
// at once, its declared body unread, and loses its connection.
func TestRunWebViewRefusals(t *testing.T) {
	pr, pw := io.Pipe()
	views := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(pr)
		view := regexp.MustCompile(`web view (?:also )?at (http://\S+)`)
		for sc.Scan() {
			if m := view.FindStringSubmatch(sc.Text()); m != nil {
				views <- m[1]
			}
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--transport", "streamable-http", "--port", "0", "--state-dir", "none", "--pool-size", "0", "--token", "mcp-token", "--ui", "127.0.0.1:0"}, env(base), io.Discard, pw)
		pw.Close()
	}()
	for range 2 {
		var view string
		select {
		case view = <-views:
		case code := <-exit:
			t.Fatalf("run exited %d before serving", code)
		}
		u, err := url.Parse(view)
		if err != nil {
			t.Fatal(err)
		}
		addr, token := u.Host, u.Query().Get("token")
		_, port, _ := net.SplitHostPort(addr)
		exchange := func(req string) string {
			c := dialRaw(t, addr)
			io.WriteString(c, req)
			return readUntilClosed(t, c, time.Now().Add(hangBound))
		}
		get := func(host string) string {
			return exchange("GET /ui/api/sessions HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + token + "\r\nConnection: close\r\n\r\n")
		}
		if got := get("localhost:" + port); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
			t.Errorf("%s: GET with the token and Host localhost: %q", addr, got)
		}
		for _, host := range []string{"evil.example:" + port, "attacker.test"} {
			if got := get(host); !strings.HasPrefix(got, "HTTP/1.1 403 ") || !strings.Contains(got, host) {
				t.Errorf("%s: GET with the token and Host %s: %q, want 403 naming the host", addr, host, got)
			}
		}
		// The bodies are declared and never sent: under 256 KiB, which
		// Go's server would otherwise wait for before answering.
		for _, c := range []struct{ host, auth, want string }{
			{addr, "", "HTTP/1.1 401 "},
			{addr, "Authorization: Bearer wrong\r\n", "HTTP/1.1 401 "},
			{"evil.example", "Authorization: Bearer " + token + "\r\n", "HTTP/1.1 403 "},
		} {
			got := exchange("POST /ui/api/sessions/s/run HTTP/1.1\r\nHost: " + c.host + "\r\n" + c.auth + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("%s: POST to Host %s with %q and a body never sent: %q, want %q at once", addr, c.host, c.auth, got, c.want)
			}
		}
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d", code)
	}
}
