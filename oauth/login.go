package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
)

// Upstream is the identity provider that the sign-in is delegated to. It
// is an OAuth client of that provider, with Issuer+PathCallback as its
// redirect URI. kernel-mcp never sees a password: the provider does.
type Upstream interface {
	// Name names the provider on pages ("JupyterHub at https://hub.example").
	Name() string
	// AuthCodeURL is where the browser goes to sign in. state comes back
	// to PathCallback; verifier is the PKCE verifier for this sign-in.
	AuthCodeURL(state, verifier string) string
	// Exchange turns the code the provider sent back into the user.
	Exchange(ctx context.Context, code, verifier string) (Identity, error)
}

// Identity is a user as the upstream provider vouches for them.
type Identity struct {
	// Name is the kernel-mcp user: their sessions, histories and folder.
	Name string
	// Groups the provider says they belong to, for AllowedGroups.
	Groups []string
	// Token is the access token the provider issued to kernel-mcp for
	// this user, when it is of use beyond the sign-in: JupyterHub's, whose
	// scopes may reach the user's own servers (Config.SignedIn). Nil for
	// an OpenID provider, whose tokens kernel-mcp does not keep.
	Token *oauth2.Token
}

// signInCookie names the cookie that binds one sign-in to the browser
// that started it: a callback or a consent from another browser (an
// attacker's link) is refused.
func signInCookie(id string) string {
	if len(id) > 16 {
		id = id[:16]
	}
	return "km_signin_" + id
}

// requestForBrowser returns the authorization request id if this browser
// started it.
func (s *Server) requestForBrowser(r *http.Request, id string) (*authRequest, bool) {
	c, err := r.Cookie(signInCookie(id))
	if err != nil {
		return nil, false
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	a := s.store.requestLocked(id)
	if a == nil || a.browser == "" || subtle.ConstantTimeCompare([]byte(a.browser), []byte(tokenDigest(c.Value))) != 1 {
		return nil, false
	}
	return a, true
}

// serveLogin starts the upstream sign-in for an authorization request
// that op validated and stored.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	binding := rand.Text()
	state := rand.Text()
	verifier := oauth2.GenerateVerifier()
	s.store.mu.Lock()
	a := s.store.requestLocked(id)
	if a != nil && a.browser == "" {
		a.browser = tokenDigest(binding)
		a.upstreamState = state
		a.upstreamVerify = verifier
	} else {
		a = nil
	}
	s.store.mu.Unlock()
	if a == nil {
		s.page(w, http.StatusBadRequest, "This sign-in is unknown, expired or already under way", "Start again from your MCP client.")
		return
	}
	s.toUpstream(w, r, id, binding, state, verifier)
}

