// --auth oauth: kernel-mcp as an OAuth 2.1 protected resource with its own
// authorization server (package oauth), people signing in through
// JupyterHub or an OpenID Connect provider, and one engine per user, made
// on the user's first call.

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/httpguard"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/oauth"
	"github.com/kernel-mcp/kernel-mcp/webview"
)

// The --auth values.
const (
	authToken = "token"
	authOAuth = "oauth"
)

// oauthConfig is --auth oauth's settings.
type oauthConfig struct {
	PublicURL        string // "": http://<listener> (loopback only)
	HubURL           string
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	OIDCUserClaim    string
	AllowedUsers     []string
	AllowedGroups    []string
	// hub is set when the sign-in goes through JupyterHub; hubConfig is
	// then the hub's settings, once startOAuth has read them.
	hub       bool
	hubConfig oauth.HubConfig
	// WebView (--ui) serves the web view at <public-url>/ui/, signing in
	// through the same provider; it has no listener of its own then.
	WebView, WebViewReadOnly bool
}

// parseOAuth reads --auth and, with oauth, its settings.
func parseOAuth(cfg *config, get, getenv func(string) string) error {
	mode := strings.ToLower(get("auth"))
	oauthOnly := []string{"public-url", "hub-url", "oidc-issuer", "oidc-client-id", "oidc-user-claim", "allowed-users", "allowed-groups"}
	switch mode {
	case "", authToken:
		for _, name := range oauthOnly {
			if v := get(name); v != "" {
				return invalid(name, v, "has no effect without --auth oauth / KERNEL_MCP_AUTH=oauth")
			}
		}
		return nil
	case authOAuth:
	default:
		return invalid("auth", get("auth"), "want token or oauth")
	}
	switch {
	case !cfg.isHTTP():
		return invalid("auth", mode, "OAuth is for the HTTP transports: use --transport streamable-http or sse")
	case cfg.Token != "" || cfg.TokenFile != "" || cfg.TokensFile != "":
		return invalid("auth", mode, "cannot be used with --token, --token-file or --tokens-file: with OAuth, people sign in and get tokens of their own")
	}
	oc := &oauthConfig{
		PublicURL:        strings.TrimSuffix(get("public-url"), "/"),
		HubURL:           get("hub-url"),
		OIDCIssuer:       get("oidc-issuer"),
		OIDCClientID:     get("oidc-client-id"),
		OIDCClientSecret: getenv("KERNEL_MCP_OIDC_CLIENT_SECRET"),
		OIDCUserClaim:    get("oidc-user-claim"),
		AllowedUsers:     commaList(get("allowed-users")),
		AllowedGroups:    commaList(get("allowed-groups")),
	}
	oc.hub = oc.HubURL != "" || (oc.OIDCIssuer == "" && getenv("JUPYTERHUB_API_TOKEN") != "")
	switch {
	case oc.hub && oc.OIDCIssuer != "":
		return invalid("oidc-issuer", oc.OIDCIssuer, "give either --hub-url (JupyterHub) or --oidc-issuer (an OpenID provider), not both")
	case !oc.hub && oc.OIDCIssuer == "":
		return invalid("auth", mode, "nobody could sign in: give --hub-url (or run as a JupyterHub service, which sets JUPYTERHUB_API_TOKEN) or --oidc-issuer with --oidc-client-id")
	case oc.OIDCIssuer != "" && oc.OIDCClientID == "":
		return invalid("oidc-issuer", oc.OIDCIssuer, "needs --oidc-client-id / KERNEL_MCP_OIDC_CLIENT_ID, kernel-mcp's client at the provider")
	case oc.hub && (oc.OIDCClientID != "" || oc.OIDCUserClaim != ""):
		return invalid("oidc-client-id", oc.OIDCClientID, "is for --oidc-issuer, not for JupyterHub")
	}
	if oc.PublicURL != "" {
		u, err := url.Parse(oc.PublicURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			return invalid("public-url", oc.PublicURL, "want https://host[:port]")
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil:
			return invalid("public-url", oc.PublicURL, "want https://host[:port][/path], without a query, fragment or credentials")
		case u.Scheme == "http" && !httpguard.LoopbackHost(u.Hostname()):
			return invalid("public-url", oc.PublicURL, "browsers and clients send passwords' equivalents here: use https (a TLS proxy in front), or a loopback address for a test")
		}
	} else if !httpguard.LoopbackHost(cfg.Host) {
		return invalid("auth", mode, "needs --public-url / KERNEL_MCP_PUBLIC_URL, the https address clients reach this server at, when --host is not loopback")
	}
	for _, name := range oc.AllowedUsers {
		if !oauth.ValidUserName(name) {
			return invalid("allowed-users", name, "not a user name kernel-mcp can serve (1-64 letters, digits, '_', '.', '@' or '-')")
		}
	}
	// The web view signs in through the provider too, whose one redirect
	// URI is on the public URL: it is served there, under /ui/, and
	// main's token-guarded view with its own listener is not started.
	oc.WebView, oc.WebViewReadOnly = cfg.UI != "", cfg.UIReadOnly
	cfg.UI, cfg.UIReadOnly = "", false
	cfg.OAuth = oc
	return nil
}

