package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var discard = slog.New(slog.DiscardHandler)

func TestCheckExposure(t *testing.T) {
	tests := []struct {
		transport, host, token string
		wantErr                bool
	}{
		{"streamable-http", "0.0.0.0", "", true},
		{"sse", "0.0.0.0", "", true},
		{"streamable-http", "192.168.1.10", "", true},
		{"streamable-http", "::", "", true},
		{"streamable-http", "example.com", "", true},
		{"streamable-http", "0.0.0.0", "tok", false},
		{"sse", "10.0.0.1", "tok", false},
		{"streamable-http", "127.0.0.1", "", false},
		{"sse", "::1", "", false},
		{"streamable-http", "localhost", "", false},
		{"stdio", "0.0.0.0", "", false}, // stdio does not listen
	}
	for _, tt := range tests {
		err := checkExposure(config{Transport: tt.transport, Host: tt.host, Token: tt.token})
		if (err != nil) != tt.wantErr {
			t.Errorf("checkExposure(%s, %q, token=%q) = %v, want error %v", tt.transport, tt.host, tt.token, err, tt.wantErr)
		}
		if err != nil && (!strings.Contains(err.Error(), "--token") || !strings.Contains(err.Error(), "KERNEL_MCP_TOKEN")) {
			t.Errorf("error %q does not name --token and KERNEL_MCP_TOKEN", err)
		}
	}
}

func TestRequireBearer(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "through") })
	h := requireBearer("s3cret", discard, next)
	tests := []struct {
		name   string
		header []string // Authorization values; nil: none
		ok     bool
	}{
		{"no header", nil, false},
		{"empty", []string{""}, false},
		{"wrong token", []string{"Bearer wrong"}, false},
		{"prefix of token", []string{"Bearer s3cre"}, false},
		{"token extended", []string{"Bearer s3cret2"}, false},
		{"other scheme", []string{"Basic s3cret"}, false},
		{"no scheme", []string{"s3cret"}, false},
		{"scheme only", []string{"Bearer"}, false},
		{"empty credential", []string{"Bearer "}, false},
		{"no space", []string{"Bearers3cret"}, false},
		{"right token", []string{"Bearer s3cret"}, true},
		{"scheme case-insensitive", []string{"bearer s3cret"}, true},
		{"extra spaces", []string{"  Bearer   s3cret "}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for _, v := range tt.header {
				req.Header.Add("Authorization", v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tt.ok {
				if rec.Code != http.StatusOK || rec.Body.String() != "through" {
					t.Errorf("got %d %q, want the request passed through", rec.Code, rec.Body)
				}
				return
			}
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401", rec.Code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("WWW-Authenticate = %q, want Bearer", got)
			}
			if strings.Contains(rec.Body.String(), "through") {
				t.Error("handler was called")
			}
		})
	}
}

// TestBearerMatchesDigests checks the comparison works on fixed-size
// digests: tokens of every length relation compare without short cuts.
func TestBearerMatchesDigests(t *testing.T) {
	for _, token := range []string{"a", "s3cret", strings.Repeat("x", 4096)} {
		want := sha256.Sum256([]byte(token))
		if !bearerMatches("Bearer "+token, want) {
			t.Errorf("token of %d bytes: not matched", len(token))
		}
		for _, other := range []string{"", token[:len(token)-1], token + "x", strings.ToUpper(token) + "!"} {
			if bearerMatches("Bearer "+other, want) {
				t.Errorf("token of %d bytes matched %q", len(token), other)
			}
		}
	}
	// An empty configured token never matches a missing credential through
	// the scheme check failing.
	if bearerMatches("Basic ", sha256.Sum256(nil)) {
		t.Error("empty credential under another scheme matched")
	}
}

// newTestMCPServer is a kernel-mcp server that starts no kernel (no pool,
// no state dir): enough to exercise the HTTP layer.
func newTestMCPServer(t *testing.T) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// authTransport adds a bearer token to each request.
type authTransport struct{ token string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

func clientTransport(transport, url, token string) mcp.Transport {
	hc := &http.Client{}
	if token != "" {
		hc.Transport = authTransport{token}
	}
	if transport == transportSSE {
		return &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}
	}
	return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}
}

