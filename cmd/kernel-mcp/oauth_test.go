package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/oauth"
)

func TestParseOAuth(t *testing.T) {
	http := []string{"--transport", "streamable-http"}
	cfg, err := parseConfig(append(http, "--auth", "oauth", "--oidc-issuer", "https://login.example", "--oidc-client-id", "km", "--allowed-groups", "a, b"), env(with(map[string]string{"KERNEL_MCP_OIDC_CLIENT_SECRET": "s3"})))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.OAuth; o == nil || o.hub || o.OIDCClientSecret != "s3" || !slices.Equal(o.AllowedGroups, []string{"a", "b"}) {
		t.Errorf("oauth config: %+v", cfg.OAuth)
	}
	// A hub service is found by the variable the hub gives it.
	cfg, err = parseConfig(append(http, "--auth", "oauth"), env(with(map[string]string{"JUPYTERHUB_API_TOKEN": "t"})))
	if err != nil || cfg.OAuth == nil || !cfg.OAuth.hub {
		t.Errorf("hub service: %+v %v", cfg.OAuth, err)
	}
	// --ui: the web view moves to the public URL and signs in there.
	cfg, err = parseConfig(append(http, "--auth", "oauth", "--hub-url", "https://hub", "--ui", "127.0.0.1:0", "--ui-readonly"), env(base))
	if err != nil || !cfg.OAuth.WebView || !cfg.OAuth.WebViewReadOnly || cfg.UI != "" {
		t.Errorf("--ui with --auth oauth: %+v, UI %q, %v", cfg.OAuth, cfg.UI, err)
	}
	// ... also below a path, as behind JupyterHub's proxy.
	cfg, err = parseConfig(append(http, "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "https://hub.example/services/km/", "--ui", ":0"), env(base))
	if err != nil || !cfg.OAuth.WebView || cfg.OAuth.PublicURL != "https://hub.example/services/km" {
		t.Errorf("--ui with --public-url below a path: %+v, %v", cfg.OAuth, err)
	}
	// Without --auth oauth, nothing changes.
	if cfg, err := parseConfig(nil, env(base)); err != nil || cfg.OAuth != nil {
		t.Errorf("default: %+v %v", cfg.OAuth, err)
	}
}

func TestParseOAuthInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--auth", "oauth", "--oidc-issuer", "https://l", "--oidc-client-id", "c"}, nil, "HTTP transports"},
		{[]string{"--transport", "streamable-http", "--auth", "magic"}, nil, "want token or oauth"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth"}, nil, "nobody could sign in"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--oidc-issuer", "https://l"}, nil, "needs --oidc-client-id"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--oidc-issuer", "https://l", "--oidc-client-id", "c"}, nil, "not both"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub"}, map[string]string{"KERNEL_MCP_TOKEN": "x"}, "cannot be used with --token"},
		{[]string{"--transport", "streamable-http", "--host", "0.0.0.0", "--auth", "oauth", "--hub-url", "https://hub"}, nil, "needs --public-url"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "http://kernels.example"}, nil, "use https"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "https://kernels.example/x?y=1"}, nil, "without a query"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--allowed-users", "a/b"}, nil, "not a user name"},
		{[]string{"--transport", "streamable-http", "--hub-url", "https://hub"}, nil, "without --auth oauth"},
	} {
		_, err := parseConfig(tc.args, env(with(tc.env)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// stubLogin is a provider that signs in whoever reaches its callback as
// user: the test goes to kernel-mcp's callback itself with the state.
type stubLogin struct{ user string }

func (stubLogin) Name() string { return "the test's provider" }
func (stubLogin) AuthCodeURL(state, _ string) string {
	return "http://upstream.invalid/authorize?state=" + url.QueryEscape(state)
}
func (l stubLogin) Exchange(context.Context, string, string) (oauth.Identity, error) {
	return oauth.Identity{Name: l.user}, nil
}

// TestOAuthWebViewBelowAPath: with --public-url below a path (a proxy that
// keeps it, such as JupyterHub's /services/NAME/), the web view is at
// <public-url>/ui/: a browser without a session is sent to sign in there
// and back, its session cookie is for that path only, and nothing is
// served at the host's root.
func TestOAuthWebViewBelowAPath(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := "http://" + ln.Addr().String()
	public := root + "/services/km"
	cfg, err := parseConfig([]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub.invalid",
		"--public-url", public, "--ui", "127.0.0.1:0"}, env(base))
	if err != nil {
		t.Fatal(err)
	}
	side, err := newOAuthSide(cfg, mcpserver.Config{Logger: discard}, public, stubLogin{"alice"}, io.Discard, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.users.Close() })
	srv := httptest.NewUnstartedServer(side.handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(browser.CloseIdleConnections)
	step := func(c *http.Client, method, u string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	expect := func(resp *http.Response, status int, location string) {
		t.Helper()
		if resp.StatusCode != status || resp.Header.Get("Location") != location {
			t.Fatalf("%s %s: %d to %q, want %d to %q", resp.Request.Method, resp.Request.URL, resp.StatusCode, resp.Header.Get("Location"), status, location)
		}
	}

	resp, _ := step(browser, "GET", public+"/ui", nil)
	expect(resp, http.StatusMovedPermanently, "/services/km/ui/")
	resp, _ = step(browser, "GET", public+"/ui/", nil)
	expect(resp, http.StatusFound, public+oauth.PathBrowserSignIn+"?next=%2Fui%2F")
	resp, _ = step(browser, "GET", resp.Header.Get("Location"), nil)
	up, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || up.Host != "upstream.invalid" {
		t.Fatalf("the sign-in: %d to %q, want the provider", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = step(browser, "GET", public+oauth.PathCallback+"?code=c&state="+url.QueryEscape(up.Query().Get("state")), nil)
	expect(resp, http.StatusSeeOther, "/services/km/ui/")
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "km_session" {
			session = c
		}
	}
	if session == nil || session.Path != "/services/km/ui/" || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("the session cookie: %+v, want Path /services/km/ui/, HttpOnly, SameSite Lax", session)
	}

	resp, body := step(browser, "GET", public+"/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<html") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("the page: %d, CSP %q: %.200s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body)
	}
	if resp, body := step(browser, "GET", public+"/ui/api/sessions", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"sessions"`) {
		t.Errorf("the sessions: %d %s", resp.StatusCode, body)
	}
	if resp, body := step(browser, "POST", public+"/ui/api/sessions/s/interrupt", map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST from another site: %d %s", resp.StatusCode, body)
	}
	// Without the cookie (another browser), the API says so; the host's
	// root serves no view.
	if resp, body := step(http.DefaultClient, "GET", public+"/ui/api/sessions", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the sessions without signing in: %d %s", resp.StatusCode, body)
	}
	if resp, _ := step(browser, "GET", root+"/ui/", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/ui/ at the host's root: %d", resp.StatusCode)
	}
}