// toUpstream binds a sign-in to this browser (a cookie named for id
// holding binding, as long as a sign-in may take) and sends the browser
// to the upstream provider's login with state and the PKCE verifier's
// challenge.
func (s *Server) toUpstream(w http.ResponseWriter, r *http.Request, id, binding, state, verifier string) {
	http.SetCookie(w, &http.Cookie{
		Name: signInCookie(id), Value: binding, Path: s.cookiePath(),
		MaxAge: int(authRequestLifetime / time.Second), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, s.cfg.Login.AuthCodeURL(state, verifier), http.StatusFound)
}

// serveCallback receives the upstream provider's answer, finds out who
// signed in, and asks them to consent.
func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	var a *authRequest
	s.store.mu.Lock()
	for _, x := range s.store.requests {
		if state != "" && x.upstreamState == state && s.store.now().Sub(x.Created) <= authRequestLifetime {
			a = x
		}
	}
	s.store.mu.Unlock()
	if a == nil {
		if state != "" && s.finishBrowserSignIn(w, r, state) {
			return
		}
		s.page(w, http.StatusBadRequest, "This sign-in is unknown or expired", "Start again from your MCP client.")
		return
	}
	if _, ok := s.requestForBrowser(r, a.ID); !ok {
		s.page(w, http.StatusBadRequest, "This sign-in was started in another browser", "Start again from your MCP client, in this browser.")
		return
	}
	if e := q.Get("error"); e != "" {
		s.logger.Info("oauth: upstream sign-in refused", "error", e, "description", q.Get("error_description"))
		s.finishWithError(w, r, a, oidc.ErrAccessDenied().WithDescription("%s did not sign you in: %s", s.cfg.Login.Name(), e))
		return
	}
	ident, err := s.cfg.Login.Exchange(r.Context(), q.Get("code"), a.upstreamVerify)
	if err != nil {
		s.logger.Warn("oauth: upstream sign-in failed", "provider", s.cfg.Login.Name(), "error", err)
		s.page(w, http.StatusBadGateway, "Signing in through "+s.cfg.Login.Name()+" failed", err.Error())
		return
	}
	if !ValidUserName(ident.Name) {
		s.page(w, http.StatusForbidden, "This user name cannot be used here", fmt.Sprintf("%s signed you in as %q; kernel-mcp user names are 1-64 letters, digits, '_', '.', '@' or '-'.", s.cfg.Login.Name(), ident.Name))
		return
	}
	if !s.allowed(ident) {
		s.logger.Warn("oauth: user not allowed", "user", ident.Name, "groups", ident.Groups)
		s.finishWithError(w, r, a, oidc.ErrAccessDenied().WithDescription("user %s is not allowed to use this server", ident.Name))
		return
	}
	s.signedIn(ident)
	s.store.mu.Lock()
	a.Subject = ident.Name
	a.Groups = slices.Clone(ident.Groups)
	a.AuthTime = s.store.now()
	a.consentToken = rand.Text()
	token := a.consentToken
	s.store.mu.Unlock()
	c, err := s.store.GetClientByClientID(r.Context(), a.ClientID)
	if err != nil {
		s.page(w, http.StatusBadRequest, "The client is no longer known", err.Error())
		return
	}
	s.consentPage(w, a, c.(*client), token)
}

// signedIn hands an allowed user's identity to Config.SignedIn.
func (s *Server) signedIn(id Identity) {
	if s.cfg.SignedIn != nil {
		s.cfg.SignedIn(id)
	}
}

// allowed applies AllowedUsers and AllowedGroups.
func (s *Server) allowed(id Identity) bool {
	if len(s.cfg.AllowedUsers) == 0 && len(s.cfg.AllowedGroups) == 0 {
		return true
	}
	if slices.Contains(s.cfg.AllowedUsers, id.Name) {
		return true
	}
	for _, g := range id.Groups {
		if slices.Contains(s.cfg.AllowedGroups, g) {
			return true
		}
	}
	return false
}

// stillAllowed says why the user of a grant may no longer use this server
// ("" if they may): the allowed users and groups changed since the sign-in,
// or Config.SignInNeeded asks for a new one.
// A grant made before groups were kept (groupsKnown false) passes a check
// by name only.
func (s *Server) stillAllowed(g *grant) string {
	if s.allowed(Identity{Name: g.Subject, Groups: g.Groups}) {
		if s.cfg.SignInNeeded != nil {
			return s.cfg.SignInNeeded(g.Subject)
		}
		return ""
	}
	if !g.GroupsKnown && len(s.cfg.AllowedGroups) > 0 {
		return "this sign-in of user " + g.Subject + " predates the check of groups: sign in again"
	}
	return "user " + g.Subject + " is no longer allowed to use this server"
}

// finishWithError ends an authorization request by sending the client an
// OAuth error at its (validated) redirect URI.
func (s *Server) finishWithError(w http.ResponseWriter, r *http.Request, a *authRequest, e *oidc.Error) {
	_ = s.store.DeleteAuthRequest(r.Context(), a.ID)
	op.AuthRequestError(w, r, a, e, s.provider)
}

