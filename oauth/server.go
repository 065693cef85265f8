package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Paths served by Handler, below the issuer URL.
const (
	PathAuthServerMetadata = "/.well-known/oauth-authorization-server"
	PathOpenIDDiscovery    = "/.well-known/openid-configuration"
	PathResourceMetadata   = "/.well-known/oauth-protected-resource"
	PathAuthorize          = "/oauth/authorize"
	pathAuthorizeCallback  = PathAuthorize + "/callback" // op's: issues the code
	PathToken              = "/oauth/token"
	PathRevoke             = "/oauth/revoke"
	PathKeys               = "/oauth/keys"
	PathRegister           = "/oauth/register"
	PathLogin              = "/oauth/login"
	// PathCallback is where the upstream provider sends the browser back
	// after its sign-in: register Issuer+PathCallback there.
	PathCallback = "/oauth/callback"
	PathConsent  = "/oauth/consent"
)

// Default lifetimes.
const (
	DefaultAccessTokenLifetime  = 10 * time.Minute
	DefaultRefreshTokenLifetime = 30 * 24 * time.Hour
	DefaultKeyLifetime          = 90 * 24 * time.Hour
)

// Config configures a Server.
type Config struct {
	// Issuer is the server's public base URL, as clients reach it:
	// https://host[:port], and a path when a proxy serves it below one
	// (its metadata is then found at Issuer/.well-known/openid-configuration).
	// Plain http only for a loopback host.
	Issuer string
	// Resource is the MCP endpoint's URL, the audience of every token.
	Resource string
	// StateDir is the folder that keeps keys, clients and grants (made
	// 0700, the file 0600); "" keeps them in memory only.
	StateDir string
	// Login is the identity provider the sign-in is delegated to.
	Login Upstream
	// AllowedUsers and AllowedGroups, when either is set, admit only the
	// users named, or members of a group named.
	AllowedUsers  []string
	AllowedGroups []string
	// SignedIn, if set, is called with each user the provider signed in
	// and the allowed lists admit, before the consent page: the MCP
	// client's sign-in and the web view's alike. It must not block.
	SignedIn func(Identity)
	// SignInNeeded, if set, says why a user's sign-in can no longer be
	// used ("" if it can): something the sign-in gave the server is gone
	// or expired (the JupyterHub token of --hub-kernels). It applies as
	// the allowed lists do, at every use of a token and every refresh:
	// 401 and invalid_grant, so that the MCP client signs in again. It is
	// called with the server's store locked, and must not block.
	SignInNeeded func(user string) string
	// Lifetimes; zero means the default.
	AccessTokenLifetime  time.Duration
	RefreshTokenLifetime time.Duration
	// KeyLifetime: a signing key older than this is replaced at start.
	KeyLifetime time.Duration
	// BrowserHome is the path prefix of the pages a browser session may
	// return to after PathBrowserSignIn (the web view's /ui/), and, below
	// the issuer's path, its cookie's Path; "" offers no browser sessions.
	BrowserHome string
	// HTTPClient lends its TLS settings (the certificates trusted) to the
	// fetches of Client ID Metadata Documents; nil: the system's. Its
	// transport is not used: those fetches dial public addresses only
	// (metadatadoc.go).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock, for tests; nil: time.Now.
	Now func() time.Time

	// For tests: how metadata document hosts are resolved (nil: the
	// system's resolver), and how long a fetch may take (0: the default).
	lookupHost   lookupFunc
	fetchTimeout time.Duration
}

// Server is the authorization server and the resource side's token check.
type Server struct {
	cfg      Config
	issuer   *url.URL
	store    *storage
	provider *op.Provider
	verifier *op.AccessTokenVerifier
	logger   *slog.Logger
	secure   bool // issuer is https: cookies are Secure

	cacheMu sync.Mutex
	cache   map[string]cachedToken

	registrations *rateLimiter

	// Browser sign-ins in progress (browser.go), guarded by store.mu; the
	// sessions they end in are in the state.
	browserSignIns map[string]*browserSignIn // by upstream state
}

