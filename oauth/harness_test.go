package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testIdP is a small upstream identity provider with a real login form
// over HTTP: users and passwords, codes bound by PKCE. It stands in for
// JupyterHub or an OpenID provider in this package's tests; those real
// ones are driven in integration/.
type testIdP struct {
	srv      *httptest.Server
	callback string

	mu    sync.Mutex
	users map[string]testUser
	codes map[string]testCode
}

type testUser struct {
	password string
	groups   []string
}

type testCode struct {
	who       Identity
	challenge string
}

func newTestIdP(t testing.TB) *testIdP {
	p := &testIdP{
		users: map[string]testUser{
			"alice": {"alice-pw", []string{"staff"}},
			"bob":   {"bob-pw", []string{"students"}},
		},
		codes: map[string]testCode{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fmt.Fprintf(w, `<form method="post" action="/login"><input name="state" value="%s"><input name="code_challenge" value="%s"><input name="redirect_uri" value="%s"><input name="username"><input name="password" type="password"></form>`,
			html.EscapeString(q.Get("state")), html.EscapeString(q.Get("code_challenge")), html.EscapeString(q.Get("redirect_uri")))
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		name, pw := r.FormValue("username"), r.FormValue("password")
		p.mu.Lock()
		u, ok := p.users[name]
		p.mu.Unlock()
		if !ok || u.password != pw {
			http.Error(w, "wrong user name or password", http.StatusUnauthorized)
			return
		}
		code := rand.Text()
		p.mu.Lock()
		p.codes[code] = testCode{Identity{Name: name, Groups: u.groups}, r.FormValue("code_challenge")}
		p.mu.Unlock()
		http.Redirect(w, r, r.FormValue("redirect_uri")+"?"+url.Values{"code": {code}, "state": {r.FormValue("state")}}.Encode(), http.StatusFound)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *testIdP) Name() string { return "the test provider" }

func (p *testIdP) AuthCodeURL(state, verifier string) string {
	return p.srv.URL + "/authorize?" + url.Values{
		"state": {state}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "redirect_uri": {p.callback},
	}.Encode()
}

func (p *testIdP) Exchange(ctx context.Context, code, verifier string) (Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.codes[code]
	delete(p.codes, code)
	if !ok || c.challenge != oauth2.S256ChallengeFromVerifier(verifier) {
		return Identity{}, errors.New("invalid code")
	}
	return c.who, nil
}

// env is kernel-mcp's HTTP side in a test: the authorization server at the
// root and an MCP endpoint behind RequireToken at /mcp whose one tool says
// who called it.
type env struct {
	t      testing.TB
	idp    *testIdP
	srv    *httptest.Server
	as     *Server
	cfg    Config
	prefix string // the issuer's path
	mu     sync.Mutex
	h      http.Handler
}

func newEnv(t testing.TB, mod func(*Config)) *env {
	e := &env{t: t, idp: newTestIdP(t)}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		h := e.h
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	e.idp.callback = e.srv.URL + PathCallback
	e.cfg = Config{
		Issuer:      e.srv.URL,
		Resource:    e.srv.URL + "/mcp",
		StateDir:    filepath.Join(t.TempDir(), "oauth"),
		Login:       e.idp,
		BrowserHome: "/ui/",
	}
	if mod != nil {
		mod(&e.cfg)
	}
	// An issuer below a path is served with that prefix stripped, as
	// behind a proxy that routes the path to the server.
	e.prefix = strings.TrimPrefix(e.cfg.Issuer, e.srv.URL)
	e.idp.callback = e.cfg.Issuer + PathCallback
	e.start()
	return e
}

// start (re)makes the authorization server from e.cfg, as a restart does.
func (e *env) start() {
	e.t.Helper()
	as, err := New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ms := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		user := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			user = req.Extra.TokenInfo.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: user}}}, struct{}{}, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/", as.Handler())
	endpoint := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.Handle("/mcp", as.RequireToken(endpoint))
	mux.Handle("/open", endpoint) // the same without authorization, for the benchmark
	// What a handler behind RequireToken sees of the request.
	mux.Handle("/seen", as.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%s authorization=%q", UserFromContext(r.Context()), r.Header.Get("Authorization"))
	})))
	// A page behind a browser session, as the web view is.
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		user := as.BrowserUser(r)
		if user == "" {
			http.Redirect(w, r, as.BrowserSignInURL(r.URL.RequestURI()), http.StatusFound)
			return
		}
		fmt.Fprintf(w, "page for %s", user)
	})

	var h http.Handler = mux
	if e.prefix != "" {
		outer := http.NewServeMux()
		outer.Handle(e.prefix+"/", http.StripPrefix(e.prefix, mux))
		h = outer
	}
	e.mu.Lock()
	e.as, e.h = as, h
	e.mu.Unlock()
}

// browser is a person's browser: cookies, redirects followed, except the
// last one to the MCP client's redirect URI, which it reports.
type browser struct {
	t        testing.TB
	c        *http.Client
	redirect string // the client's redirect URI; a redirect there ends the flow
}

func newBrowser(t testing.TB, redirect string) *browser {
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := &browser{t: t, redirect: redirect}
	b.c = &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), b.redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// page is where the browser stopped: a page, or the redirect to the client.
type page struct {
	status int
	body   string
	url    *url.URL
	back   url.Values // set when it was sent back to the client's redirect URI
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, body: string(body), url: resp.Request.URL}
	if loc := resp.Header.Get("Location"); loc != "" && strings.HasPrefix(loc, b.redirect) {
		u, err := url.Parse(loc)
		if err != nil {
			b.t.Fatal(err)
		}
		p.back = u.Query()
	}
	return p
}

func (b *browser) get(u string) page {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values) page {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var inputRE = regexp.MustCompile(`<input [^>]*name="([^"]+)"(?: [^>]*value="([^"]*)")?`)

// formValues are a page's named inputs with their values.
func formValues(body string) url.Values {
	v := url.Values{}
	for _, m := range inputRE.FindAllStringSubmatch(body, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// signIn drives the person's part: the authorization URL, the provider's
// login form, and the consent page answered with decision ("allow",
// "deny"). It returns the query sent back to the client, or the page where
// the flow stopped.
func (b *browser) signIn(authURL, user, password, decision string) page {
	b.t.Helper()
	p := b.get(authURL)
	if p.back != nil || p.status != http.StatusOK || !strings.Contains(p.body, `action="/login"`) {
		return p
	}
	f := formValues(p.body)
	f.Set("username", user)
	f.Set("password", password)
	p = b.post(p.url.Scheme+"://"+p.url.Host+"/login", f)
	if p.back != nil || p.status != http.StatusOK || !strings.Contains(p.body, "consent_token") {
		return p
	}
	f = formValues(p.body)
	f.Set("decision", decision)
	action := actionRE.FindStringSubmatch(p.body)
	if action == nil {
		b.t.Fatalf("the consent page has no form action:\n%s", p.body)
	}
	return b.post(html.UnescapeString(action[1]), f)
}

var actionRE = regexp.MustCompile(`<form method="post" action="([^"]+)"`)

// fileMode is a file's permission bits.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
