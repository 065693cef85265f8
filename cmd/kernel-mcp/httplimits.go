package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/httpguard"
)

// httpLimits bound what one HTTP connection may hold. There is no write
// timeout: a tool call's response may take up to --max-wait, and SSE and
// streamable-HTTP GET streams last as long as the client keeps them.
type httpLimits struct {
	// header bounds reading a request line and headers (http.Server's
	// ReadHeaderTimeout); a new connection that sends nothing is closed
	// after it too.
	header time.Duration
	// body bounds reading a request's body, from the end of its headers.
	// The deadline ends when the body has been read, so it never cuts the
	// response.
	body time.Duration
	// idle bounds how long a keep-alive connection waits for its next
	// request.
	idle time.Duration
	// maxConns bounds the connections open at once. When a new one would
	// pass it, the oldest connection that has not yet carried an
	// authorized request is closed to make room; if every one has, the
	// new connection gets 503.
	maxConns int
}

// defaultHTTPLimits are the limits of the HTTP transports; docs/configuration.md
// lists them.
var defaultHTTPLimits = httpLimits{
	header:   10 * time.Second,
	body:     30 * time.Second,
	idle:     2 * time.Minute,
	maxConns: 512,
}

// unauthorized answers 401 without reading the request's body and closes
// the connection after it (httpguard.RefuseUnread): a client without the
// token must not hold a connection by sending its body slowly.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	httpguard.RefuseUnread(w)
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "401 unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
}

// authorized records that r carried valid credentials (or that none are
// required): its connection is no longer one the connection limit may
// close to make room.
func authorized(r *http.Request) {
	if c, ok := r.Context().Value(guardedConnKey{}).(*guardedConn); ok {
		c.trusted.Store(true)
	}
}

// openAccess marks every request as authorized, for a server without a
// token.
func openAccess(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authorized(r)
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline gives the body of each request d to arrive. Go's server
// clears the connection's read deadline itself once a body has been read
// to its end, so the deadline bounds the upload only, not the handler.
// Requests without a body (the GET streams) get none.
func bodyDeadline(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}

// guardedConnKey is the request-context key of a request's *guardedConn.
type guardedConnKey struct{}

// connGuard counts the HTTP server's open connections and makes room for a
// new one by closing the oldest untrusted one.
type connGuard struct {
	max   int
	mu    sync.Mutex
	seq   uint64
	conns map[*guardedConn]struct{}
}

// guardedConn is one accepted connection.
type guardedConn struct {
	net.Conn
	seq     uint64      // order of acceptance
	trusted atomic.Bool // it has carried an authorized request
}

func newConnGuard(max int) *connGuard {
	return &connGuard{max: max, conns: map[*guardedConn]struct{}{}}
}

// admit adds c, closing the oldest untrusted connection if c would pass
// the limit. It reports false, adding nothing, when every open connection
// is trusted.
func (g *connGuard) admit(c *guardedConn) bool {
	g.mu.Lock()
	var victim *guardedConn
	if len(g.conns) >= g.max {
		for o := range g.conns {
			if !o.trusted.Load() && (victim == nil || o.seq < victim.seq) {
				victim = o
			}
		}
		if victim == nil {
			g.mu.Unlock()
			return false
		}
		delete(g.conns, victim)
	}
	g.seq++
	c.seq = g.seq
	g.conns[c] = struct{}{}
	g.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
	return true
}

// forget removes c once the server is done with it.
func (g *connGuard) forget(c net.Conn) {
	if gc, ok := c.(*guardedConn); ok {
		g.mu.Lock()
		delete(g.conns, gc)
		g.mu.Unlock()
	}
}

// connState is the http.Server's ConnState hook.
func (g *connGuard) connState(c net.Conn, s http.ConnState) {
	if s == http.StateClosed || s == http.StateHijacked {
		g.forget(c)
	}
}

// connContext is the http.Server's ConnContext hook: it lets authorized
// find a request's connection.
func (g *connGuard) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, guardedConnKey{}, c)
}

// guardListener admits each accepted connection through a connGuard.
type guardListener struct {
	net.Listener
	g *connGuard
}

// Accept returns the next connection the guard admits; one it refuses is
// told so with a 503 and closed.
func (l guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		gc := &guardedConn{Conn: c}
		if l.g.admit(gc) {
			return gc, nil
		}
		go refuse(c)
	}
}

// refuse tells a connection the server is full, and closes it.
func refuse(c net.Conn) {
	defer c.Close()
	const msg = "503 service unavailable: the server has as many connections open as it allows\n"
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
}