// cachedToken is a verified access token, kept until it expires so that a
// call costs a map lookup rather than a signature check.
type cachedToken struct {
	jti  string
	info *auth.TokenInfo
}

// maxCachedTokens bounds the verified-token cache.
const maxCachedTokens = 10000

// New makes the server and loads (or creates) its state.
func New(cfg Config) (*Server, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || iss.Host == "" || (iss.Scheme != "https" && iss.Scheme != "http") {
		return nil, fmt.Errorf("oauth issuer %q: want https://host[:port]", cfg.Issuer)
	}
	if iss.RawQuery != "" || iss.ForceQuery || iss.Fragment != "" || iss.User != nil || strings.Contains(iss.Path, "//") || strings.Contains(iss.Path, "/.") {
		return nil, fmt.Errorf("oauth issuer %q: want https://host[:port][/path], with no query, fragment or credentials", cfg.Issuer)
	}
	if iss.Scheme == "http" && !loopbackHost(iss.Hostname()) {
		return nil, fmt.Errorf("oauth issuer %q: plain http is allowed only on this machine's loopback address; serve https (a TLS proxy in front) and give its https URL", cfg.Issuer)
	}
	iss.Path = strings.TrimSuffix(iss.Path, "/")
	iss.RawPath = ""
	cfg.Issuer = iss.String()
	if _, err := url.Parse(cfg.Resource); err != nil || !strings.HasPrefix(cfg.Resource, cfg.Issuer+"/") {
		return nil, fmt.Errorf("oauth resource %q: want a URL below the issuer %s", cfg.Resource, cfg.Issuer)
	}
	if cfg.Login == nil {
		return nil, errors.New("oauth: no identity provider to delegate the sign-in to")
	}
	if cfg.AccessTokenLifetime <= 0 {
		cfg.AccessTokenLifetime = DefaultAccessTokenLifetime
	}
	if cfg.RefreshTokenLifetime <= 0 {
		cfg.RefreshTokenLifetime = DefaultRefreshTokenLifetime
	}
	if cfg.KeyLifetime <= 0 {
		cfg.KeyLifetime = DefaultKeyLifetime
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	st := &persisted{Version: stateVersion}
	st.init()
	if cfg.StateDir != "" {
		if st, err = loadState(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, issuer: iss, logger: cfg.Logger, secure: iss.Scheme == "https", cache: map[string]cachedToken{},
		registrations:  newRateLimiter(),
		browserSignIns: map[string]*browserSignIn{}}
	// A server on loopback is one for this machine (a test, a developer):
	// its clients' documents may be there too.
	fetcher := newMetadataFetcher(cfg.HTTPClient, loopbackHost(iss.Hostname()), cfg.lookupHost, cfg.fetchTimeout)
	s.store = &storage{
		dir:          cfg.StateDir,
		resource:     cfg.Resource,
		accessTTL:    cfg.AccessTokenLifetime,
		refreshTTL:   cfg.RefreshTokenLifetime,
		now:          cfg.Now,
		loginURL:     func(id string) string { return cfg.Issuer + PathLogin + "?id=" + url.QueryEscape(id) },
		stillAllowed: s.stillAllowed,
		fetchCIMD:    fetcher.fetch,
		logger:       cfg.Logger,
		st:           st,
		requests:     map[string]*authRequest{},
		codes:        map[string]string{},
		cimd:         map[string]cachedClient{},
	}
	s.store.mu.Lock()
	err = s.store.loadKeysLocked()
	s.store.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if newest := st.Keys[len(st.Keys)-1]; cfg.Now().Sub(newest.Created) > cfg.KeyLifetime {
		if err := s.store.rotateKey(); err != nil {
			return nil, err
		}
	}

	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return nil, err
	}
	opts := []op.Option{
		op.WithCustomAuthEndpoint(op.NewEndpoint(PathAuthorize)),
		op.WithCustomTokenEndpoint(op.NewEndpoint(PathToken)),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(PathRevoke)),
		op.WithCustomKeysEndpoint(op.NewEndpoint(PathKeys)),
		op.WithCustomUserinfoEndpoint(op.NewEndpoint("/oauth/userinfo")),
		op.WithCustomIntrospectionEndpoint(op.NewEndpoint("/oauth/introspect")),
		op.WithCustomEndSessionEndpoint(op.NewEndpoint("/oauth/end_session")),
		op.WithAccessTokenVerifierOpts(op.WithSupportedAccessTokenSigningAlgorithms(string(signingAlgorithm))),
	}
	if iss.Scheme == "http" {
		opts = append(opts, op.WithAllowInsecure())
	}
	s.provider, err = op.NewProvider(&op.Config{
		CryptoKey:             cryptoKey,
		CodeMethodS256:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       []string{Scope, oidc.ScopeOfflineAccess},
	}, s.store, op.StaticIssuer(cfg.Issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("oauth: %v", err)
	}
	s.verifier = op.NewAccessTokenVerifier(cfg.Issuer, &op.OpenIDKeySet{Storage: s.store},
		op.WithSupportedAccessTokenSigningAlgorithms(string(signingAlgorithm)))
	return s, nil
}

// Close releases the server. It holds no goroutine; Close exists so that
// callers need not know.
func (s *Server) Close() error { return nil }

// RotateKey makes a new signing key. Tokens signed by the old one stay
// valid until they expire; the old key is then forgotten.
func (s *Server) RotateKey() error { return s.store.rotateKey() }

// ResourceMetadataURL is the address of the protected resource metadata
// (RFC 9728) for the resource, as WWW-Authenticate names it.
func (s *Server) ResourceMetadataURL() string {
	return s.cfg.Issuer + PathResourceMetadata + strings.TrimPrefix(s.cfg.Resource, s.cfg.Issuer)
}

// cookiePath is the path of the sign-in cookies: the issuer's path, then
// /oauth/.
func (s *Server) cookiePath() string { return s.issuer.Path + "/oauth/" }

// Handler serves the authorization server: its metadata, the
// authorization, token, revocation, keys and registration endpoints, the
// sign-in and consent pages, and the resource's metadata. Its paths are
// relative to the issuer: with an issuer that has a path, serve it with
// that prefix stripped. It answers 404 to any other path.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               s.cfg.Resource,
		AuthorizationServers:   []string{s.cfg.Issuer},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "kernel-mcp",
	})
	mux.Handle("GET "+strings.TrimPrefix(s.ResourceMetadataURL(), s.cfg.Issuer), prm)
	mux.Handle("GET "+PathResourceMetadata, prm)
	mux.HandleFunc("GET "+PathAuthServerMetadata, s.serveMetadata)
	mux.HandleFunc("GET "+PathOpenIDDiscovery, s.serveMetadata)
	mux.Handle(PathAuthorize, s.withIss(s.serveAuthorize))
	mux.Handle(pathAuthorizeCallback, s.withIss(s.serveAuthorizeCallback))
	mux.Handle("POST "+PathToken, s.checkResourceParam(s.provider))
	mux.Handle("POST "+PathRevoke, s.provider)
	mux.Handle("GET "+PathKeys, s.provider)
	mux.HandleFunc("POST "+PathRegister, s.serveRegister)
	mux.HandleFunc("GET "+PathLogin, s.serveLogin)
	mux.Handle("GET "+PathCallback, s.withIss(s.serveCallback))
	mux.Handle("POST "+PathConsent, s.withIss(s.serveConsent))
	if s.cfg.BrowserHome != "" {
		mux.HandleFunc("GET "+PathBrowserSignIn, s.serveBrowserSignIn)
	}
	return mux
}

