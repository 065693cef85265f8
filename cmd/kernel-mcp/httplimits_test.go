package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hangBound is how long a test waits before it calls something hung: far
// above any timeout the tests set, so a slow machine does not fail them.
const hangBound = 20 * time.Second

// serveLimited serves h with limits on a loopback port until the test ends.
func serveLimited(t *testing.T, h http.Handler, limits httpLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTPLimited(ctx, ln, h, time.Second, limits, discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serveHTTPLimited: %v", err)
		}
	})
	return ln.Addr().String()
}

// dialRaw opens a TCP connection the test writes HTTP to by hand.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readUntilClosed reads c until the server closes it, and returns what
// came. It fails the test if the server holds the connection past
// deadline.
func readUntilClosed(t *testing.T, c net.Conn, deadline time.Time) string {
	t.Helper()
	c.SetReadDeadline(deadline)
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("connection still open after %v (got %q)", hangBound, b)
	}
	return string(b)
}

// TestHTTPSlowUnauthorizedBodies: requests without the token that announce
// a body and then send it slowly get their 401 at once and lose their
// connection, and a client with the token is served while they are open.
func TestHTTPSlowUnauthorizedBodies(t *testing.T) {
	h := newHTTPHandler(config{Transport: transportStreamableHTTP, Token: "tok"}, newTestMCPServer(t), discard)
	addr := serveLimited(t, h, defaultHTTPLimits)
	const n = 60
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dialRaw(t, addr)
		// Under 256 KiB: Go's server would read it all before answering.
		fmt.Fprintf(conns[i], "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientTransport(transportStreamableHTTP, "http://"+addr+pathStreamable, "tok"), nil)
	if err != nil {
		t.Fatalf("client with the token, while %d slow unauthorized requests are open: %v", n, err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	cs.Close()

	deadline := time.Now().Add(hangBound)
	for i, c := range conns {
		got := readUntilClosed(t, c, deadline)
		if got != "" && !strings.HasPrefix(got, "HTTP/1.1 401 ") {
			t.Errorf("slow unauthorized request %d: got %q, want a 401 or a closed connection", i, got)
		}
	}
}

// TestHTTPSlowHeadersCut: a request whose headers come one byte at a time
// is cut off by the header timeout.
func TestHTTPSlowHeadersCut(t *testing.T) {
	limits := defaultHTTPLimits
	limits.header = 500 * time.Millisecond
	addr := serveLimited(t, http.NotFoundHandler(), limits)
	c := dialRaw(t, addr)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		req := "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\n"
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if i == len(req) {
				req += "X-Pad: a\r\n" // never the blank line that ends the headers
			}
			if _, err := c.Write([]byte{req[i]}); err != nil {
				return
			}
		}
	}()
	readUntilClosed(t, c, time.Now().Add(hangBound))
}

// rawGet sends an HTTP/1.1 GET on c, with the token when tok is set, and
// reads the response.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, tok string) *http.Response {
	t.Helper()
	auth := ""
	if tok != "" {
		auth = "Authorization: Bearer " + tok + "\r\n"
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n", auth)
	c.SetReadDeadline(time.Now().Add(hangBound))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestHTTPConnectionLimit: at the connection limit, a new connection pushes
// out the oldest one that has not carried an authorized request, so silent
// connections cannot keep a client with the token out, and never push out
// an authorized client's connection. When every connection is authorized,
// a new one gets 503.
func TestHTTPConnectionLimit(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	limits := defaultHTTPLimits
	limits.header = time.Minute // silent connections stay until pushed out
	limits.maxConns = 8
	addr := serveLimited(t, requireBearer("tok", discard, ok), limits)

	kept := dialRaw(t, addr)
	keptR := bufio.NewReader(kept)
	if resp := rawGet(t, kept, keptR, "tok"); resp.StatusCode != http.StatusOK {
		t.Fatalf("authorized GET: %s", resp.Status)
	}
	const silent = 20
	var quiet []net.Conn
	for range silent {
		quiet = append(quiet, dialRaw(t, addr))
	}
	// The kept connection and the newest maxConns-1 silent ones fit.
	deadline := time.Now().Add(hangBound)
	for i, c := range quiet[:silent-(limits.maxConns-1)] {
		if got := readUntilClosed(t, c, deadline); got != "" {
			t.Errorf("silent connection %d: got %q, want it closed with nothing", i, got)
		}
	}
	fresh := dialRaw(t, addr)
	if resp := rawGet(t, fresh, bufio.NewReader(fresh), "tok"); resp.StatusCode != http.StatusOK {
		t.Errorf("new authorized client at the limit: %s", resp.Status)
	}
	if resp := rawGet(t, kept, keptR, "tok"); resp.StatusCode != http.StatusOK {
		t.Errorf("authorized keep-alive connection after the silent ones: %s", resp.Status)
	}

	// Fill the rest with authorized connections: then there is no room.
	for range limits.maxConns - 2 {
		c := dialRaw(t, addr)
		if resp := rawGet(t, c, bufio.NewReader(c), "tok"); resp.StatusCode != http.StatusOK {
			t.Fatalf("authorized GET: %s", resp.Status)
		}
	}
	if got := readUntilClosed(t, dialRaw(t, addr), time.Now().Add(hangBound)); !strings.HasPrefix(got, "HTTP/1.1 503 ") {
		t.Errorf("connection past a limit of authorized ones: %q, want a 503", got)
	}
}

// TestHTTPBodyDeadlineSparesStreams: an authorized request whose body stops
// coming is cut by the body timeout, while a GET stream and a POST whose
// answer takes longer than that timeout, both older, go on.
func TestHTTPBodyDeadlineSparesStreams(t *testing.T) {
	release := make(chan struct{})
	streamStarted, longStarted, cut := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(streamStarted)
		<-release
		io.WriteString(w, "event\n")
	})
	mux.HandleFunc("POST /long", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(longStarted)
		<-release
		io.WriteString(w, "done")
	})
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		cut <- err
	})
	limits := defaultHTTPLimits
	limits.body = 300 * time.Millisecond
	addr := serveLimited(t, requireBearer("tok", discard, mux), limits)
	base := "http://" + addr
	client := &http.Client{Transport: authTransport{"tok"}}

	type result struct {
		body string
		err  error
	}
	get := func(req *http.Request, out chan<- result) {
		resp, err := client.Do(req)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- result{string(b), err}
	}
	stream, long := make(chan result, 1), make(chan result, 1)
	req, _ := http.NewRequest(http.MethodGet, base+"/stream", nil)
	go get(req, stream)
	req, _ = http.NewRequest(http.MethodPost, base+"/long", strings.NewReader("{}"))
	go get(req, long)
	<-streamStarted
	<-longStarted

	c := dialRaw(t, addr)
	fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer tok\r\nContent-Length: 100\r\n\r\n{", addr)
	select {
	case err := <-cut:
		if err == nil {
			t.Fatal("upload read a body it was never sent")
		}
	case <-time.After(hangBound):
		t.Fatalf("a stalled body was not cut after %v", hangBound)
	}

	close(release)
	if r := <-stream; r.err != nil || r.body != "event\n" {
		t.Errorf("GET stream: %q, %v; want it to outlive the body timeout", r.body, r.err)
	}
	if r := <-long; r.err != nil || r.body != "done" {
		t.Errorf("long POST: %q, %v; want it to outlive the body timeout", r.body, r.err)
	}
}
