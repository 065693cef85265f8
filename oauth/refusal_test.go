package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// raw is a hand-driven OAuth client: every request spelled out, so that
// each refusal can be provoked.
type raw struct {
	t  testing.TB
	e  *env
	hc *http.Client
}

func newRaw(t testing.TB, e *env) *raw {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &raw{t: t, e: e, hc: &http.Client{Transport: tr}}
}

func (c *raw) postForm(path string, form url.Values) (int, map[string]any) {
	c.t.Helper()
	resp, err := c.hc.PostForm(c.e.srv.URL+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func (c *raw) register(meta map[string]any) (int, map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(meta)
	resp, err := c.hc.Post(c.e.srv.URL+PathRegister, "application/json", strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// client registers a public client with clientRedirect and refresh tokens.
func (c *raw) client() string {
	c.t.Helper()
	status, m := c.register(map[string]any{
		"client_name": "raw client", "redirect_uris": []string{clientRedirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none",
	})
	if status != http.StatusCreated {
		c.t.Fatalf("register: %d %v", status, m)
	}
	return m["client_id"].(string)
}

// authURL is an authorization request; params override the defaults.
func (c *raw) authURL(clientID, verifier string, params url.Values) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {clientRedirect},
		"scope":                 {Scope + " offline_access"},
		"state":                 {"st-1"},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
		"resource":              {c.e.cfg.Resource},
	}
	for k, v := range params {
		if len(v) == 0 || v[0] == "" {
			q.Del(k)
		} else {
			q[k] = v
		}
	}
	return c.e.srv.URL + PathAuthorize + "?" + q.Encode()
}

type tokens struct {
	access, refresh string
}

// signIn runs the whole flow as user and exchanges the code.
func (c *raw) signIn(clientID, user, password string) tokens {
	c.t.Helper()
	verifier := oauth2.GenerateVerifier()
	p := newBrowser(c.t, clientRedirect).signIn(c.authURL(clientID, verifier, nil), user, password, "allow")
	if p.back.Get("code") == "" {
		c.t.Fatalf("no code: %d %s %v", p.status, p.body, p.back)
	}
	status, m := c.postForm(PathToken, url.Values{
		"grant_type": {"authorization_code"}, "code": {p.back.Get("code")}, "redirect_uri": {clientRedirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {c.e.cfg.Resource},
	})
	if status != http.StatusOK {
		c.t.Fatalf("token: %d %v", status, m)
	}
	rt, _ := m["refresh_token"].(string)
	return tokens{access: m["access_token"].(string), refresh: rt}
}

func (c *raw) refresh(clientID, rt string) (int, map[string]any) {
	c.t.Helper()
	return c.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
}

// call posts an MCP initialize to /mcp with token ("" for none) and
// returns the status and the WWW-Authenticate header.
func (c *raw) call(token string) (int, string) {
	c.t.Helper()
	resp, _ := c.post(token)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// callBody is call, returning the body instead of the header.
func (c *raw) callBody(token string) (int, string) {
	c.t.Helper()
	resp, body := c.post(token)
	return resp.StatusCode, body
}

func (c *raw) post(token string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestNoTokenGets401WithMetadata(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	status, www := c.call("")
	if status != http.StatusUnauthorized || !strings.Contains(www, `resource_metadata="`+e.srv.URL+PathResourceMetadata+`/mcp"`) {
		t.Fatalf("no token: %d, WWW-Authenticate %q", status, www)
	}
	// The metadata it names says who issues tokens for what.
	resp, err := c.hc.Get(e.srv.URL + PathResourceMetadata + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var prm map[string]any
	json.NewDecoder(resp.Body).Decode(&prm)
	if prm["resource"] != e.cfg.Resource || prm["authorization_servers"].([]any)[0] != e.srv.URL {
		t.Errorf("protected resource metadata: %v", prm)
	}
	if strings.Contains(www, "error=") {
		t.Errorf("no token, yet an error code: %q", www)
	}
	if status, www := c.call("not-a-token"); status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) {
		t.Errorf("garbage token: %d %q, want 401 with invalid_token", status, www)
	}
}

// TestTokenForAnotherResource: a token that this server's own key signed,
// with its own issuer, but for another resource, is refused at the
// resource; and a token request for another resource is refused at the
// token endpoint.
func TestTokenForAnotherResource(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	// A second server with the same keys and issuer, for another resource.
	other := e.cfg
	other.Resource = e.srv.URL + "/other"
	e.cfg = other
	e.start()
	id := c.client()
	tok := c.signIn(id, "alice", "alice-pw")
	e.cfg.Resource = e.srv.URL + "/mcp"
	e.start()
	status, www := c.call(tok.access)
	if status != http.StatusUnauthorized || !strings.Contains(www, "resource_metadata") {
		t.Errorf("token for /other at /mcp: %d %q, want 401", status, www)
	}
	// Asking for another resource is refused up front.
	verifier := oauth2.GenerateVerifier()
	p := newBrowser(t, clientRedirect).get(c.authURL(id, verifier, url.Values{"resource": {"https://elsewhere.example/mcp"}}))
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid_target") {
		t.Errorf("authorize for another resource: %d %s", p.status, p.body)
	}
	if status, m := c.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.refresh}, "client_id": {id}, "resource": {"https://elsewhere.example/mcp"}}); status != http.StatusBadRequest || m["error"] != "invalid_target" {
		t.Errorf("token for another resource: %d %v", status, m)
	}
}

func TestExpiredToken(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AccessTokenLifetime = time.Second })
	c := newRaw(t, e)
	tok := c.signIn(c.client(), "alice", "alice-pw")
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Fatalf("fresh token: %d", status)
	}
	// exp has a resolution of one second: wait for it to pass, bounded.
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, www := c.call(tok.access)
		if status == http.StatusUnauthorized {
			if !strings.Contains(www, "resource_metadata") {
				t.Errorf("expired: WWW-Authenticate %q", www)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a token of 1 s still works after 5 s: %d", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRevokedTokens(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	tok := c.signIn(id, "alice", "alice-pw")
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Fatalf("fresh token: %d", status)
	}
	// Revoking the access token refuses it at once (the cache included).
	if status, m := c.postForm(PathRevoke, url.Values{"token": {tok.access}, "token_type_hint": {"access_token"}, "client_id": {id}}); status != http.StatusOK {
		t.Fatalf("revoke: %d %v", status, m)
	}
	if status, www := c.call(tok.access); status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) {
		t.Errorf("revoked access token: %d %q, want 401 with invalid_token", status, www)
	}
	// Revoking the refresh token revokes the grant: its new tokens too.
	status, m := c.refresh(id, tok.refresh)
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	access2, refresh2 := m["access_token"].(string), m["refresh_token"].(string)
	if status, _ := c.call(access2); status != http.StatusOK {
		t.Fatalf("refreshed token: %d", status)
	}
	// Another client cannot revoke it.
	other := c.client()
	c.postForm(PathRevoke, url.Values{"token": {refresh2}, "client_id": {other}})
	if status, _ := c.call(access2); status != http.StatusOK {
		t.Fatalf("another client revoked alice's grant: %d", status)
	}
	if status, m := c.postForm(PathRevoke, url.Values{"token": {refresh2}, "client_id": {id}}); status != http.StatusOK {
		t.Fatalf("revoke refresh token: %d %v", status, m)
	}
	if status, _ := c.call(access2); status != http.StatusUnauthorized {
		t.Errorf("access token of a revoked grant: %d, want 401", status)
	}
	if status, m := c.refresh(id, refresh2); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Errorf("revoked refresh token: %d %v", status, m)
	}
}

