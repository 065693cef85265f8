//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The sign-in tests run real parts: JupyterHub 6 from PyPI (in a venv of
// its own, which .ci/run makes) with its configurable-http-proxy from npm
// (integration/oauth) and DummyAuthenticator passwords; kernel-mcp as the
// hub's managed service with --auth oauth; go-sdk's OAuth client
// (AuthorizationCodeHandler), which no one here wrote, discovering,
// registering and signing in through the hub's login page.

// requireOAuthParts returns the jupyterhub command and the proxy's, or
// fails (under CI) or skips (locally) when they are not installed.
func requireOAuthParts(t *testing.T) (hub, proxy string) {
	t.Helper()
	requireKernel(t)
	venv := os.Getenv("KERNEL_MCP_TEST_HUB_VENV")
	if venv == "" {
		home, _ := os.UserHomeDir()
		venv = filepath.Join(home, ".cache", "kernel-mcp", "venv-hub")
	}
	hub = filepath.Join(venv, "bin", "jupyterhub")
	proxy, _ = filepath.Abs(filepath.Join("oauth", "node_modules", ".bin", "configurable-http-proxy"))
	var missing []string
	if _, err := os.Stat(hub); err != nil {
		missing = append(missing, fmt.Sprintf("JupyterHub (%s; make it with: python3 -m venv %s && %s/bin/pip install 'jupyterhub>=6,<7' 'mcp==2.3.0')", hub, venv, venv))
	} else if err := exec.Command(filepath.Join(venv, "bin", "python"), "-c", "import mcp.client.auth").Run(); err != nil {
		missing = append(missing, fmt.Sprintf("the MCP Python SDK in %s (%s/bin/pip install 'mcp==2.3.0')", venv, venv))
	}
	if _, err := os.Stat(proxy); err != nil {
		missing = append(missing, "configurable-http-proxy (cd integration/oauth && npm ci)")
	}
	if len(missing) > 0 {
		msg := "the sign-in tests need " + strings.Join(missing, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return hub, proxy
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hubSetup is a running JupyterHub with kernel-mcp as its service.
type hubSetup struct {
	hubURL string // the hub's public URL (its proxy)
	mcpURL string // kernel-mcp's MCP endpoint
	base   string // kernel-mcp's issuer
	apiURL string // the hub's REST API
	dir    string // the hub's folder; kernel-mcp's state is in dir/state
	// proxyAPI is the proxy's routes API (token "proxy-api-test-token"),
	// which names the servers' own addresses.
	proxyAPI string
}

// hubOptions adds to startHubWith's set-up: kernel-mcp flags, and lines of
// jupyterhub_config.py run after the harness's own (HUB_DIR and HUB_VENV
// are defined for them).
type hubOptions struct {
	flags  []string
	config string
}

// startHub starts JupyterHub with users alice, bob (group mcp-users) and
// carol (no group), all with the password "hub-password", and kernel-mcp
// as a managed service that only mcp-users may use. env is added to the
// service's environment.
func startHub(t *testing.T, env map[string]string) *hubSetup { return startHubWith(t, env, false) }

// startHubWith is startHub; with viaHubProxy, clients and browsers reach
// kernel-mcp through the hub's own proxy, at <hub>/services/kernel-mcp/
// (its web view at .../ui/).
func startHubWith(t *testing.T, env map[string]string, viaHubProxy bool) *hubSetup {
	t.Helper()
	return startHubOpts(t, env, viaHubProxy, hubOptions{})
}

// startHubOpts is startHubWith with more flags and configuration.
func startHubOpts(t *testing.T, env map[string]string, viaHubProxy bool, opts hubOptions) *hubSetup {
	t.Helper()
	hub, proxy := requireOAuthParts(t)
	dir := t.TempDir()
	pub, hubPort, proxyAPI, mcpPort := freePort(t), freePort(t), freePort(t), freePort(t)
	python, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	s := &hubSetup{hubURL: fmt.Sprintf("http://127.0.0.1:%d", pub), base: fmt.Sprintf("http://127.0.0.1:%d", mcpPort),
		apiURL: fmt.Sprintf("http://127.0.0.1:%d/hub/api", hubPort), dir: dir, proxyAPI: fmt.Sprintf("http://127.0.0.1:%d/api/routes", proxyAPI)}
	extra := []string{"--ui", "127.0.0.1:0"}
	if viaHubProxy {
		s.base = s.hubURL + "/services/kernel-mcp"
		extra = append(extra, "--public-url", s.base)
	}
	s.mcpURL = s.base + "/mcp"
	serviceEnv := map[string]string{
		"HOME":                   dir,
		"PYTHON_MCP_INTERPRETER": strings.TrimSpace(string(python)),
		"IPYTHONDIR":             os.Getenv("IPYTHONDIR"),
	}
	for k, v := range env {
		serviceEnv[k] = v
	}
	envJSON, _ := json.Marshal(serviceEnv)
	cmdJSON, _ := json.Marshal(append([]string{binary, "--transport", "streamable-http", "--port", strconv.Itoa(mcpPort),
		"--auth", "oauth", "--hub-url", s.hubURL, "--allowed-groups", "mcp-users",
		"--state-dir", filepath.Join(dir, "state"), "--pool-size", "0", "--log-level", "debug"}, append(extra, opts.flags...)...))
	config := fmt.Sprintf(`
import json
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = %d
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = %d
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d"
c.ConfigurableHTTPProxy.auth_token = "proxy-api-test-token"
c.ConfigurableHTTPProxy.command = [%q]
c.JupyterHub.db_url = "sqlite:///%s/hub.sqlite"
c.JupyterHub.cookie_secret_file = "%s/cookie_secret"
c.JupyterHub.pid_file = "%s/hub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "hub-password"
c.Authenticator.allowed_users = {"alice", "bob", "carol"}
c.JupyterHub.spawner_class = "simple"
c.JupyterHub.load_groups = {"mcp-users": {"users": ["alice", "bob"]}}
# Every hub user may reach the service at the hub; kernel-mcp's own
# --allowed-groups then decides.
c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "access:services!service=kernel-mcp"]}]
c.JupyterHub.services = [{
    "name": "kernel-mcp",
    "command": json.loads(%q),
    "url": "http://127.0.0.1:%d",
    "oauth_redirect_uri": "%s/oauth/callback",
    "oauth_no_confirm": True,
    "environment": json.loads(%q),
}]
HUB_DIR = %q
HUB_VENV = %q
`, pub, hubPort, proxyAPI, proxy, dir, dir, dir, string(cmdJSON), mcpPort, s.base, string(envJSON), dir, filepath.Dir(filepath.Dir(hub))) + opts.config
	cfgPath := filepath.Join(dir, "jupyterhub_config.py")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hub, "-f", cfgPath)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	// The proxy runs in a session of its own and inherits the output: a
	// hub killed before it stops its proxy must not hold Wait forever.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The hub stops its proxy and its managed services when it stops.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		// A hub that could not stop its proxy (killed, or stopped while
		// it started) leaves it running: the proxy's pid file names it.
		if b, err := os.ReadFile(filepath.Join(dir, "jupyterhub-proxy.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("jupyterhub and kernel-mcp output:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for _, u := range []string{s.hubURL + "/hub/api/", s.base + "/.well-known/openid-configuration"} {
		for {
			resp, err := http.Get(u)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not answer in 90 s:\n%s", u, log.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if viaHubProxy {
		// RFC 8414's place for the metadata of an issuer with a path is at
		// the host's root: route it to kernel-mcp too, as a deployment can.
		// (Without it, a client whose first try meets the hub's redirect
		// to /hub/ goes on to the next place; go-sdk refuses redirects
		// into loopback addresses, which the hub here is on.)
		route := fmt.Sprintf("http://127.0.0.1:%d/api/routes/.well-known/oauth-authorization-server/services/kernel-mcp", proxyAPI)
		req, _ := http.NewRequest(http.MethodPost, route, strings.NewReader(fmt.Sprintf(`{"target": "http://127.0.0.1:%d"}`, mcpPort)))
		req.Header.Set("Authorization", "token proxy-api-test-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("adding the metadata route to the hub's proxy: %s", resp.Status)
		}
	}
	return s
}

// clientRedirect is the redirect URI of the MCP clients here; the browser
// stops at the redirect to it and hands the code to the client.
const clientRedirect = "http://127.0.0.1:1/callback"

// person is someone at a browser: cookies, and redirects followed except
// the last one, to the MCP client.
type person struct {
	t        *testing.T
	c        *http.Client
	name, pw string
	consent  string // "allow" or "deny"
}

func newPerson(t *testing.T, name, pw string) *person {
	return newPersonVia(t, name, pw, &http.Transport{})
}

// newPersonVia is newPerson with a browser that connects through tr.
func newPersonVia(t *testing.T, name, pw string, tr *http.Transport) *person {
	jar, _ := cookiejar.New(nil)
	t.Cleanup(tr.CloseIdleConnections)
	return &person{t: t, name: name, pw: pw, consent: "allow", c: &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), clientRedirect) {
				return http.ErrUseLastResponse
			}
			return nil
		}}}
}

var (
	formTag  = regexp.MustCompile(`(?is)<form[^>]*action="([^"]*)"[^>]*>(.*?)</form>`)
	inputTag = regexp.MustCompile(`(?is)<(?:input|button)[^>]*>`)
	attr     = regexp.MustCompile(`(?is)\b(name|value)="([^"]*)"`)
)

// form finds the page's form that has a field named field, and returns
// its action (absolute) and fields.
func form(page *url.URL, body, field string) (string, url.Values, bool) {
	for _, f := range formTag.FindAllStringSubmatch(body, -1) {
		vals := url.Values{}
		for _, in := range inputTag.FindAllString(f[2], -1) {
			var name, value string
			for _, a := range attr.FindAllStringSubmatch(in, -1) {
				if strings.EqualFold(a[1], "name") {
					name = html.UnescapeString(a[2])
				} else {
					value = html.UnescapeString(a[2])
				}
			}
			if name != "" && !strings.HasPrefix(strings.ToLower(in), "<button") {
				vals.Set(name, value)
			}
		}
		if _, ok := vals[field]; ok {
			action, err := page.Parse(html.UnescapeString(f[1]))
			if err != nil {
				return "", nil, false
			}
			return action.String(), vals, true
		}
	}
	return "", nil, false
}

// signIn follows the authorization URL through the hub's login page and
// kernel-mcp's consent page, and returns what was sent back to the client.
func (p *person) signIn(authURL string) (url.Values, string) {
	p.t.Helper()
	resp, body := p.do(http.MethodGet, authURL, nil)
	for step := 0; step < 8; step++ {
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, clientRedirect) {
			u, _ := url.Parse(loc)
			return u.Query(), body
		}
		if action, vals, ok := form(resp.Request.URL, body, "password"); ok {
			// The hub's form says username, oidc-provider's login.
			vals.Set("username", p.name)
			vals.Set("login", p.name)
			vals.Set("password", p.pw)
			resp, body = p.do(http.MethodPost, action, vals)
			continue
		}
		if action, vals, ok := form(resp.Request.URL, body, "consent_token"); ok {
			for _, want := range []string{p.name, clientRedirect} {
				if !strings.Contains(body, want) {
					p.t.Errorf("the consent page does not name %q:\n%s", want, body)
				}
			}
			vals.Set("decision", p.consent)
			resp, body = p.do(http.MethodPost, action, vals)
			continue
		}
		if action, vals, ok := form(resp.Request.URL, body, "prompt"); ok {
			// oidc-provider's own consent to releasing the claims.
			resp, body = p.do(http.MethodPost, action, vals)
			continue
		}
		break
	}
	return nil, fmt.Sprintf("%d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
}

// open opens a page as a browser does, signing in at the provider's
// login form when sent there, and returns the page it ends on.
func (p *person) open(u string) (*http.Response, string) {
	p.t.Helper()
	resp, body := p.do(http.MethodGet, u, nil)
	for step := 0; step < 6; step++ {
		if action, vals, ok := form(resp.Request.URL, body, "password"); ok {
			vals.Set("username", p.name)
			vals.Set("login", p.name)
			vals.Set("password", p.pw)
			resp, body = p.do(http.MethodPost, action, vals)
			continue
		}
		if action, vals, ok := form(resp.Request.URL, body, "prompt"); ok {
			// oidc-provider's own consent to releasing the claims.
			resp, body = p.do(http.MethodPost, action, vals)
			continue
		}
		break
	}
	return resp, body
}

func (p *person) do(method, u string, form url.Values) (*http.Response, string) {
	p.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// mcpAs connects go-sdk's client with its OAuth handler to mcpURL, the
// person signing in when the server asks.
func mcpAs(t *testing.T, mcpURL string, p *person, reg *auth.AuthorizationCodeHandlerConfig) (*mcp.ClientSession, error) {
	t.Helper()
	return mcpAsVia(t, mcpURL, p, reg, &http.Transport{})
}

// mcpAsVia is mcpAs with a client that connects through tr.
func mcpAsVia(t *testing.T, mcpURL string, p *person, reg *auth.AuthorizationCodeHandlerConfig, tr *http.Transport) (*mcp.ClientSession, error) {
	t.Helper()
	return mcpAsWith(t, mcpURL, p, reg, tr, nil, nil)
}

// mcpAsWith is mcpAsVia with the client's and the session's options.
func mcpAsWith(t *testing.T, mcpURL string, p *person, reg *auth.AuthorizationCodeHandlerConfig, tr *http.Transport, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	t.Helper()
	cs, _, err := connectAs(t, mcpURL, p, reg, tr, opts, sopts)
	return cs, err
}

// accessTokenAs signs p in through go-sdk's OAuth client and returns the
// access token it got, for raw requests.
func accessTokenAs(t *testing.T, mcpURL string, p *person) string {
	t.Helper()
	_, h, err := connectAs(t, mcpURL, p, dcr(), &http.Transport{}, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("%s's access token: %v", p.name, err)
	}
	return tok.AccessToken
}

// connectAs is mcpAsWith, returning the OAuth handler too.
func connectAs(t *testing.T, mcpURL string, p *person, reg *auth.AuthorizationCodeHandlerConfig, tr *http.Transport, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, *auth.AuthorizationCodeHandler, error) {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	reg.RedirectURL = clientRedirect
	reg.Client = hc
	reg.RequestRefreshToken = true
	reg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		back, page := p.signIn(args.URL)
		if back == nil {
			return nil, fmt.Errorf("the sign-in of %s stopped: %s", p.name, page)
		}
		if e := back.Get("error"); e != "" {
			return nil, fmt.Errorf("sign-in refused: %s: %s", e, back.Get("error_description"))
		}
		return &auth.AuthorizationResult{Code: back.Get("code"), State: back.Get("state"), Iss: back.Get("iss")}, nil
	}
	h, err := auth.NewAuthorizationCodeHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-it", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc, OAuthHandler: h}, sopts)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, h, nil
}

func dcr() *auth.AuthorizationCodeHandlerConfig {
	return &auth.AuthorizationCodeHandlerConfig{DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
		Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{clientRedirect}, ClientName: "go-sdk OAuth client",
			GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none",
		},
	}}
}

