package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRunVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"--version"}, env(base), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if got, want := stdout.String(), "kernel-mcp "+versionString()+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}

	old := version
	version = "v1.2.3"
	defer func() { version = old }()
	stdout.Reset()
	run(t.Context(), []string{"--version"}, env(base), &stdout, &stderr)
	if got := stdout.String(); got != "kernel-mcp v1.2.3\n" {
		t.Errorf("with -X main.version: %q", got)
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, env(base), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range settings {
		if !strings.Contains(stdout.String(), "--"+s.flag) || !strings.Contains(stdout.String(), s.env) {
			t.Errorf("help lacks --%s / %s", s.flag, s.env)
		}
	}
}

// A gateway URL pasted as Jupyter prints it, token in the query, is
// refused at start with the way to give the token instead, and the token
// appears nowhere in what the server writes.
func TestRunRefusesGatewayTokenInURL(t *testing.T) {
	const secret = "5f1e0c7a9b3d2e8f"
	for _, tt := range []struct {
		args []string
		env  map[string]string
		base string // the base URL the error suggests
	}{
		{[]string{"--gateway-url", "http://127.0.0.1:8888/?token=" + secret}, nil, "http://127.0.0.1:8888/"},
		{[]string{"--gateway-url", "http://127.0.0.1:8888/lab?token=" + secret}, nil, "http://127.0.0.1:8888/"},
		{nil, map[string]string{"KERNEL_MCP_GATEWAY_URL": "https://hub.example/user/ana/tree?token=" + secret}, "https://hub.example/user/ana/"},
		{[]string{"--gateway-url", "http://gw:8888/#token=" + secret, "--gateway-token", "other"}, nil, "http://gw:8888/"},
		{[]string{"--transport", "streamable-http", "--port", "0", "--gateway-url", "http://gw:8888?x=1&token=" + secret}, nil, "http://gw:8888/"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, env(with(tt.env)), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != exitUsage {
			t.Errorf("%v %v: exit %d, want 2; output %q", tt.args, tt.env, code, out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("%v %v: the token is in the output: %q", tt.args, tt.env, out)
		}
		for _, w := range []string{"--gateway-url", "query string", "--gateway-token", "KERNEL_MCP_GATEWAY_TOKEN", "--gateway-url " + tt.base + " --gateway-token <token>"} {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%v %v: stderr %q lacks %q", tt.args, tt.env, stderr.String(), w)
			}
		}
		if strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v %v: want one line on stderr, got %q", tt.args, tt.env, stderr.String())
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{[]string{"--transport", "tcp"}, nil, []string{"--transport", "MCP_TRANSPORT"}},
		{nil, map[string]string{"MCP_PORT": "eighty"}, []string{"--port", "MCP_PORT"}},
		{[]string{"--timeout", "soon"}, nil, []string{"--timeout", "KERNEL_MCP_TIMEOUT"}},
		{[]string{"--transport", "streamable-http", "--host", "0.0.0.0"}, nil, []string{"non-loopback", "KERNEL_MCP_TOKEN"}},
		{nil, map[string]string{"MCP_TRANSPORT": "sse", "MCP_HOST": "192.168.0.2"}, []string{"non-loopback", "--token"}},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, env(with(tt.env)), &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%v %v: exit %d, want 2", tt.args, tt.env, code)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v %v: wrote to stdout: %q", tt.args, tt.env, stdout.String())
		}
		msg := stderr.String()
		if strings.Count(msg, "\n") != 1 {
			t.Errorf("%v %v: want one line on stderr, got %q", tt.args, tt.env, msg)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v %v: stderr %q lacks %q", tt.args, tt.env, msg, w)
			}
		}
	}
}

// TestRunHTTP runs the command on port 0 with a token, connects an MCP
// client with the URL it prints, and stops it by cancelling its context (as
// a signal does). No kernel is started.
func TestRunHTTP(t *testing.T) {
	for _, transport := range []string{transportStreamableHTTP, transportSSE} {
		t.Run(transport, func(t *testing.T) {
			pr, pw := io.Pipe()
			urls := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(pr)
				re := regexp.MustCompile(`serving \S+ at (http://\S+)`)
				for sc.Scan() {
					if m := re.FindStringSubmatch(sc.Text()); m != nil {
						urls <- m[1]
					}
				}
			}()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout bytes.Buffer
			exit := make(chan int, 1)
			go func() {
				exit <- run(ctx, []string{"--transport", transport, "--port", "0", "--state-dir", "none"},
					env(with(map[string]string{"KERNEL_MCP_TOKEN": "tok"})), &stdout, pw)
				pw.Close()
			}()
			var url string
			select {
			case url = <-urls:
			case code := <-exit:
				t.Fatalf("run exited %d before serving", code)
			}

			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(ctx, clientTransport(transport, url, "tok"), nil)
			if err != nil {
				t.Fatalf("connect to %s: %v", url, err)
			}
			if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "kernel-mcp" {
				t.Errorf("server info: %+v", init)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) == 0 {
				t.Errorf("list tools: %v, %v", tools, err)
			}
			if _, err := client.Connect(ctx, clientTransport(transport, url, "wrong"), nil); err == nil {
				t.Error("connected with a wrong token")
			}

			cancel()
			if code := <-exit; code != 0 {
				t.Errorf("exit %d after cancel, want 0", code)
			}
			cs.Close()
			if stdout.Len() != 0 {
				t.Errorf("HTTP mode wrote to stdout: %q", stdout.String())
			}
		})
	}
}

func TestRunListenError(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--transport", "sse", "--port", port, "--state-dir", "none"}, env(base), &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "cannot listen") || !strings.Contains(stderr.String(), "MCP_PORT") {
		t.Errorf("port in use: exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeStdio: the stdio path ends cleanly when the client closes the
// stream (stdin EOF) and when the context is cancelled (a signal).
func TestServeStdio(t *testing.T) {
	t.Run("client closes", func(t *testing.T) {
		srv, err := mcpserver.New(mcpserver.Config{Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		st, ct := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		go func() { done <- serveStdio(t.Context(), srv, st, discard) }()
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Errorf("list tools: %v", err)
		}
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("serveStdio after client close = %v, want nil", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		srv, err := mcpserver.New(mcpserver.Config{Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		st, ct := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- serveStdio(ctx, srv, st, discard) }()
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveStdio after cancel = %v, want nil", err)
		}
	})
}