// TestRefreshReplayRevokesFamily: a refresh token used twice (stolen and
// replayed after the client rotated it) revokes every token of the grant.
func TestRefreshReplayRevokesFamily(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	tok := c.signIn(id, "alice", "alice-pw")
	status, m := c.refresh(id, tok.refresh)
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, m)
	}
	access2, refresh2 := m["access_token"].(string), m["refresh_token"].(string)
	if refresh2 == tok.refresh {
		t.Fatal("the refresh token was not rotated")
	}
	if status, m := c.refresh(id, tok.refresh); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("replayed refresh token: %d %v", status, m)
	}
	if status, m := c.refresh(id, refresh2); status != http.StatusBadRequest {
		t.Errorf("the rotated token still works after the replay: %d %v", status, m)
	}
	for _, a := range []string{tok.access, access2} {
		if status, _ := c.call(a); status != http.StatusUnauthorized {
			t.Errorf("access token of the replayed family: %d, want 401", status)
		}
	}
	// A code is good once, too.
}

func TestPKCERequired(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	verifier := oauth2.GenerateVerifier()
	for name, params := range map[string]url.Values{
		"missing":                      {"code_challenge": {""}, "code_challenge_method": {""}},
		"plain":                        {"code_challenge": {verifier}, "code_challenge_method": {"plain"}},
		"no method (plain by default)": {"code_challenge_method": {""}},
	} {
		p := newBrowser(t, clientRedirect).get(c.authURL(id, verifier, params))
		if p.back == nil || p.back.Get("error") != "invalid_request" || p.back.Get("code") != "" || p.back.Get("iss") != e.srv.URL {
			t.Errorf("PKCE %s: %d %s %v, want error=invalid_request at the client", name, p.status, p.body, p.back)
		}
	}
	// A code obtained with S256 is not exchanged without its verifier.
	p := newBrowser(t, clientRedirect).signIn(c.authURL(id, verifier, nil), "alice", "alice-pw", "allow")
	status, m := c.postForm(PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {p.back.Get("code")}, "redirect_uri": {clientRedirect}, "client_id": {id}})
	if status != http.StatusBadRequest {
		t.Errorf("code without verifier: %d %v", status, m)
	}
}

