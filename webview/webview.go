// Package webview serves the live web view of an engine's sessions: a page
// the person opens in a browser beside the chat, the sessions' cells as JSON,
// the engine's events as server-sent events, and the few things the person
// may do from the page (run a cell, interrupt, answer input(), download the
// session as a notebook or a script).
//
//	h := webview.New(webview.Options{Engine: eng, Token: token, HTML: page})
//	mux.Handle("/ui/", h)
//
// Every request needs the token, as ?token= or "Authorization: Bearer"; a
// request from another origin is refused, and so is one that came in on a
// loopback address naming another host (DNS rebinding). The handler knows nothing of MCP:
// it works on the engine, as the MCP tools do, so a cell the person runs
// queues like any run and lands in the same history.
package webview

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/chartlib"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/httpguard"
)

// Prefix is the path the handler serves under.
const Prefix = "/ui/"

// Options configure the handler.
type Options struct {
	// Engine holds the sessions shown; with several users, the user's own.
	Engine *engine.Engine
	// Token is what every request must carry. It must not be empty.
	Token string
	// ReadOnly refuses cells from the page (--ui-readonly); interrupting
	// and answering input() stay allowed.
	ReadOnly bool
	// HTML is the page served at /ui/.
	HTML string
	// Logger receives refused requests; nil discards.
	Logger *slog.Logger
	// KeepAlive is how often an idle event stream gets a comment line, so
	// that proxies and browsers keep it open. Default 15 s.
	KeepAlive time.Duration
}

// maxBody bounds a POST's body: a cell's code, or an answer.
const maxBody = 8 << 20

// Handler is the web view of one engine, for paths under /ui/.
type Handler struct {
	v    *view
	next http.Handler
}

// ServeHTTP answers a request under /ui/: 403 from another origin, 401
// without the token.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.next.ServeHTTP(w, r) }

// Owns reports whether r carries this handler's token, so that a process
// serving several users' views can pick the one a request belongs to. It
// takes the same time whatever the token.
func (h *Handler) Owns(r *http.Request) bool { return h.v.authorized(r) }

// New returns the handler for paths under /ui/. It panics on an empty
// token or a nil engine: a web view anyone could drive would run code for
// them.
func New(o Options) *Handler {
	if o.Token == "" || o.Engine == nil {
		panic("webview: New needs an engine and a token")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	v := &view{o: o, digest: sha256.Sum256([]byte(o.Token))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", v.page)
	mux.HandleFunc("GET /ui/charts/{name}", v.chartLib)
	mux.HandleFunc("GET /ui/api/sessions", v.sessions)
	mux.HandleFunc("GET /ui/api/sessions/{id}/cells", v.cells)
	mux.HandleFunc("GET /ui/api/events", v.events)
	mux.HandleFunc("POST /ui/api/sessions/{id}/run", v.run)
	mux.HandleFunc("POST /ui/api/sessions/{id}/interrupt", v.interrupt)
	mux.HandleFunc("POST /ui/api/sessions/{id}/input", v.input)
	mux.HandleFunc("GET /ui/api/sessions/{id}/widgets", v.widgets)
	mux.HandleFunc("POST /ui/api/sessions/{id}/widgets/{model}", v.widgetUpdate)
	mux.HandleFunc("GET /ui/api/sessions/{id}/notebook.ipynb", v.notebook)
	mux.HandleFunc("GET /ui/api/sessions/{id}/script.py", v.script)
	return &Handler{v: v, next: v.guard(mux)}
}

type view struct {
	o      Options
	digest [sha256.Size]byte
}

// guard refuses requests that name a foreign host on a loopback port (403,
// DNS rebinding), come from another origin (403) or lack the token (401),
// and sets the headers every answer carries. A refused request's body is
// never read, and its connection is closed after the answer
// (httpguard.RefuseUnread), as on the MCP endpoint: a client refused must
// not hold a connection by sending the body it declared slowly.
func (v *view) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The token is in the page's URL: no Referer may carry it away, no
		// cache keep it, no other site frame the page.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		if httpguard.Rebinding(r) {
			v.o.Logger.Warn("web view: refused a request naming another host (DNS rebinding?)", "remote", r.RemoteAddr, "host", r.Host, "path", r.URL.Path)
			httpguard.RefuseUnread(w)
			httpError(w, http.StatusForbidden, fmt.Sprintf("Host %q refused: on a loopback address the web view answers only 127.0.0.1, [::1] or localhost", r.Host))
			return
		}
		if !sameOrigin(r) {
			v.o.Logger.Warn("web view: refused a cross-origin request", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "path", r.URL.Path)
			httpguard.RefuseUnread(w)
			httpError(w, http.StatusForbidden, "cross-origin request refused: the web view answers only its own page")
			return
		}
		if !v.authorized(r) {
			v.o.Logger.Warn("web view: refused a request without the token", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			httpguard.RefuseUnread(w)
			h.Set("WWW-Authenticate", `Bearer realm="kernel-mcp web view"`)
			httpError(w, http.StatusUnauthorized, "the web view needs its token: open the URL kernel-mcp printed (…/ui/?token=…)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether a browser request comes from the page's own
// origin: no Origin header (not a browser, or a same-origin GET), or one
// naming this host. A cross-site fetch without Origin is refused by its
// Sec-Fetch-Site, except a GET that opens a document (the person clicking
// the view's link in a web chat): the page and the downloads, never the
// API or the event stream, which the page itself fetches same-origin.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate" && navigable(r.URL.Path)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// authorized compares the request's token with ours in constant time, over
// digests so that the length does not show either.
func (v *view) authorized(r *http.Request) bool {
	tok := r.URL.Query().Get("token")
	if scheme, cred, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "Bearer") {
		tok = strings.TrimSpace(cred)
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], v.digest[:]) == 1 && tok != ""
}

func (v *view) page(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// The page is one self-contained file: its own inline scripts and
	// styles, images as data: URLs, requests to this origin only.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	io.WriteString(w, v.o.HTML)
}

// chartLib serves a chart library the page loads when a chart appears
// (chartlib): gzipped to a client that accepts it, as the binary holds it.
// Behind the same guard as the page: the token, the Host, the origin.
func (v *view) chartLib(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutSuffix(r.PathValue("name"), ".js")
	gz, found := chartlib.Gzip(name)
	if !ok || !found {
		httpError(w, http.StatusNotFound, "no chart library "+r.PathValue("name"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(gz)))
		w.Write(gz)
		return
	}
	text, _ := chartlib.Text(name)
	h.Set("Content-Length", strconv.Itoa(len(text)))
	io.WriteString(w, text)
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (not refused with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// session finds the session the path names; a missing one is a 404.
func (v *view) session(w http.ResponseWriter, r *http.Request) (*engine.Session, bool) {
	ss, err := v.o.Engine.Lookup(r.PathValue("id"))
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return nil, false
	}
	return ss, true
}

// readJSON decodes a POST body into dst, answering 400 itself on failure.
func readJSON(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody))
			return false
		}
		httpError(w, http.StatusBadRequest, "the body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// httpError answers {"error": msg} with status.
func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// navigable reports whether a path is one a person may open from a link on
// another site: the page, or a session's download.
func navigable(path string) bool {
	if path == Prefix || path == strings.TrimSuffix(Prefix, "/") {
		return true
	}
	return strings.HasPrefix(path, Prefix+"api/sessions/") && (strings.HasSuffix(path, "/notebook.ipynb") || strings.HasSuffix(path, "/script.py"))
}