// TestHTTPHandlerClients connects real MCP clients through the whole
// handler: token check, cross-origin protection and the SDK's handler.
func TestHTTPHandlerClients(t *testing.T) {
	for _, transport := range []string{transportStreamableHTTP, transportSSE} {
		for _, token := range []string{"", "tok"} {
			t.Run(transport+"/token="+token, func(t *testing.T) {
				cfg := config{Transport: transport, Token: token}
				ts := httptest.NewServer(newHTTPHandler(cfg, newTestMCPServer(t), discard))
				defer ts.Close()
				url := ts.URL + pathStreamable
				if transport == transportSSE {
					url = ts.URL + pathSSE
				}
				ctx := t.Context()
				client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
				cs, err := client.Connect(ctx, clientTransport(transport, url, token), nil)
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				// A round trip in either era (protocol 2026-07-28,
				// which go-sdk's client speaks over streamable HTTP, has
				// no ping).
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Errorf("tools/list: %v", err)
				}
				cs.Close()

				if token != "" {
					if _, err := client.Connect(ctx, clientTransport(transport, url, ""), nil); err == nil {
						t.Error("connected without the token")
					}
					if _, err := client.Connect(ctx, clientTransport(transport, url, "nope"), nil); err == nil {
						t.Error("connected with a wrong token")
					}
				}
			})
		}
	}
}

func TestHTTPHandlerProtections(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, transport := range []string{transportStreamableHTTP, transportSSE} {
		t.Run(transport, func(t *testing.T) {
			ts := httptest.NewServer(newHTTPHandler(config{Transport: transport, Token: "tok"}, newTestMCPServer(t), discard))
			defer ts.Close()
			path := pathStreamable
			if transport == transportSSE {
				path = pathSSE + "?sessionid=x"
			}
			tests := []struct {
				name   string
				header map[string]string
				want   int
			}{
				{"cross-site browser POST", map[string]string{"Authorization": "Bearer tok", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
				{"foreign Origin", map[string]string{"Authorization": "Bearer tok", "Origin": "https://evil.example"}, http.StatusForbidden},
				{"DNS rebinding Host", map[string]string{"Authorization": "Bearer tok", "Host": "evil.example"}, http.StatusForbidden},
				{"no token", map[string]string{"Origin": "https://evil.example"}, http.StatusUnauthorized},
			}
			for _, tt := range tests {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(initialize))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tt.header {
					if k == "Host" {
						req.Host = v
						continue
					}
					req.Header.Set(k, v)
				}
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
				}
			}
		})
	}
}

func TestUnknownPathIs404(t *testing.T) {
	ts := httptest.NewServer(newHTTPHandler(config{Transport: transportStreamableHTTP}, newTestMCPServer(t), discard))
	defer ts.Close()
	resp, err := http.Get(ts.URL + pathSSE)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /sse on streamable-http: %d, want 404", resp.StatusCode)
	}
}

func TestEndpointURL(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4321}
	if got := endpointURL(transportStreamableHTTP, addr); got != "http://127.0.0.1:4321/mcp" {
		t.Errorf("streamable: %q", got)
	}
	if got := endpointURL(transportSSE, &net.TCPAddr{IP: net.IPv6loopback, Port: 8000}); got != "http://[::1]:8000/sse" {
		t.Errorf("sse: %q", got)
	}
}

// TestServeHTTPGracefulShutdown: on cancel, a GET stream ends at once while
// a POST in flight is allowed to finish.
func TestServeHTTPGracefulShutdown(t *testing.T) {
	streamStarted, streamEnded := make(chan struct{}), make(chan struct{})
	postStarted, releasePost := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(streamStarted)
		<-r.Context().Done()
		close(streamEnded)
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		close(postStarted)
		<-releasePost
		io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, mux, time.Minute, discard) }()

	streamResp, err := http.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer streamResp.Body.Close()
	<-streamStarted

	type result struct {
		body string
		err  error
	}
	postDone := make(chan result, 1)
	go func() {
		resp, err := http.Post(base+"/slow", "text/plain", nil)
		if err != nil {
			postDone <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		postDone <- result{string(b), err}
	}()
	<-postStarted

	cancel()
	<-streamEnded // the GET stream ended without waiting for the grace period
	close(releasePost)
	if r := <-postDone; r.err != nil || r.body != "done" {
		t.Errorf("POST in flight: %q, %v; want it to finish", r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Errorf("serveHTTP = %v, want nil", err)
	}
	if _, err := http.Get(base + "/stream"); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}

// TestServeHTTPGraceExpires: a request that outlives the grace period has
// its connection closed and serveHTTP still returns.
func TestServeHTTPGraceExpires(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, h, time.Millisecond, discard) }()
	clientErr := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String(), "text/plain", nil)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-started
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serveHTTP = %v, want nil", err)
	}
	if err := <-clientErr; err == nil {
		t.Error("request outliving the grace period completed; want its connection closed")
	}
}

func TestServeHTTPListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = serveHTTP(t.Context(), ln, http.NotFoundHandler(), time.Second, discard)
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serveHTTP on a closed listener = %v, want an error", err)
	}
}
