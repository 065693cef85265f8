package oauth

import (
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// openSignedIn opens path in b, signs in at the provider's form as user,
// and returns the page it ends on.
func openSignedIn(b *browser, e *env, path, user, password string) page {
	b.t.Helper()
	p := b.get(e.srv.URL + path)
	if !strings.Contains(p.body, `action="/login"`) {
		return p
	}
	f := formValues(p.body)
	f.Set("username", user)
	f.Set("password", password)
	return b.post(p.url.Scheme+"://"+p.url.Host+"/login", f)
}

// TestBrowserSession: a page behind a browser session sends a browser
// without one to the provider's sign-in and back, with no consent page
// (the page is the server's own); the session is the browser's alone.
func TestBrowserSession(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowedGroups = []string{"staff"} })
	b := newBrowser(t, "http://127.0.0.1:1/never")
	p := openSignedIn(b, e, "/ui/sessions?x=1", "alice", "alice-pw")
	if p.status != http.StatusOK || p.body != "page for alice" || p.url.Path != "/ui/sessions" || p.url.RawQuery != "x=1" {
		t.Fatalf("after sign-in: %d %q at %s", p.status, p.body, p.url)
	}
	if p := b.get(e.srv.URL + "/ui/"); p.body != "page for alice" {
		t.Errorf("signed in, another page: %q", p.body)
	}
	// Another browser has no session: it is sent to sign in.
	if p := newBrowser(t, "http://127.0.0.1:1/never").get(e.srv.URL + "/ui/"); !strings.Contains(p.body, `action="/login"`) {
		t.Errorf("another browser: %d %q", p.status, p.body)
	}
	// bob is not in the allowed group.
	if p := openSignedIn(newBrowser(t, "http://127.0.0.1:1/never"), e, "/ui/", "bob", "bob-pw"); p.status != http.StatusForbidden {
		t.Errorf("bob: %d %q", p.status, p.body)
	}
	// The way back is a page of this server, below its home, only.
	for _, next := range []string{"https://evil.example/ui/", "//evil.example/ui/", "/oauth/token", "/ui\\..\\x", ""} {
		if p := newBrowser(t, "http://127.0.0.1:1/never").get(e.srv.URL + PathBrowserSignIn + "?next=" + url.QueryEscape(next)); p.status != http.StatusBadRequest {
			t.Errorf("next %q: %d", next, p.status)
		}
	}
	// A callback for a browser sign-in from another browser is refused.
	b2 := newBrowser(t, "http://127.0.0.1:1/never")
	p = b2.get(e.srv.URL + "/ui/")
	f := formValues(p.body)
	f.Set("username", "alice")
	f.Set("password", "alice-pw")
	b3 := newBrowser(t, "http://127.0.0.1:1/never")
	if p := b3.post(p.url.Scheme+"://"+p.url.Host+"/login", f); p.status != http.StatusBadRequest {
		t.Errorf("callback in another browser: %d %q", p.status, p.body)
	}
}

// TestBrowserSessionSurvivesRestart: the session is in the state file
// (as a digest: the file holds no usable cookie), so a restart does not
// sign the browser out; a restart with a narrower allowed list does.
func TestBrowserSessionSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	b := newBrowser(t, "http://127.0.0.1:1/never")
	if p := openSignedIn(b, e, "/ui/", "bob", "bob-pw"); p.body != "page for bob" {
		t.Fatalf("sign-in: %d %q", p.status, p.body)
	}
	e.start() // a new Server over the same state folder
	if p := b.get(e.srv.URL + "/ui/"); p.status != http.StatusOK || p.body != "page for bob" {
		t.Errorf("after a restart: %d %q, want bob's page without a sign-in", p.status, p.body)
	}
	u, _ := url.Parse(e.srv.URL + "/ui/") // the cookie's path
	var cookie string
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == browserCookie {
			cookie = c.Value
		}
	}
	state, err := readFile(filepath.Join(e.cfg.StateDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if cookie == "" || strings.Contains(state, cookie) || !strings.Contains(state, tokenDigest(cookie)) {
		t.Errorf("the state file should hold the session's digest, not its cookie")
	}
	if runtime.GOOS != "windows" {
		if mode := fileMode(t, filepath.Join(e.cfg.StateDir, stateFile)); mode != 0o600 {
			t.Errorf("state file mode %04o, want 0600", mode)
		}
	}
	// bob (group students) is no longer allowed after this restart.
	e.cfg.AllowedGroups = []string{"staff"}
	e.start()
	if p := b.get(e.srv.URL + "/ui/"); p.body == "page for bob" {
		t.Errorf("a session of a user no longer allowed still works: %d %q", p.status, p.body)
	}
	// Expired sessions leave the file.
	e.as.store.mu.Lock()
	e.as.store.st.prune(time.Now().Add(browserSessionLife + time.Minute))
	n := len(e.as.store.st.BrowserSessions)
	e.as.store.mu.Unlock()
	if n != 0 {
		t.Errorf("%d browser sessions kept past their expiry", n)
	}
}

// TestBrowserSessionBelowAPath: with an issuer below a path (a proxy's
// /services/<name>/), the browser goes back to the page below that path,
// and its session cookie is sent to the pages there only: not to the
// host's root, nor to another service on the same host.
func TestBrowserSessionBelowAPath(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Issuer = c.Issuer + "/services/kernel-mcp"
		c.Resource = c.Issuer + "/mcp"
	})
	b := newBrowser(t, "http://127.0.0.1:1/never")
	p := openSignedIn(b, e, "/services/kernel-mcp/ui/sessions?x=1", "alice", "alice-pw")
	if p.status != http.StatusOK || p.body != "page for alice" || p.url.Path != "/services/kernel-mcp/ui/sessions" || p.url.RawQuery != "x=1" {
		t.Fatalf("after sign-in: %d %q at %s", p.status, p.body, p.url)
	}
	has := func(path string) bool {
		u, _ := url.Parse(e.srv.URL + path)
		for _, c := range b.c.Jar.Cookies(u) {
			if c.Name == browserCookie {
				return true
			}
		}
		return false
	}
	for path, want := range map[string]bool{
		"/services/kernel-mcp/ui/":           true,
		"/services/kernel-mcp/ui/api/events": true,
		"/services/kernel-mcp/oauth/":        false,
		"/services/other/":                   false,
		"/ui/":                               false,
		"/":                                  false,
	} {
		if got := has(path); got != want {
			t.Errorf("session cookie sent to %s: %v, want %v", path, got, want)
		}
	}
}