func TestRedirectURINotRegistered(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	b := newBrowser(t, "https://attacker.example/")
	p := b.get(c.authURL(id, oauth2.GenerateVerifier(), url.Values{"redirect_uri": {"https://attacker.example/cb"}}))
	if p.status != http.StatusBadRequest || p.back != nil {
		t.Errorf("unregistered redirect URI: %d %v, want 400 and no redirect", p.status, p.back)
	}
}

func TestRegistrationRefusals(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	for name, tc := range map[string]struct {
		meta map[string]any
		code string
	}{
		"no redirect":          {map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
		"http elsewhere":       {map[string]any{"redirect_uris": []string{"http://example.com/cb"}}, "invalid_redirect_uri"},
		"fragment":             {map[string]any{"redirect_uris": []string{"https://example.com/cb#x"}}, "invalid_redirect_uri"},
		"javascript":           {map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		"confidential":         {map[string]any{"redirect_uris": []string{clientRedirect}, "token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"},
		"implicit":             {map[string]any{"redirect_uris": []string{clientRedirect}, "grant_types": []string{"implicit"}}, "invalid_client_metadata"},
		"chooses its id":       {map[string]any{"redirect_uris": []string{clientRedirect}, "client_id": "admin"}, "invalid_client_metadata"},
		"client_uri not a URL": {map[string]any{"redirect_uris": []string{clientRedirect}, "client_uri": "javascript:alert(1)"}, "invalid_client_metadata"},
		"client_name large":    {map[string]any{"redirect_uris": []string{clientRedirect}, "client_name": strings.Repeat("x", 200)}, "invalid_client_metadata"},
	} {
		status, m := c.register(tc.meta)
		if status != http.StatusBadRequest || m["error"] != tc.code {
			t.Errorf("%s: %d %v, want 400 %s", name, status, m, tc.code)
		}
	}
}

// TestMetadataDocumentOverPlainHTTP: a client id on plain http to another
// host is refused without being fetched; loopback http is allowed.
func TestMetadataDocumentOverPlainHTTP(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	p := newBrowser(t, clientRedirect).get(c.authURL("http://clients.example/app.json", oauth2.GenerateVerifier(), nil))
	if p.status != http.StatusBadRequest || p.back != nil || !strings.Contains(p.body, "https") {
		t.Errorf("http client id: %d %q %v, want 400 naming https", p.status, p.body, p.back)
	}
	onLoopback, public := newMetadataFetcher(nil, true, nil, 0), newMetadataFetcher(nil, false, nil, 0)
	for _, id := range []string{"https://clients.example/", "https://u:p@clients.example/a", "https://clients.example/a/../b", "ftp://clients.example/a"} {
		if _, err := onLoopback.checkURL(id); err == nil {
			t.Errorf("client id %q accepted", id)
		}
	}
	if _, err := onLoopback.checkURL("http://127.0.0.1:9/client.json"); err != nil {
		t.Errorf("loopback http client id refused by a server on loopback: %v", err)
	}
	if _, err := public.checkURL("http://127.0.0.1:9/client.json"); err == nil {
		t.Error("loopback http client id accepted by a server not on loopback")
	}
}

func TestConsentDenied(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	p := newBrowser(t, clientRedirect).signIn(c.authURL(id, oauth2.GenerateVerifier(), nil), "alice", "alice-pw", "deny")
	if p.back == nil || p.back.Get("error") != "access_denied" || p.back.Get("code") != "" || p.back.Get("state") != "st-1" || p.back.Get("iss") != e.srv.URL {
		t.Errorf("denied: %d %v", p.status, p.back)
	}
}

// TestConsentPageNamesClientRedirectAndUser, and refuses an answer from
// another browser (no sign-in cookie) or a stale page.
func TestConsentPage(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	b := newBrowser(t, clientRedirect)
	p := b.get(c.authURL(id, oauth2.GenerateVerifier(), nil))
	f := formValues(p.body)
	f.Set("username", "bob")
	f.Set("password", "bob-pw")
	p = b.post(p.url.Scheme+"://"+p.url.Host+"/login", f)
	for _, want := range []string{"raw client", id, clientRedirect, "<strong>bob</strong>", "the test provider"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("consent page lacks %q:\n%s", want, p.body)
		}
	}
	f = formValues(p.body)
	f.Set("decision", "allow")
	if q := newBrowser(t, clientRedirect).post(e.srv.URL+PathConsent, f); q.back != nil || q.status != http.StatusBadRequest {
		t.Errorf("consent from another browser: %d %v", q.status, q.back)
	}
	stale := url.Values{"id": {f.Get("id")}, "consent_token": {"forged"}, "decision": {"allow"}}
	if q := b.post(e.srv.URL+PathConsent, stale); q.back != nil || q.status != http.StatusBadRequest {
		t.Errorf("forged consent token: %d %v", q.status, q.back)
	}
	if q := b.post(e.srv.URL+PathConsent, f); q.back.Get("code") == "" || q.back.Get("iss") != e.srv.URL {
		t.Errorf("the real answer: %d %v", q.status, q.back)
	}
}

func TestAllowedGroups(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowedGroups = []string{"staff"} })
	c := newRaw(t, e)
	id := c.client()
	p := newBrowser(t, clientRedirect).signIn(c.authURL(id, oauth2.GenerateVerifier(), nil), "bob", "bob-pw", "allow")
	if p.back == nil || p.back.Get("error") != "access_denied" {
		t.Errorf("bob (students) with AllowedGroups staff: %d %s %v", p.status, p.body, p.back)
	}
	if tok := c.signIn(id, "alice", "alice-pw"); tok.access == "" {
		t.Error("alice (staff) got no token")
	}
}