func commaList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// oauthSide is the authorization server and the users' engines.
type oauthSide struct {
	as    *oauth.Server
	users *userPool
	// public is --public-url parsed, when it names a host other than
	// this machine's loopback: a TLS proxy forwards its requests.
	public *url.URL
	// prefix is --public-url's path, which a proxy keeps in the requests
	// it forwards (JupyterHub's routes /services/<name>/ so): it is
	// stripped before the endpoints.
	prefix string
}

// startOAuth makes the authorization server for the listener at addr and
// the sign-in through the configured provider.
func startOAuth(ctx context.Context, cfg config, base mcpserver.Config, addr net.Addr, getenv func(string) string, stderr io.Writer, logger *slog.Logger) (*oauthSide, error) {
	oc := cfg.OAuth
	issuer := oc.PublicURL
	if issuer == "" {
		issuer = "http://" + addr.String()
	}
	redirect := issuer + oauth.PathCallback
	var login oauth.Upstream
	if oc.hub {
		hc, err := oauth.HubConfigFromEnv(getenv, oc.HubURL, redirect)
		if err != nil {
			return nil, err
		}
		// --hub-kernels reaches the hub's API with these too; cfg is
		// this call's copy, so the caller's settings stay as they were.
		withHub := *oc
		withHub.hubConfig = hc
		cfg.OAuth = &withHub
		if login, err = oauth.NewHub(hc); err != nil {
			return nil, err
		}
	} else {
		o, err := oauth.NewOIDC(ctx, oauth.OIDCConfig{
			Issuer: oc.OIDCIssuer, ClientID: oc.OIDCClientID, ClientSecret: oc.OIDCClientSecret,
			RedirectURL: redirect, UserClaim: oc.OIDCUserClaim,
		})
		if err != nil {
			return nil, err
		}
		login = o
	}
	return newOAuthSide(cfg, base, issuer, login, stderr, logger)
}

// newOAuthSide makes the authorization server at issuer, signing in
// through login, and the users' engines.
func newOAuthSide(cfg config, base mcpserver.Config, issuer string, login oauth.Upstream, stderr io.Writer, logger *slog.Logger) (*oauthSide, error) {
	oc := cfg.OAuth
	stateDir := ""
	if base.StateDir != "" {
		stateDir = filepath.Join(base.StateDir, "oauth")
	} else {
		logger.Warn("no state folder: OAuth keys, clients and grants are kept in memory, and every client must sign in again after a restart")
	}
	path := pathStreamable
	if cfg.Transport == transportSSE {
		path = pathSSE
	}
	home := ""
	if oc.WebView {
		home = webview.Prefix
	}
	hubKernels := newHubKernels(cfg, cfg.OAuth.hubConfig, base.StateDir, logger)
	as, err := oauth.New(oauth.Config{
		BrowserHome:   home,
		Issuer:        issuer,
		Resource:      issuer + path,
		StateDir:      stateDir,
		Login:         login,
		AllowedUsers:  oc.AllowedUsers,
		AllowedGroups: oc.AllowedGroups,
		Logger:        logger,
		SignedIn:      hubKernels.signedIn,
		SignInNeeded:  hubKernels.signInNeeded,
	})
	if err != nil {
		return nil, err
	}
	// zitadel's op logs through slog's default logger (its refusals of
	// bad requests, at warn): give it this one, so that its lines have the
	// same form and obey --log-level.
	slog.SetDefault(logger.With("component", "oauth"))
	logger.Info("OAuth sign-in", "issuer", issuer, "provider", login.Name(), "allowed_users", oc.AllowedUsers, "allowed_groups", oc.AllowedGroups)
	users := newUserPool(cfg, base, logger)
	users.hubKernels = hubKernels
	if oc.WebView {
		users.uiURL = issuer + webview.Prefix
		// Always shown, whatever the log level: people need it.
		fmt.Fprintf(stderr, "kernel-mcp: web view at %s (signing in through %s)\n", users.uiURL, login.Name())
	}
	side := &oauthSide{as: as, users: users}
	if u, err := url.Parse(issuer); err == nil {
		side.prefix = u.Path
		if !httpguard.LoopbackHost(u.Hostname()) {
			side.public = u
		}
	}
	// Always shown, whatever the log level: behind a proxy, the listener's
	// own address printed by main is not the one clients use.
	fmt.Fprintf(stderr, "kernel-mcp: clients connect to %s%s and sign in through %s\n", issuer, path, login.Name())
	return side, nil
}

