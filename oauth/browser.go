package oauth

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// PathBrowserSignIn starts a browser session: GET ?next=<path below
// Config.BrowserHome>. The person signs in at the upstream provider as for
// a client, without a consent page (the page is kernel-mcp's own), and
// comes back to next with a session cookie.
const PathBrowserSignIn = "/oauth/session"

// Browser sessions.
const (
	browserCookie      = "km_session"
	browserSessionLife = 12 * time.Hour
	maxBrowserSessions = 10000
)

// browserSignIn is a browser session's sign-in in progress.
type browserSignIn struct {
	next     string
	browser  string // digest of the binding cookie
	verifier string
	created  time.Time
}

// browserSession is a signed-in browser, kept in the state file so that
// a restart does not sign it out. Its groups are those of the sign-in:
// the session is checked against the allowed users and groups of the
// server as it runs now, not as it ran then.
type browserSession struct {
	User    string    `json:"user"`
	Groups  []string  `json:"groups,omitempty"`
	Expires time.Time `json:"expires"`
}

// localNext accepts a path below home to send the browser back to, and
// nothing that could leave this origin.
func localNext(next, home string) (string, bool) {
	if home == "" || !strings.HasPrefix(next, home) || strings.ContainsAny(next, "\\\r\n") {
		return "", false
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "", false
	}
	return next, true
}

// serveBrowserSignIn starts a browser's sign-in at the upstream provider.
func (s *Server) serveBrowserSignIn(w http.ResponseWriter, r *http.Request) {
	next, ok := localNext(r.URL.Query().Get("next"), s.cfg.BrowserHome)
	if !ok {
		s.page(w, http.StatusBadRequest, "Nowhere to go back to", "This sign-in names no page of this server to return to.")
		return
	}
	state, binding, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	s.store.mu.Lock()
	now := s.store.now()
	for k, b := range s.browserSignIns {
		if now.Sub(b.created) > authRequestLifetime {
			delete(s.browserSignIns, k)
		}
	}
	full := len(s.browserSignIns) >= maxAuthRequests
	if !full {
		s.browserSignIns[state] = &browserSignIn{next: next, browser: tokenDigest(binding), verifier: verifier, created: now}
	}
	s.store.mu.Unlock()
	if full {
		s.page(w, http.StatusServiceUnavailable, "Too many sign-ins in progress", "Try again in a few minutes.")
		return
	}
	s.toUpstream(w, r, state, binding, state, verifier)
}

// finishBrowserSignIn is the upstream provider's answer to a browser
// sign-in: it reports false when state names none.
func (s *Server) finishBrowserSignIn(w http.ResponseWriter, r *http.Request, state string) bool {
	s.store.mu.Lock()
	b := s.browserSignIns[state]
	delete(s.browserSignIns, state)
	s.store.mu.Unlock()
	if b == nil {
		return false
	}
	c, err := r.Cookie(signInCookie(state))
	if err != nil || tokenDigest(c.Value) != b.browser || s.store.now().Sub(b.created) > authRequestLifetime {
		s.page(w, http.StatusBadRequest, "This sign-in is unknown, expired or was started in another browser", "Open the page again.")
		return true
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.page(w, http.StatusForbidden, s.cfg.Login.Name()+" did not sign you in", e)
		return true
	}
	ident, err := s.cfg.Login.Exchange(r.Context(), q.Get("code"), b.verifier)
	if err != nil {
		s.logger.Warn("oauth: upstream sign-in failed", "provider", s.cfg.Login.Name(), "error", err)
		s.page(w, http.StatusBadGateway, "Signing in through "+s.cfg.Login.Name()+" failed", err.Error())
		return true
	}
	if !ValidUserName(ident.Name) || !s.allowed(ident) {
		s.logger.Warn("oauth: user not allowed in the browser", "user", ident.Name, "groups", ident.Groups)
		s.page(w, http.StatusForbidden, "Not allowed", "User "+ident.Name+" may not use this server.")
		return true
	}
	s.signedIn(ident)
	id := rand.Text() + rand.Text()
	s.store.mu.Lock()
	now := s.store.now()
	sessions := s.store.st.BrowserSessions
	for k, bs := range sessions {
		if now.After(bs.Expires) {
			delete(sessions, k)
		}
	}
	full := len(sessions) >= maxBrowserSessions
	if !full {
		sessions[tokenDigest(id)] = &browserSession{User: ident.Name, Groups: ident.Groups, Expires: now.Add(browserSessionLife)}
		err = s.store.saveLocked()
	}
	s.store.mu.Unlock()
	if full {
		s.page(w, http.StatusServiceUnavailable, "Too many people signed in", "Try again later.")
		return true
	}
	if err != nil {
		s.logger.Error("oauth: browser session not saved", "error", err)
		s.page(w, http.StatusInternalServerError, "The sign-in could not be saved", err.Error())
		return true
	}
	s.logger.Info("oauth: browser signed in", "user", ident.Name)
	// Lax, not Strict: the browser arrives here from the provider's site,
	// and the page it goes on to must see the cookie. The pages' own API
	// refuses other origins. Sent to the pages below BrowserHome only, and
	// below the issuer's path (a proxy's /services/<name>/), not to other
	// services on the same host.
	http.SetCookie(w, &http.Cookie{
		Name: browserCookie, Value: id, Path: s.issuer.Path + s.cfg.BrowserHome,
		MaxAge: int(browserSessionLife / time.Second), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, s.issuer.Path+b.next, http.StatusSeeOther)
	return true
}

// BrowserUser is the user a browser signed in as through PathBrowserSignIn,
// or "" when it has no live session.
func (s *Server) BrowserUser(r *http.Request) string {
	c, err := r.Cookie(browserCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	s.store.mu.Lock()
	bs, ok := s.store.st.BrowserSessions[tokenDigest(c.Value)]
	if !ok || s.store.now().After(bs.Expires) {
		s.store.mu.Unlock()
		return ""
	}
	ident := Identity{Name: bs.User, Groups: bs.Groups}
	s.store.mu.Unlock()
	if !s.allowed(ident) {
		return ""
	}
	return ident.Name
}

// BrowserSignInURL is where to send a browser that has no session, to come
// back to next (a path below Config.BrowserHome).
func (s *Server) BrowserSignInURL(next string) string {
	return s.cfg.Issuer + PathBrowserSignIn + "?next=" + url.QueryEscape(next)
}