// TestAllowedListsApplyToGrants: a user taken off the allowed lists (here
// by a restart with other --allowed-groups) is shut out at once, their
// access and refresh tokens both, not when the grant expires; let back in,
// they go on with the same grant. A grant that predates the groups kept in
// grants passes a check by name only.
func TestAllowedListsApplyToGrants(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowedGroups = []string{"students"} })
	c := newRaw(t, e)
	id := c.client()
	tok := c.signIn(id, "bob", "bob-pw") // bob is in students
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Fatalf("bob's token while students are allowed: %d", status)
	}
	e.cfg.AllowedGroups = []string{"staff"}
	e.start()
	if status, body := c.callBody(tok.access); status != http.StatusUnauthorized || !strings.Contains(body, "user bob is no longer allowed to use this server") {
		t.Errorf("bob's access token once students are not allowed: %d %q, want 401 saying why", status, body)
	}
	if status, m := c.refresh(id, tok.refresh); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Errorf("bob's refresh once students are not allowed: %d %v", status, m)
	}
	e.cfg.AllowedGroups = nil
	e.cfg.AllowedUsers = []string{"bob"}
	e.start()
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Errorf("bob's access token once bob is allowed by name: %d", status)
	}
	if status, m := c.refresh(id, tok.refresh); status != http.StatusOK {
		t.Errorf("bob's refresh once bob is allowed by name: %d %v", status, m)
	}

	// A grant kept before groups were: forgotten groups cannot let a user
	// in, so only a new sign-in does.
	e.as.store.mu.Lock()
	for _, g := range e.as.store.st.Grants {
		g.Groups, g.GroupsKnown = nil, false
	}
	err := e.as.store.saveLocked()
	e.as.store.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.AllowedUsers, e.cfg.AllowedGroups = nil, []string{"students"}
	e.start()
	if status, body := c.callBody(tok.access); status != http.StatusUnauthorized || !strings.Contains(body, "predates the check of groups: sign in again") {
		t.Errorf("a grant without its groups, under --allowed-groups: %d %q", status, body)
	}
	tok2 := c.signIn(id, "bob", "bob-pw")
	if status, _ := c.call(tok2.access); status != http.StatusOK {
		t.Errorf("a new sign-in of bob: %d", status)
	}
}