// handler serves the authorization server and, behind the token check,
// each signed-in user's own MCP endpoint.
func (o *oauthSide) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", o.as.Handler())
	mcp := o.as.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authorized(r)
		o.users.ServeHTTP(w, r)
	}))
	mux.Handle(pathStreamable, mcp)
	mux.Handle(pathSSE, mcp)
	if o.users.uiURL != "" {
		mux.HandleFunc(webview.Prefix, o.serveWebView)
	}
	if o.prefix == "" {
		return o.fromProxy(mux)
	}
	outer := http.NewServeMux()
	outer.Handle(o.prefix+"/", http.StripPrefix(o.prefix, mux))
	if o.users.uiURL != "" {
		// The view's page is <prefix>/ui/: its URLs are relative to it. The
		// mux below would send <prefix>/ui to /ui/, at the host's root.
		outer.Handle("GET "+o.prefix+strings.TrimSuffix(webview.Prefix, "/"), http.RedirectHandler(o.prefix+webview.Prefix, http.StatusMovedPermanently))
	}
	// RFC 8414's place for the metadata of an issuer with a path is at the
	// host's root with the path after it; a proxy that routes it here gets
	// clients there at their first try (others find
	// <issuer>/.well-known/openid-configuration after it).
	metadata := oauth.PathAuthServerMetadata
	outer.Handle("GET "+metadata+o.prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = metadata, ""
		mux.ServeHTTP(w, r)
	}))
	return o.fromProxy(outer)
}

