package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/webview"
)

// webView is the live web view (--ui): one handler per server, each over
// its own engine and with its own token, so that with --tokens-file each
// user sees only their own sessions.
type webView struct {
	ln       net.Listener // --ui's own listener
	tokens   []string     // one per server, in servers order
	names    []string     // the users' names; nil with one server
	handlers []*webview.Handler
	html     string // the page (mcpserver.WebHTML)
}

// listenUI opens --ui's listener and makes a token for each of n servers.
func listenUI(cfg config, users []user) (*webView, error) {
	ln, err := net.Listen("tcp", cfg.UI)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (--ui / KERNEL_MCP_UI): %v", cfg.UI, err)
	}
	html, err := mcpserver.WebHTML()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("the web view's page: %v", err)
	}
	u := &webView{ln: ln, html: html}
	n := max(1, len(users))
	for i := range n {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			ln.Close()
			return nil, fmt.Errorf("making the web view's token: %v", err)
		}
		u.tokens = append(u.tokens, hex.EncodeToString(b))
		if len(users) > 0 {
			u.names = append(u.names, users[i].Name)
		}
	}
	return u, nil
}

// urls are the servers' web view addresses on addr, token included.
func (u *webView) urls(addr net.Addr) []string {
	urls := make([]string, len(u.tokens))
	for i, t := range u.tokens {
		urls[i] = "http://" + addr.String() + webview.Prefix + "?token=" + t
	}
	return urls
}

// start builds the handlers over the servers' engines.
func (u *webView) start(cfg config, srv *servers, logger *slog.Logger) {
	for i, s := range srv.list {
		l := logger
		if u.names != nil {
			l = logger.With("user", u.names[i])
		}
		u.handlers = append(u.handlers, webview.New(webview.Options{
			Engine: s.Engine(), Token: u.tokens[i], ReadOnly: cfg.UIReadOnly, HTML: u.html, Logger: l,
		}))
	}
}

// announce prints each web view URL on addr to stderr, whatever the log
// level: the person needs them.
func (u *webView) announce(w io.Writer, addr net.Addr, also string) {
	for i, url := range u.urls(addr) {
		who := ""
		if u.names != nil {
			who = " for user " + u.names[i]
		}
		fmt.Fprintf(w, "kernel-mcp: web view%s %sat %s\n", who, also, url)
	}
}

// handler sends each request to the view whose token it carries; one that
// carries none gets the first view's 401 (or 403 from another origin).
// Every view's token is compared, whichever matches.
func (u *webView) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		match := -1
		for i, h := range u.handlers {
			if h.Owns(r) {
				match = i
			}
		}
		if match < 0 {
			u.handlers[0].ServeHTTP(w, r)
			return
		}
		authorized(r)
		u.handlers[match].ServeHTTP(w, r)
	})
}

// withUI mounts the web view under /ui/ beside the MCP endpoint h.
func withUI(u *webView, h http.Handler) http.Handler {
	if u == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle(webview.Prefix, u.handler())
	mux.Handle("/", h)
	return mux
}