// serveConsent takes the person's answer on the consent page.
func (s *Server) serveConsent(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, "Malformed answer", err.Error())
		return
	}
	id := r.PostForm.Get("id")
	a, ok := s.requestForBrowser(r, id)
	if !ok {
		s.page(w, http.StatusBadRequest, "This sign-in is unknown, expired or was started in another browser", "Start again from your MCP client.")
		return
	}
	s.store.mu.Lock()
	valid := a.consentToken != "" && subtle.ConstantTimeCompare([]byte(a.consentToken), []byte(r.PostForm.Get("consent_token"))) == 1
	if valid {
		a.consentToken = "" // one answer per page
	}
	s.store.mu.Unlock()
	if !valid {
		s.page(w, http.StatusBadRequest, "This consent page is stale", "Start again from your MCP client.")
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		s.logger.Info("oauth: consent denied", "user", a.Subject, "client_id", a.ClientID)
		s.finishWithError(w, r, a, oidc.ErrAccessDenied().WithDescription("the user denied access"))
		return
	}
	s.store.mu.Lock()
	a.done = true
	s.store.mu.Unlock()
	s.logger.Info("oauth: consent given", "user", a.Subject, "client_id", a.ClientID, "redirect_uri", a.RedirectURI)
	http.Redirect(w, r, s.cfg.Issuer+pathAuthorizeCallback+"?id="+url.QueryEscape(a.ID), http.StatusSeeOther)
}

// pageHeaders keep the pages out of frames, caches and referrers.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}} · kernel-mcp</title>
<style>body{font:16px system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em;color:#222}
dt{font-weight:600;margin-top:.6em}dd{margin:0;word-break:break-all;font-family:ui-monospace,monospace}
.buttons{margin-top:1.5em;display:flex;gap:1em}button{font-size:1em;padding:.5em 1.2em}
.note{color:#555;font-size:.9em}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Consent}}{{with .Consent}}
<p>Signed in as <strong>{{.User}}</strong> through {{.Provider}}.</p>
<p><strong>{{.ClientName}}</strong> asks to run code in your kernel-mcp sessions, read them and their histories, as you.</p>
<dl>
<dt>Client</dt><dd>{{.ClientID}}</dd>
<dt>Registered</dt><dd>{{.Registered}}</dd>
<dt>It will receive the access at</dt><dd>{{.RedirectURI}}</dd>
<dt>Access</dt><dd>{{.Scopes}}</dd>
</dl>
<p class="note">The client chose its own name. Allow only if you started this from that program, and the address above is where it listens.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="consent_token" value="{{.Token}}">
<div class="buttons"><button name="decision" value="allow">Allow</button><button name="decision" value="deny">Deny</button></div>
</form>{{end}}{{else}}<p>{{.Text}}</p>{{end}}
</body></html>
`))

type consentView struct {
	User, Provider, ClientName, ClientID, Registered, RedirectURI, Scopes, Action, ID, Token string
}

// page writes a page that says one thing.
func (s *Server) page(w http.ResponseWriter, status int, title, text string) {
	pageHeaders(w)
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, map[string]any{"Title": title, "Text": text})
}

// consentPage asks the signed-in person whether the client may act for
// them, naming the client, where the access goes, and the user.
func (s *Server) consentPage(w http.ResponseWriter, a *authRequest, c *client, token string) {
	reg := "by dynamic client registration, here"
	if c.Registered == registeredCIMD {
		reg = "by its metadata document at the client id's address"
	}
	scopes := "your sessions (" + Scope + ")"
	if slices.Contains(a.Scopes, oidc.ScopeOfflineAccess) {
		scopes += ", and staying signed in (offline_access)"
	}
	pageHeaders(w)
	_ = pageTemplate.Execute(w, map[string]any{
		"Title": "Allow " + c.displayName() + "?",
		"Consent": consentView{
			User: a.Subject, Provider: s.cfg.Login.Name(), ClientName: c.displayName(), ClientID: c.ID,
			Registered: reg, RedirectURI: a.RedirectURI, Scopes: scopes, Action: s.cfg.Issuer + PathConsent, ID: a.ID, Token: token,
		},
	})
}