// TestSignInNeeded: when Config.SignInNeeded asks for a new sign-in (the
// hub token of --hub-kernels is gone), a token is refused with its reason
// and a refresh with invalid_grant, so that the client signs in again;
// once the new sign-in gave what was missing, it goes on.
func TestSignInNeeded(t *testing.T) {
	var missing atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.SignInNeeded = func(user string) string {
			if missing.Load() {
				return "kernel-mcp holds no JupyterHub token for " + user + ": sign in again"
			}
			return ""
		}
	})
	c := newRaw(t, e)
	id := c.client()
	tok := c.signIn(id, "bob", "bob-pw")
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Fatalf("bob's token: %d", status)
	}
	missing.Store(true)
	if status, body := c.callBody(tok.access); status != http.StatusUnauthorized || !strings.Contains(body, "holds no JupyterHub token for bob: sign in again") {
		t.Errorf("bob's access token once his hub token is gone: %d %q", status, body)
	}
	if status, m := c.refresh(id, tok.refresh); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Errorf("bob's refresh once his hub token is gone: %d %v", status, m)
	}
	missing.Store(false) // the new sign-in brought one
	tok2 := c.signIn(id, "bob", "bob-pw")
	if status, _ := c.call(tok2.access); status != http.StatusOK {
		t.Errorf("bob's new sign-in: %d", status)
	}
}

