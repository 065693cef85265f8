package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/httpguard"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP endpoint paths. The SDK's SSE handler posts client messages back to
// the same path with a ?sessionid= query.
const (
	pathStreamable = "/mcp"
	pathSSE        = "/sse"
)

// shutdownGrace bounds how long a graceful HTTP shutdown waits for requests
// in flight before closing their connections.
const shutdownGrace = 5 * time.Second

// checkExposure refuses an HTTP server that anyone on the network could
// reach without a token: a session runs arbitrary code.
func checkExposure(cfg config) error {
	if !cfg.isHTTP() || cfg.Token != "" || cfg.TokenFile != "" || cfg.TokensFile != "" || cfg.OAuth != nil || httpguard.LoopbackHost(cfg.Host) {
		return nil
	}
	return fmt.Errorf("refusing to serve on non-loopback host %q without a token: anyone who can reach it could run code as you; set KERNEL_MCP_TOKEN or --token-file / KERNEL_MCP_TOKEN_FILE (or --token, seen in ps), or bind --host / MCP_HOST to 127.0.0.1", cfg.Host)
}

// requireBearer wraps next so that every request must carry
// "Authorization: Bearer <token>"; others get 401 with WWW-Authenticate,
// before their body is read, and their connection is closed.
// The comparison is constant-time over SHA-256 digests, so neither the
// token's content nor its length leaks through timing.
func requireBearer(token string, logger *slog.Logger, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerMatches(r.Header.Get("Authorization"), want) {
			logger.Warn("rejected unauthenticated HTTP request", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			unauthorized(w, r)
			return
		}
		authorized(r)
		next.ServeHTTP(w, r)
	})
}

// bearerMatches reports whether an Authorization header value carries the
// token whose SHA-256 digest is want. The scheme is case-insensitive.
func bearerMatches(header string, want [sha256.Size]byte) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		// Still hash and compare, so a malformed header costs the same.
		cred = ""
		ok = false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok
}

// newHTTPHandler builds the HTTP handler for an HTTP transport: the SDK's
// streamable HTTP (at /mcp) or SSE (at /sse) handler, with its DNS-rebinding
// protection left on, behind cross-origin protection and, when a token is
// set, the bearer-token check.
func newHTTPHandler(cfg config, srv *mcpserver.Server, logger *slog.Logger) http.Handler {
	h := mcpHTTPHandler(cfg, srv, logger)
	if cfg.Token != "" {
		return requireBearer(cfg.Token, logger, h)
	}
	return openAccess(h)
}

// mcpHTTPHandler is one MCP server's HTTP endpoint behind cross-origin
// protection, without any token check.
func mcpHTTPHandler(cfg config, srv *mcpserver.Server, logger *slog.Logger) http.Handler {
	server := srv.MCP()
	getServer := func(*http.Request) *mcp.Server { return server }
	mux := http.NewServeMux()
	switch cfg.Transport {
	case transportSSE:
		mux.Handle(pathSSE, mcp.NewSSEHandler(getServer, &mcp.SSEOptions{}))
	default:
		// Calls of one session join its queue in the order their POSTs
		// arrive; a client that vanished without a DELETE is forgotten
		// after the idle timeout (its kernel sessions and runs stay).
		// Protocol 2026-07-28 has no HTTP sessions, and go-sdk serves it
		// only from a stateless handler: its requests, which name their
		// version in a header, go to one.
		mux.Handle(pathStreamable, srv.OrderedHTTP(byProtocol(
			mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
				Logger:         logger,
				SessionTimeout: cfg.ClientIdleTimeout,
			}),
			mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
				Logger:    logger,
				Stateless: true,
				// A client that hangs up mid-call does not cancel it: its
				// run goes on, as over a stateful session, and
				// interrupt_session or tasks/cancel stop it.
			}),
		)))
	}
	// Browsers may not POST to us from another origin: a web page the user
	// visits must not be able to drive a kernel. Non-browser clients send no
	// Origin or Sec-Fetch-Site header and pass.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger.Warn("rejected cross-origin HTTP request", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"))
		http.Error(w, "403 forbidden: cross-origin request", http.StatusForbidden)
	}))
	return cop.Handler(mux)
}

// statelessProtocol is the first MCP protocol version without HTTP
// sessions (SEP-2575).
const statelessProtocol = "2026-07-28"

// byProtocol sends requests that name protocol 2026-07-28 or later in their
// MCP-Protocol-Version header to stateless, the rest (the initialize
// handshake and the sessions of earlier versions) to stateful.
func byProtocol(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("MCP-Protocol-Version"); v >= statelessProtocol && r.Header.Get("Mcp-Session-Id") == "" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// endpointURL is the URL a client connects to on listener address addr.
func endpointURL(transport string, addr net.Addr) string {
	path := pathStreamable
	if transport == transportSSE {
		path = pathSSE
	}
	return "http://" + addr.String() + path
}

// serveHTTP serves h on ln until ctx is cancelled, then shuts down
// gracefully: long-lived GET streams (SSE) end at once, other requests in
// flight get up to grace to finish before their connections are closed.
// It returns nil after a shutdown caused by ctx.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, logger *slog.Logger) error {
	return serveHTTPLimited(ctx, ln, h, grace, defaultHTTPLimits, logger)
}

// serveHTTPLimited is serveHTTP with the connection limits as a parameter.
func serveHTTPLimited(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, limits httpLimits, logger *slog.Logger) error {
	// draining is cancelled when shutdown begins; it ends GET streams,
	// which would otherwise hold Shutdown for the whole grace period.
	draining, drain := context.WithCancel(context.Background())
	defer drain()
	guard := newConnGuard(limits.maxConns)
	hs := &http.Server{
		Handler:           endStreamsOnShutdown(draining, bodyDeadline(limits.body, h)),
		ReadHeaderTimeout: limits.header,
		IdleTimeout:       limits.idle,
		ConnState:         guard.connState,
		ConnContext:       guard.connContext,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(guardListener{ln, guard}) }()

	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down HTTP server", "grace", grace)
	drain()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		logger.Warn("HTTP requests still running after the grace period; closing them", "error", err)
		_ = hs.Close()
	}
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", serr)
	}
	return nil
}

// endStreamsOnShutdown cancels the context of GET requests (the server's
// SSE streams) once draining is done; other requests keep theirs, and are
// given draining for streams of their own (mcpserver.WithDrain).
func endStreamsOnShutdown(draining context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			// A POST may be a long-lived stream too (a task listen of
			// protocol 2026-07-28), which ends when draining does.
			h.ServeHTTP(w, r.WithContext(mcpserver.WithDrain(r.Context(), draining.Done())))
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(draining, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