// fromProxy lets through the guards below it the requests a TLS proxy
// forwards for the public URL. The MCP endpoint and the web view refuse a
// request that arrives on a loopback address naming another Host (DNS
// rebinding), and the view one whose Origin is not http://<Host>; a proxy
// on this machine sends exactly that: Host and Origin of the public URL
// over loopback. A request naming the public URL's host is therefore
// taken as addressed to the listener itself, and an Origin equal to the
// public URL's as its own. A rebinding page cannot name that host: its
// browser sends the attacker's name.
func (o *oauthSide) fromProxy(h http.Handler) http.Handler {
	if o.public == nil {
		return h
	}
	origin := o.public.Scheme + "://" + o.public.Host
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if ok && strings.EqualFold(r.Host, o.public.Host) {
			r = r.Clone(r.Context())
			r.Host = la.String()
			if strings.EqualFold(r.Header.Get("Origin"), origin) {
				r.Header.Set("Origin", "http://"+r.Host)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// serveWebView serves the signed-in browser's user's web view. A browser
// without a session that opens the page is sent to sign in; other requests
// get 401. The view's own token check is satisfied here, on the server
// side, for the user the session names: the token never reaches the page.
func (o *oauthSide) serveWebView(w http.ResponseWriter, r *http.Request) {
	user := o.as.BrowserUser(r)
	if user == "" {
		if r.Method == http.MethodGet && r.URL.Path == webview.Prefix {
			http.Redirect(w, r, o.as.BrowserSignInURL(webview.Prefix), http.StatusFound)
			return
		}
		httpguard.RefuseUnread(w)
		http.Error(w, "401 unauthorized: sign in at "+o.users.uiURL, http.StatusUnauthorized)
		return
	}
	view, err := o.users.view(user)
	if err != nil {
		o.users.logger.Warn("cannot serve a user's web view", "user", user, "error", err)
		http.Error(w, fmt.Sprintf("503 service unavailable: %v", err), http.StatusServiceUnavailable)
		return
	}
	authorized(r)
	r = r.Clone(r.Context())
	q := r.URL.Query()
	q.Del("token")
	r.URL.RawQuery = q.Encode()
	r.Header.Set("Authorization", "Bearer "+view.token)
	view.h.ServeHTTP(w, r)
}

// userPool holds one MCP server per signed-in user, made on the user's
// first call, as --tokens-file does for its users at start: sessions,
// histories and state folder <state dir>/users/<name> of their own.
type userPool struct {
	cfg    config
	base   mcpserver.Config
	total  *engine.KernelLimit
	logger *slog.Logger

	uiURL string // the web view's address; "" serves none
	// hubKernels, when set, runs each user's kernels in their JupyterHub
	// server (hubkernels.go).
	hubKernels *hubKernels

	mu     sync.Mutex
	users  map[string]*userServer
	list   []*mcpserver.Server
	closed bool
}

// userServer is one signed-in user's MCP endpoint and web view.
type userServer struct {
	mcp  http.Handler
	view *userView
}

// userView is a user's web view and the token it checks, which only this
// process knows.
type userView struct {
	h     *webview.Handler
	token string
}

func newUserPool(cfg config, base mcpserver.Config, logger *slog.Logger) *userPool {
	return &userPool{cfg: cfg, base: base, total: engine.NewKernelLimit(base.MaxSessions), logger: logger, users: map[string]*userServer{}}
}

// errClosed answers a call that arrives while the server shuts down.
var errClosed = errors.New("the server is shutting down")

// endpoint returns the user's MCP endpoint, making their server first.
func (p *userPool) endpoint(name string) (http.Handler, error) {
	u, err := p.user(name)
	if err != nil {
		return nil, err
	}
	return u.mcp, nil
}

// view returns the user's web view, making their server first.
func (p *userPool) view(name string) (*userView, error) {
	u, err := p.user(name)
	if err != nil {
		return nil, err
	}
	if u.view == nil {
		return nil, errors.New("the web view is off")
	}
	return u.view, nil
}

// user returns the user's server, made on first use.
func (p *userPool) user(name string) (*userServer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if u := p.users[name]; u != nil {
		return u, nil
	}
	c := p.base
	c.SharedLimit = p.total
	c.MultiUser = true
	c.MaxSessions = p.cfg.MaxSessionsPerUser
	if c.StateDir != "" {
		c.StateDir = filepath.Join(c.StateDir, "users", name)
	}
	c.Logger = p.base.Logger.With("user", name)
	c.UIURL = p.uiURL
	p.hubKernels.apply(&c, name)
	srv, err := mcpserver.New(c)
	if err != nil {
		return nil, err
	}
	u := &userServer{mcp: mcpHTTPHandler(p.cfg, srv, c.Logger)}
	if p.uiURL != "" {
		html, err := mcpserver.WebHTML()
		if err != nil {
			srv.Close()
			return nil, err
		}
		token := rand.Text() + rand.Text()
		u.view = &userView{token: token, h: webview.New(webview.Options{
			Engine: srv.Engine(), Token: token, ReadOnly: p.cfg.OAuth.WebViewReadOnly, HTML: html, Logger: c.Logger,
		})}
	}
	p.users[name] = u
	p.list = append(p.list, srv)
	p.logger.Info("first call of a signed-in user", "user", name)
	return u, nil
}

// ServeHTTP sends a request that passed the token check to its user's
// endpoint.
func (p *userPool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := oauth.UserFromContext(r.Context())
	if !oauth.ValidUserName(name) {
		http.Error(w, "403 forbidden: the token names no user this server can serve", http.StatusForbidden)
		return
	}
	h, err := p.endpoint(name)
	if err != nil {
		p.logger.Warn("cannot serve a user", "user", name, "error", err)
		http.Error(w, fmt.Sprintf("503 service unavailable: %v", err), http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

// Close shuts every user's kernels down; calls after it are refused.
func (p *userPool) Close() error {
	p.mu.Lock()
	p.closed = true
	list := p.list
	p.list = nil
	p.mu.Unlock()
	errs := make([]error, len(list))
	for i, srv := range list {
		errs[i] = srv.Close()
	}
	p.hubKernels.close()
	return errors.Join(errs...)
}
