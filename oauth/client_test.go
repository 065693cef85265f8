package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// clientRedirect is where the MCP clients in these tests say they listen;
// the browser stops at the redirect there and hands the code over.
const clientRedirect = "http://127.0.0.1:1/callback"

// sdkClient connects go-sdk's MCP client, with its own OAuth handler
// (AuthorizationCodeHandler: discovery, registration, PKCE, the resource
// parameter), to the env's /mcp as user, and returns whom the server saw.
func sdkClient(t *testing.T, e *env, cfg *auth.AuthorizationCodeHandlerConfig, user, password string) (*mcp.ClientSession, *auth.AuthorizationCodeHandler) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	b := newBrowser(t, clientRedirect)
	cfg.RedirectURL = clientRedirect
	cfg.Client = hc
	cfg.RequestRefreshToken = true
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		p := b.signIn(args.URL, user, password, "allow")
		if p.back == nil || p.back.Get("code") == "" {
			t.Fatalf("sign-in as %s did not come back with a code: %d %s %v", user, p.status, p.body, p.back)
		}
		return &auth.AuthorizationResult{Code: p.back.Get("code"), State: p.back.Get("state"), Iss: p.back.Get("iss")}, nil
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.cfg.Resource, HTTPClient: hc, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, h
}

func whoami(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func dcrConfig() *auth.AuthorizationCodeHandlerConfig {
	return &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{clientRedirect},
			ClientName:              "go-sdk test client",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			TokenEndpointAuthMethod: "none",
		}},
	}
}

// TestSDKClientDCR: go-sdk's client discovers the server from the 401,
// registers by Dynamic Client Registration, signs alice in through the
// provider's form, consents, gets a token and calls a tool as alice; bob
// the same as bob.
func TestSDKClientDCR(t *testing.T) {
	e := newEnv(t, nil)
	for _, u := range []struct{ name, pw string }{{"alice", "alice-pw"}, {"bob", "bob-pw"}} {
		cs, _ := sdkClient(t, e, dcrConfig(), u.name, u.pw)
		if got := whoami(t, cs); got != u.name {
			t.Errorf("whoami = %q, want %q", got, u.name)
		}
	}
}

// TestSDKClientCIMD: the client is named by a Client ID Metadata Document
// served over https; the server fetches it and needs no registration.
func TestSDKClientCIMD(t *testing.T) {
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"client_id":                  docURL,
			"client_name":                "CIMD test client",
			"redirect_uris":              []string{clientRedirect},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none",
		})
	}))
	t.Cleanup(docs.Close)
	docURL = docs.URL + "/client.json"
	docsClient := docs.Client()
	t.Cleanup(docsClient.CloseIdleConnections)
	e := newEnv(t, func(c *Config) { c.HTTPClient = docsClient })
	cs, _ := sdkClient(t, e, &auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
	}, "alice", "alice-pw")
	if got := whoami(t, cs); got != "alice" {
		t.Errorf("whoami = %q, want alice", got)
	}
	if n := len(e.as.store.st.Clients); n != 0 {
		t.Errorf("%d clients stored; a metadata document client needs no registration", n)
	}
}

// TestSDKClientRefreshes: with short-lived access tokens, go-sdk's client
// refreshes on its own, and each refresh rotates the refresh token; the
// calls go on as the same user.
func TestSDKClientRefreshes(t *testing.T) {
	// golang.org/x/oauth2 counts a token as expired 10 s early: with 5 s
	// tokens, every call after the first refreshes.
	e := newEnv(t, func(c *Config) { c.AccessTokenLifetime = 5 * time.Second })
	cs, _ := sdkClient(t, e, dcrConfig(), "alice", "alice-pw")
	for range 3 {
		if got := whoami(t, cs); got != "alice" {
			t.Fatalf("whoami = %q, want alice", got)
		}
	}
	e.as.store.mu.Lock()
	defer e.as.store.mu.Unlock()
	used, live := 0, 0
	for _, rt := range e.as.store.st.Refresh {
		if rt.Used {
			used++
		} else {
			live++
		}
	}
	if used < 2 || live != 1 {
		t.Errorf("refresh tokens: %d used (rotated), %d live; want at least 2 rotations and one live token", used, live)
	}
	for _, g := range e.as.store.st.Grants {
		if g.Revoked {
			t.Errorf("grant revoked during normal refreshes: %s", g.RevokedBy)
		}
	}
}

// TestIssuerBelowAPath: served below a path prefix (as JupyterHub's proxy
// routes /services/<name>/), the server is found and signs in as well:
// its metadata at <issuer>/.well-known/openid-configuration, its cookies
// and pages below the prefix.
func TestIssuerBelowAPath(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Issuer = c.Issuer + "/services/kernel-mcp"
		c.Resource = c.Issuer + "/mcp"
	})
	cs, _ := sdkClient(t, e, dcrConfig(), "bob", "bob-pw")
	if got := whoami(t, cs); got != "bob" {
		t.Errorf("whoami = %q, want bob", got)
	}
	b := newBrowser(t, "http://127.0.0.1:1/never")
	p := b.get(e.srv.URL + "/services/kernel-mcp" + PathResourceMetadata + "/mcp")
	if p.status != 200 || !strings.Contains(p.body, e.cfg.Resource) {
		t.Errorf("resource metadata below the prefix: %d %s", p.status, p.body)
	}
}