// callTool makes a tool call, failing the test when it gets no result.
func callTool(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := callTool(t, cs, &mcp.CallToolParams{Name: tool, Arguments: args})
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: %s", tool, b.String())
	}
	return b.String()
}

// TestOAuthJupyterHub: kernel-mcp as a JupyterHub service. alice signs in
// through the hub's login page with a client registered by DCR, bob with
// one named by a Client ID Metadata Document; each runs code and sees only
// their own sessions; carol, outside the allowed group, is refused.
func TestOAuthJupyterHub(t *testing.T) {
	t.Parallel()
	// The metadata document is served over https by the test; kernel-mcp
	// trusts the test's certificate through SSL_CERT_FILE.
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"client_id": docURL, "client_name": "CIMD client", "redirect_uris": []string{clientRedirect},
			"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none",
		})
	}))
	t.Cleanup(docs.Close)
	docURL = docs.URL + "/client-metadata.json"
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startHub(t, map[string]string{"SSL_CERT_FILE": certFile})

	// No token: 401 naming the resource metadata.
	resp, err := http.Post(s.mcpURL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if www := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(www, "resource_metadata=") {
		t.Fatalf("no token: %d %q", resp.StatusCode, www)
	}

	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	if out := callText(t, alice, "run_code", map[string]any{"session_id": "alices", "code": "x = 6 * 7\nprint(x)"}); !strings.Contains(out, "42") {
		t.Errorf("alice's run: %q", out)
	}
	bob, err := mcpAs(t, s.mcpURL, newPerson(t, "bob", "hub-password"), &auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
	})
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	if out := callText(t, bob, "run_code", map[string]any{"session_id": "bobs", "code": "print('bob here')"}); !strings.Contains(out, "bob here") {
		t.Errorf("bob's run: %q", out)
	}
	aliceList := callText(t, alice, "list_sessions", nil)
	bobList := callText(t, bob, "list_sessions", nil)
	if !strings.Contains(aliceList, "alices") || strings.Contains(aliceList, "bobs") {
		t.Errorf("alice's sessions: %s", aliceList)
	}
	if !strings.Contains(bobList, "bobs") || strings.Contains(bobList, "alices") {
		t.Errorf("bob's sessions: %s", bobList)
	}

	// Tasks are each person's too: alice's task (SEP-2663, raw requests
	// with the access token go-sdk's client got) is unknown to bob.
	aliceTasks := &sepHTTPClient{t: t, url: s.mcpURL, token: accessTokenAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"))}
	bobTasks := &sepHTTPClient{t: t, url: s.mcpURL, token: accessTokenAs(t, s.mcpURL, newPerson(t, "bob", "hub-password"))}
	made, _ := aliceTasks.post("tools/call", map[string]any{"name": "run_code", "arguments": map[string]any{"session_id": "alices", "code": "x * 2", "background": true}}, nil)
	result, _ := made["result"].(map[string]any)
	taskID, _ := result["taskId"].(string)
	if result["resultType"] != "task" || len(taskID) != 32 {
		t.Fatalf("alice's background run_code under 2026-07-28: %v", made)
	}
	if got, _ := aliceTasks.post("tasks/get", map[string]any{"taskId": taskID}, nil); got["error"] != nil {
		t.Errorf("alice's tasks/get of her task: %v", got)
	}
	other, _ := bobTasks.post("tasks/get", map[string]any{"taskId": taskID}, nil)
	unknown, _ := bobTasks.post("tasks/get", map[string]any{"taskId": "0123456789abcdef0123456789abcdef"}, nil)
	if fmt.Sprint(other["error"]) != fmt.Sprint(unknown["error"]) || !strings.Contains(fmt.Sprint(other["error"]), "-32602") {
		t.Errorf("bob's tasks/get of alice's task: %v; of an unknown one: %v", other, unknown)
	}

	// The web view signs in through the hub too, and shows each person
	// their own sessions; without the sign-in, its API answers 401.
	aliceBrowser := newPerson(t, "alice", "hub-password")
	resp, body := aliceBrowser.open(s.base + "/ui/")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" || !strings.Contains(body, "<html") {
		t.Errorf("alice's web view: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, body = aliceBrowser.do(http.MethodGet, s.base+"/ui/api/sessions", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "alices") || strings.Contains(body, "bobs") {
		t.Errorf("alice's web view sessions: %d %s", resp.StatusCode, body)
	}
	resp, body = newPerson(t, "bob", "hub-password").do(http.MethodGet, s.base+"/ui/api/sessions", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the web view's API without signing in: %d %s", resp.StatusCode, body)
	}
	if resp, _ := newPerson(t, "carol", "hub-password").open(s.base + "/ui/"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("carol's web view: %d at %s", resp.StatusCode, resp.Request.URL)
	}

	// carol signs in at the hub, but is not in mcp-users.
	if _, err := mcpAs(t, s.mcpURL, newPerson(t, "carol", "hub-password"), dcr()); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("carol: %v, want access_denied", err)
	}
	// A wrong hub password gets no further than the hub's login page.
	if _, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "wrong"), dcr()); err == nil {
		t.Error("alice with a wrong password got in")
	}
}