// metadata is the RFC 8414 authorization server metadata.
func (s *Server) metadata() *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                                 s.cfg.Issuer,
		AuthorizationEndpoint:                  s.cfg.Issuer + PathAuthorize,
		TokenEndpoint:                          s.cfg.Issuer + PathToken,
		JWKSURI:                                s.cfg.Issuer + PathKeys,
		RegistrationEndpoint:                   s.cfg.Issuer + PathRegister,
		RevocationEndpoint:                     s.cfg.Issuer + PathRevoke,
		ScopesSupported:                        []string{Scope, oidc.ScopeOfflineAccess},
		ResponseTypesSupported:                 []string{string(oidc.ResponseTypeCode)},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{string(oidc.GrantTypeCode), string(oidc.GrantTypeRefreshToken)},
		TokenEndpointAuthMethodsSupported:      []string{string(oidc.AuthMethodNone)},
		RevocationEndpointAuthMethodsSupported: []string{string(oidc.AuthMethodNone)},
		CodeChallengeMethodsSupported:          []string{string(oidc.CodeChallengeMethodS256)},
		ClientIDMetadataDocumentSupported:      true,
		// withIss adds iss to every authorization response.
		AuthorizationResponseIssParameterSupported: true,
	}
}

// withIss adds the iss parameter (RFC 9207) to every authorization
// response h sends the browser back to a client with, errors included, so
// that a client talking to several servers can tell which one answered.
// Redirects within this server (absolute below the issuer, or relative)
// and to the upstream provider's sign-in are left alone; h never sends
// one of the latter.
func (s *Server) withIss(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(issWriter{w, s.cfg.Issuer}, r)
	})
}