// TestRestartKeepsGrants: keys, clients and grants come back from the
// state folder, which only its owner can read.
func TestRestartKeepsGrants(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	tok := c.signIn(id, "alice", "alice-pw")
	e.start() // a new Server over the same state folder
	if status, _ := c.call(tok.access); status != http.StatusOK {
		t.Errorf("access token after restart: %d", status)
	}
	status, m := c.refresh(id, tok.refresh)
	if status != http.StatusOK {
		t.Fatalf("refresh after restart: %d %v", status, m)
	}
	if runtime.GOOS != "windows" {
		if mode := fileMode(t, filepath.Join(e.cfg.StateDir, stateFile)); mode != 0o600 {
			t.Errorf("state file mode %04o, want 0600", mode)
		}
		if mode := fileMode(t, e.cfg.StateDir); mode&0o077 != 0 {
			t.Errorf("state folder mode %04o, want no group or other access", mode)
		}
	}
	b, err := readFile(filepath.Join(e.cfg.StateDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b, tok.refresh) || strings.Contains(b, m["refresh_token"].(string)) {
		t.Error("the state file holds a refresh token in the clear")
	}
}

// TestKeyRotation: after a rotation, tokens signed by the old key stay
// valid until they expire; new ones are signed by the new key.
func TestKeyRotation(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	id := c.client()
	old := c.signIn(id, "alice", "alice-pw")
	if err := e.as.RotateKey(); err != nil {
		t.Fatal(err)
	}
	e.start() // and across a restart
	fresh := c.signIn(id, "bob", "bob-pw")
	for name, tok := range map[string]string{"old key": old.access, "new key": fresh.access} {
		if status, _ := c.call(tok); status != http.StatusOK {
			t.Errorf("token signed with the %s: %d", name, status)
		}
	}
	if n := len(e.as.store.keys); n != 2 {
		t.Errorf("%d keys published, want 2", n)
	}
	// Once the old key's tokens have all expired, it is dropped.
	e.as.store.mu.Lock()
	e.as.store.st.prune(time.Now().Add(DefaultAccessTokenLifetime + 2*time.Minute))
	n := len(e.as.store.st.Keys)
	e.as.store.mu.Unlock()
	if n != 1 {
		t.Errorf("%d keys after the old one's tokens expired, want 1", n)
	}
}

// TestTokenNotPassedOn: the handler behind the check learns the user, and
// never sees the token.
func TestTokenNotPassedOn(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	tok := c.signIn(c.client(), "bob", "bob-pw")
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/seen", nil)
	req.Header.Set("Authorization", "Bearer "+tok.access)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != `user=bob authorization=""` {
		t.Errorf("behind the check: %q", b)
	}
}

// TestOnlyQueryResponseMode: a form_post response (which could carry no
// iss here) is refused before anything else.
func TestOnlyQueryResponseMode(t *testing.T) {
	e := newEnv(t, nil)
	c := newRaw(t, e)
	p := newBrowser(t, clientRedirect).get(c.authURL(c.client(), oauth2.GenerateVerifier(), url.Values{"response_mode": {"form_post"}}))
	if p.status != http.StatusBadRequest || p.back != nil {
		t.Errorf("form_post: %d %v", p.status, p.back)
	}
}

// TestRegistrationFull: when the store of registered clients is full, the
// oldest client that never got a grant makes room; a client with a grant
// is never pushed out; clients unused for 30 days are forgotten.
func TestRegistrationFull(t *testing.T) {
	e := newEnv(t, nil)
	e.as.store.maxClients = 3
	c := newRaw(t, e)
	used := c.client()
	c.signIn(used, "alice", "alice-pw")
	first := c.client()
	c.client()
	c.client() // full: first goes
	e.as.store.mu.Lock()
	_, usedKept := e.as.store.st.Clients[used]
	_, firstKept := e.as.store.st.Clients[first]
	n := len(e.as.store.st.Clients)
	for _, x := range e.as.store.st.Clients {
		x.Created = x.Created.Add(-unusedClientLifetime - time.Hour)
	}
	e.as.store.st.prune(time.Now())
	_, usedAfter := e.as.store.st.Clients[used]
	left := len(e.as.store.st.Clients)
	e.as.store.mu.Unlock()
	if !usedKept || firstKept || n != 3 {
		t.Errorf("full store: the client with a grant kept %v, the oldest unused kept %v, %d clients", usedKept, firstKept, n)
	}
	// Registered over 30 days ago: the client whose grant is live stays,
	// the others go.
	if !usedAfter || left != 1 {
		t.Errorf("after 30 days: the client with a grant kept %v, %d clients left", usedAfter, left)
	}
	// Full of clients that all hold a sign-in: refused, and said so.
	e.as.store.maxClients = 1
	status, m := c.register(map[string]any{"redirect_uris": []string{clientRedirect}})
	if desc, _ := m["error_description"].(string); status != http.StatusServiceUnavailable || !strings.Contains(desc, "at most 1 registered clients") {
		t.Errorf("full of clients with sign-ins: %d %v", status, m)
	}
}

func TestBearerErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		code     int
		hadToken bool
		want     string
	}{
		{http.StatusUnauthorized, false, `Bearer resource_metadata="m"`},
		{http.StatusUnauthorized, true, `Bearer resource_metadata="m", error="invalid_token"`},
		{http.StatusForbidden, true, `Bearer resource_metadata="m", error="insufficient_scope"`},
	} {
		rec := httptest.NewRecorder()
		w := &bearerErrorWriter{ResponseWriter: rec, hadToken: tc.hadToken}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="m"`)
		w.WriteHeader(tc.code)
		if got := rec.Header().Get("WWW-Authenticate"); got != tc.want {
			t.Errorf("%d (token sent: %v): %q, want %q", tc.code, tc.hadToken, got, tc.want)
		}
	}
}

// TestRegistrationRateLimit: registration is open to anyone, so it is
// limited per remote address (an IPv6 one by its /64) and overall; past
// a limit the answer is 429 with Retry-After, and nothing is stored.
func TestRegistrationRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	e := newEnv(t, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	// The remote address as a proxy-less server sees it, set per request.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-Remote")
		e.as.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	register := func(remote string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+PathRegister, strings.NewReader(`{"redirect_uris":["`+clientRedirect+`"]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-Remote", remote)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, resp.Header.Get("Retry-After"), m
	}
	stored := func() int {
		e.as.store.mu.Lock()
		defer e.as.store.mu.Unlock()
		return len(e.as.store.st.Clients)
	}
	fill := func(remote string, n int) {
		t.Helper()
		for i := range n {
			if status, _, m := register(remote); status != http.StatusCreated {
				t.Fatalf("registration %d from %s: %d %v", i+1, remote, status, m)
			}
		}
	}
	refused := func(remote, retryAfter string) {
		t.Helper()
		before := stored()
		status, ra, m := register(remote)
		desc, _ := m["error_description"].(string)
		if status != http.StatusTooManyRequests || ra != retryAfter || m["error"] != "temporarily_unavailable" || !strings.Contains(desc, "try again in "+retryAfter+" s") {
			t.Errorf("past the limit from %s: %d Retry-After %q %v, want 429 Retry-After %s", remote, status, ra, m, retryAfter)
		}
		if n := stored(); n != before {
			t.Errorf("a refused registration was stored: %d clients, were %d", n, before)
		}
	}

	fill("192.0.2.1:1000", registrationsPerAddressBurst)
	refused("192.0.2.1:1001", "10")
	// One IPv6 /64 is one address.
	fill("[2001:db8::1]:1000", registrationsPerAddressBurst/2)
	fill("[2001:db8::2]:1000", registrationsPerAddressBurst/2)
	refused("[2001:db8::3]:1000", "10")
	// The overall limit holds whatever the address.
	fill("198.51.100.1:1000", registrationsBurst-2*registrationsPerAddressBurst)
	refused("198.51.100.2:1000", "2")
	if n := stored(); n != registrationsBurst {
		t.Errorf("%d clients stored, want %d", n, registrationsBurst)
	}
	// The file holds what is stored, no more.
	b, err := readFile(filepath.Join(e.cfg.StateDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b, `"registered": "dcr"`); n != registrationsBurst {
		t.Errorf("%d clients in the state file, want %d", n, registrationsBurst)
	}
	// Tokens come back with time.
	mu.Lock()
	now = now.Add(registrationsPerAddressEvery)
	mu.Unlock()
	fill("192.0.2.1:1000", 1)
	refused("192.0.2.1:1000", "10")
}