// startOIDCProvider runs panva's oidc-provider (integration/oauth) on a
// free port with kernel-mcp's redirect URI registered, and returns its
// issuer.
func startOIDCProvider(t *testing.T, redirect string) string {
	t.Helper()
	script, _ := filepath.Abs(filepath.Join("oauth", "oidc-provider.mjs"))
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join("oauth", "node_modules", "oidc-provider")); err != nil || serr != nil {
		msg := "the OpenID provider test needs node and oidc-provider (cd integration/oauth && npm ci)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := freePort(t)
	cmd := exec.Command(node, script, strconv.Itoa(port), redirect)
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("oidc-provider output:\n%s", log.String())
		}
	})
	issuer := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(issuer + "/.well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return issuer
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("oidc-provider did not start:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOAuthOpenIDProvider: the same flow with the sign-in delegated to a
// real OpenID provider found by discovery: alice (in mcp-users) runs code
// through go-sdk's client and the official Python SDK's, bob through the
// TypeScript SDK's, carol (in no group) is refused.
func TestOAuthOpenIDProvider(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	issuer := startOIDCProvider(t, base+"/oauth/callback")
	cmd := exec.Command(binary, "--transport", "streamable-http", "--port", strconv.Itoa(port), "--state-dir", t.TempDir(),
		"--pool-size", "0", "--auth", "oauth", "--oidc-issuer", issuer, "--oidc-client-id", "kernel-mcp", "--allowed-groups", "mcp-users")
	cmd.Env = append(os.Environ(), "KERNEL_MCP_OIDC_CLIENT_SECRET=kernel-mcp-test-secret")
	mcpURL := startHTTPCmd(t, cmd)

	alice, err := mcpAs(t, mcpURL, newPerson(t, "alice", "any"), dcr())
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	if out := callText(t, alice, "run_code", map[string]any{"code": "print(2 ** 10)"}); !strings.Contains(out, "1024") {
		t.Errorf("alice's run: %q", out)
	}
	if _, err := mcpAs(t, mcpURL, newPerson(t, "carol", "any"), dcr()); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("carol: %v, want access_denied", err)
	}

	// The official TypeScript SDK's OAuth client, as bob.
	script, _ := filepath.Abs(filepath.Join("testdata", "oauth-client.mjs"))
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil || serr != nil {
		msg := "node or the TypeScript MCP SDK is missing: run `npm ci` in integration/"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr lockedBuffer
	ts := exec.CommandContext(ctx, node, script, mcpURL, "bob", "any", "import getpass\nprint('ts', 6 * 7)")
	ts.Stderr = &stderr
	out, err := ts.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var got struct{ Text string }
	if err := json.Unmarshal(out, &got); err != nil || !strings.Contains(got.Text, "ts 42") {
		t.Errorf("TypeScript client's run: %q (%v)", out, err)
	}

	// The official Python SDK's OAuth client (mcp 2.3, which speaks
	// 2026-07-28 and checks iss), as alice again.
	hub, _ := requireOAuthParts(t)
	py := exec.CommandContext(ctx, filepath.Join(filepath.Dir(hub), "python"), filepath.Join("testdata", "oauth_client.py"), mcpURL, "alice", "any", "print('py', 6 * 7)")
	stderr = lockedBuffer{}
	py.Stderr = &stderr
	if out, err = py.Output(); err != nil {
		t.Fatalf("Python client: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if err := json.Unmarshal(out, &got); err != nil || !strings.Contains(got.Text, "py 42") {
		t.Errorf("Python client's run: %q (%v)", out, err)
	}
}

// TestOAuthBehindTLSProxy: kernel-mcp on loopback behind a TLS proxy on
// the same machine that keeps the public Host, as a deployment has it.
// The public name is example.com (the test certificate's), which the
// clients here resolve to the proxy. A client signs in and runs code, and
// the web view runs a cell from its page: the loopback guards take the
// public name as the listener's own.
func TestOAuthBehindTLSProxy(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	port := freePort(t)
	backend, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	proxy := httptest.NewUnstartedServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(backend)
		r.Out.Host = r.In.Host
	}})
	proxy.StartTLS()
	t.Cleanup(proxy.Close)
	proxyPort := proxy.Listener.Addr().(*net.TCPAddr).Port
	public := fmt.Sprintf("https://example.com:%d", proxyPort)
	// Every client here reaches example.com at the proxy, trusting its
	// certificate.
	via := func() *http.Transport {
		tr := proxy.Client().Transport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, p, _ := net.SplitHostPort(addr); host == "example.com" {
				addr = net.JoinHostPort("127.0.0.1", p)
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		return tr
	}
	issuer := startOIDCProvider(t, public+"/oauth/callback")
	cmd := exec.Command(binary, "--transport", "streamable-http", "--port", strconv.Itoa(port), "--state-dir", t.TempDir(),
		"--pool-size", "0", "--auth", "oauth", "--public-url", public, "--oidc-issuer", issuer, "--oidc-client-id", "kernel-mcp", "--ui", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "KERNEL_MCP_OIDC_CLIENT_SECRET=kernel-mcp-test-secret")
	startHTTPCmd(t, cmd)

	alice, err := mcpAsVia(t, public+"/mcp", newPersonVia(t, "alice", "any", via()), dcr(), via())
	if err != nil {
		t.Fatalf("alice through the proxy: %v", err)
	}
	if out := callText(t, alice, "run_code", map[string]any{"session_id": "viaproxy", "code": "print('through', 'the proxy')"}); !strings.Contains(out, "through the proxy") {
		t.Errorf("alice's run: %q", out)
	}
	browser := newPersonVia(t, "alice", "any", via())
	resp, body := browser.open(public + "/ui/")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" || !strings.Contains(body, "<html") {
		t.Fatalf("the web view through the proxy: %d at %s: %.300s", resp.StatusCode, resp.Request.URL, body)
	}
	// A cell run from the page: a POST with the page's Origin.
	req, _ := http.NewRequest(http.MethodPost, public+"/ui/api/sessions/viaproxy/run", strings.NewReader(`{"code":"print(1)"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", public)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	run, err := browser.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(run.Body)
	run.Body.Close()
	if run.StatusCode != http.StatusAccepted {
		t.Errorf("a cell from the page through the proxy: %d %s", run.StatusCode, b)
	}
	// Another site's page still cannot.
	req, _ = http.NewRequest(http.MethodPost, public+"/ui/api/sessions/viaproxy/run", strings.NewReader(`{"code":"print(1)"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	if run, err := browser.c.Do(req); err != nil || run.StatusCode != http.StatusForbidden {
		t.Errorf("a cell from another site: %v %v", run.StatusCode, err)
	}
}

// TestOAuthJupyterHubProxyRoute: clients reach kernel-mcp through the
// hub's own proxy at <hub>/services/kernel-mcp/ (--public-url with that
// path), as a Zero to JupyterHub install routes a service; they find its
// metadata below the path, sign in at the hub and run code. The web view
// is there too, at .../services/kernel-mcp/ui/: alice's browser (chromium)
// is sent through the hub's login, comes back to it, sees the cell her
// client ran and runs one of its own, a chart among them.
func TestOAuthJupyterHubProxyRoute(t *testing.T) {
	t.Parallel()
	s := startHubWith(t, nil, true)
	alice, err := mcpAs(t, s.mcpURL, newPerson(t, "alice", "hub-password"), dcr())
	if err != nil {
		t.Fatalf("alice through the hub's proxy: %v", err)
	}
	const clientCode = "print('via', 'the hub')"
	if out := callText(t, alice, "run_code", map[string]any{"session_id": "viahub", "code": clientCode}); !strings.Contains(out, "via the hub") {
		t.Errorf("alice's run: %q", out)
	}
	webURL := s.base + "/ui/"
	if out := callText(t, alice, "list_sessions", nil); !strings.Contains(out, webURL) {
		t.Errorf("list_sessions does not give the web view's URL %s: %s", webURL, out)
	}
	// Without signing in, the view's API answers 401; carol, outside the
	// allowed group, is refused after the hub's login.
	if resp, body := newPerson(t, "bob", "hub-password").do(http.MethodGet, webURL+"api/sessions", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the web view's API without signing in: %d %s", resp.StatusCode, body)
	}
	if resp, _ := newPerson(t, "carol", "hub-password").open(webURL); resp.StatusCode != http.StatusForbidden {
		t.Errorf("carol's web view: %d at %s", resp.StatusCode, resp.Request.URL)
	}

	t.Run("web view in a browser", func(t *testing.T) {
		chromium, node := browserTools(t)
		personCode := "page_value = 6 * 7\nprint('from the page', page_value)"
		runBrowser(t, node, "hub", map[string]any{
			"chromium": chromium, "artifacts": browserArtifacts(t),
			"webURL": webURL, "user": "alice", "password": "hub-password",
			"session": "viahub", "clientCode": clientCode, "personCode": personCode,
			"chartCode": "import plotly.graph_objects as go\ngo.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], mode='markers')).show()",
		}, func(name string, msg map[string]any) map[string]any {
			if name != "person-ran" {
				return map[string]any{"error": "no sync point " + name + " in the hub suite"}
			}
			code, _ := msg["code"].(string)
			h := callText(t, alice, "get_history", map[string]any{"session_id": "viahub"})
			for _, line := range strings.Split(h, "\n") {
				if strings.Contains(line, "(by the person) "+code) {
					return map[string]any{"ok": true, "detail": line}
				}
			}
			return map[string]any{"ok": false, "detail": "no block marked as the person's with the code in get_history:\n" + h}
		})
	})
}

// TestOAuthRestartKeepsSignIn: a client signed in before kernel-mcp
// restarts goes on with the same token afterwards, without signing in
// again: the keys and grants are in the state folder.
func TestOAuthRestartKeepsSignIn(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	issuer := startOIDCProvider(t, base+"/oauth/callback")
	state := t.TempDir()
	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(binary, "--transport", "streamable-http", "--port", strconv.Itoa(port), "--state-dir", state,
			"--pool-size", "0", "--auth", "oauth", "--oidc-issuer", issuer, "--oidc-client-id", "kernel-mcp")
		cmd.Env = append(os.Environ(), "KERNEL_MCP_OIDC_CLIENT_SECRET=kernel-mcp-test-secret")
		return cmd, startHTTPCmd(t, cmd)
	}
	first, mcpURL := start()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	signIns := 0
	p := newPerson(t, "alice", "any")
	reg := dcr()
	reg.RedirectURL, reg.Client = clientRedirect, hc
	reg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		signIns++
		back, page := p.signIn(args.URL)
		if back == nil || back.Get("code") == "" {
			return nil, fmt.Errorf("sign-in stopped: %s", page)
		}
		return &auth.AuthorizationResult{Code: back.Get("code"), State: back.Get("state"), Iss: back.Get("iss")}, nil
	}
	h, err := auth.NewAuthorizationCodeHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	connect := func(h *auth.AuthorizationCodeHandler) *mcp.ClientSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "restart", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc, OAuthHandler: h}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	cs := connect(h)
	callText(t, cs, "run_code", map[string]any{"session_id": "kept", "code": "print('before')"})
	cs.Close()

	// Stop it, and start it again on the same port and state folder.
	first.Process.Signal(interruptSignal)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first kernel-mcp did not stop")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start()
	ts, err := h.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("the handler has no token source: %v", err)
	}
	again := dcr()
	again.RedirectURL, again.Client, again.InitialTokenSource = clientRedirect, hc, ts
	again.AuthorizationCodeFetcher = func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return nil, fmt.Errorf("asked to sign in again after the restart")
	}
	h2, err := auth.NewAuthorizationCodeHandler(again)
	if err != nil {
		t.Fatal(err)
	}
	cs = connect(h2)
	defer cs.Close()
	if out := callText(t, cs, "run_code", map[string]any{"session_id": "kept", "code": "print('after')"}); !strings.Contains(out, "after") {
		t.Errorf("after the restart: %q", out)
	}
	if out := callText(t, cs, "get_history", map[string]any{"session_id": "kept"}); !strings.Contains(out, "before") {
		t.Errorf("alice's history after the restart: %q", out)
	}
	if signIns != 1 {
		t.Errorf("%d sign-ins, want 1", signIns)
	}
}