type issWriter struct {
	http.ResponseWriter
	issuer string
}

func (w issWriter) WriteHeader(code int) {
	if code >= 300 && code < 400 {
		if loc := w.Header().Get("Location"); loc != "" {
			w.Header().Set("Location", addIss(loc, w.issuer))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func addIss(loc, issuer string) string {
	u, err := url.Parse(loc)
	if err != nil || !u.IsAbs() || loc == issuer || strings.HasPrefix(loc, issuer+"/") {
		return loc
	}
	q := u.Query()
	q.Set("iss", issuer)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, s.metadata())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// oauthError writes an OAuth error response (RFC 6749 section 5.2).
func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// resourceParamOK reports whether the request's resource parameters
// (RFC 8707), if any, all name this server's resource.
func (s *Server) resourceParamOK(r *http.Request) (bool, string) {
	if err := r.ParseForm(); err != nil {
		return false, "malformed request: " + err.Error()
	}
	for _, res := range r.Form["resource"] {
		if strings.TrimSuffix(res, "/") != strings.TrimSuffix(s.cfg.Resource, "/") {
			return false, fmt.Sprintf("this server issues tokens for %s only, not for %q", s.cfg.Resource, res)
		}
	}
	return true, ""
}

// checkResourceParam refuses a token request for another resource.
func (s *Server) checkResourceParam(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, why := s.resourceParamOK(r); !ok {
			oauthError(w, http.StatusBadRequest, "invalid_target", why)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveAuthorize is op's authorization endpoint with kernel-mcp's rules
// added by authorizer.ValidateAuthRequest; a request for another resource
// is refused before any of it.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if ok, why := s.resourceParamOK(r); !ok {
		http.Error(w, "invalid_target: "+why, http.StatusBadRequest)
		return
	}
	if m := r.Form.Get("response_mode"); m != "" && m != string(oidc.ResponseModeQuery) {
		http.Error(w, "invalid_request: response_mode "+m+" is not supported: only query", http.StatusBadRequest)
		return
	}
	ctx := op.ContextWithIssuer(r.Context(), s.cfg.Issuer)
	op.Authorize(w, r.WithContext(ctx), authorizer{s.provider})
}

// authorizer is op's provider with kernel-mcp's rules on authorization
// requests: op's own checks (client, redirect URI, scopes), then PKCE
// with S256 required, and the scope defaulting to Scope.
type authorizer struct{ *op.Provider }

var _ op.AuthorizeValidator = authorizer{}

func (a authorizer) ValidateAuthRequest(ctx context.Context, req *oidc.AuthRequest, storage op.Storage, verifier *op.IDTokenHintVerifier) (string, error) {
	if len(req.Scopes) == 0 {
		req.Scopes = oidc.SpaceDelimitedArray{Scope}
	}
	c, err := storage.GetClientByClientID(ctx, req.ClientID)
	if err != nil {
		// Never redirect to a URI of a client that is unknown: op answers
		// this error with a 400 page that shows its description only.
		e := oidc.ErrInvalidRequestRedirectURI().WithDescription("invalid_client: %v", err)
		e.ErrorType = oidc.InvalidClient
		return "", e
	}
	sub, err := op.ValidateAuthRequestClient(ctx, req, c, verifier)
	if err != nil {
		return "", err
	}
	if req.CodeChallenge == "" {
		return "", oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method=S256")
	}
	if req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return "", oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	}
	if !slices.Contains(req.Scopes, Scope) {
		req.Scopes = append(req.Scopes, Scope)
	}
	return sub, nil
}

// serveAuthorizeCallback is op's endpoint that issues the code once the
// user consented; only the browser that signed in may reach it.
func (s *Server) serveAuthorizeCallback(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requestForBrowser(r, r.URL.Query().Get("id"))
	if !ok || !a.done {
		s.page(w, http.StatusBadRequest, "This sign-in is unknown, expired or unfinished", "Start again from your MCP client.")
		return
	}
	s.provider.ServeHTTP(w, r)
}

// serveRegister is Dynamic Client Registration (RFC 7591). Every client
// is public and gets no secret.
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if ok, after := s.registrations.allow(r.RemoteAddr, s.cfg.Now()); !ok {
		secs := max(1, int((after+time.Second-1)/time.Second))
		s.logger.Warn("oauth: client registration refused: too many", "remote", r.RemoteAddr, "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		oauthError(w, http.StatusTooManyRequests, "temporarily_unavailable",
			fmt.Sprintf("too many client registrations from this address or in all: try again in %d s (a client registers once and keeps its client_id)", secs))
		return
	}
	var m clientMetadata
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxMetadataDocument))
	if err := dec.Decode(&m); err != nil {
		oauthError(w, http.StatusBadRequest, errInvalidClientMetadata.Error(), "the body is not client metadata JSON: "+err.Error())
		return
	}
	if m.ClientID != "" {
		oauthError(w, http.StatusBadRequest, errInvalidClientMetadata.Error(), "client_id is given out by the server, not chosen by the client")
		return
	}
	c, err := m.validate()
	if err != nil {
		code := errInvalidClientMetadata
		if errors.Is(err, errInvalidRedirectURI) {
			code = errInvalidRedirectURI
		}
		oauthError(w, http.StatusBadRequest, code.Error(), err.Error())
		return
	}
	if err := s.store.registerClient(c); err != nil {
		s.logger.Warn("oauth: client registration failed", "error", err)
		status := http.StatusInternalServerError
		if errors.Is(err, errClientsFull) {
			status = http.StatusServiceUnavailable
		}
		oauthError(w, status, "temporarily_unavailable", err.Error())
		return
	}
	s.logger.Info("oauth: client registered", "client_id", c.ID, "client_name", c.Name, "redirect_uris", c.Redirects)
	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.Created.Unix(),
		"redirect_uris":              c.Redirects,
		"grant_types":                c.Grants,
		"response_types":             []string{string(oidc.ResponseTypeCode)},
		"token_endpoint_auth_method": string(oidc.AuthMethodNone),
	}
	// Absent rather than empty: clients check that a client_uri is a URL.
	if c.Name != "" {
		resp["client_name"] = c.Name
	}
	if c.URI != "" {
		resp["client_uri"] = c.URI
	}
	writeJSON(w, http.StatusCreated, resp)
}

// validUserName keeps user names usable as folder names and in logs.
var validUserName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// ValidUserName reports whether name can be a kernel-mcp user's name: 1-64
// letters, digits, '_', '.', '@' or '-', starting with a letter or digit,
// never "..".
func ValidUserName(name string) bool {
	return validUserName.MatchString(name) && !strings.Contains(name, "..")
}
