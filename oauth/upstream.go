package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"
)

// OIDCConfig configures the sign-in through an OpenID Connect provider.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its endpoints are discovered
	// from Issuer/.well-known/openid-configuration.
	Issuer       string
	ClientID     string
	ClientSecret string // "" for a public client (PKCE alone)
	// RedirectURL is kernel-mcp's Issuer+PathCallback, registered at the
	// provider for this client.
	RedirectURL string
	// UserClaim names the ID token claim that is the kernel-mcp user name;
	// default preferred_username (then sub).
	UserClaim string
	// GroupsClaim names the claim listing the user's groups; default groups.
	GroupsClaim string
	// HTTPClient talks to the provider; nil: a default one.
	HTTPClient *http.Client
}

// OIDC is an Upstream that is any OpenID Connect provider, found by
// discovery; zitadel/oidc's relying party checks its ID tokens.
type OIDC struct {
	cfg OIDCConfig
	rp  rp.RelyingParty
}

// NewOIDC discovers the provider and returns the Upstream.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("OpenID provider: the issuer, the client id and the redirect URL are required")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "preferred_username"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	opts := []rp.Option{rp.WithHTTPClient(hc), rp.WithSigningAlgsFromDiscovery()}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := rp.NewRelyingPartyOIDC(ctx, cfg.Issuer, cfg.ClientID, cfg.ClientSecret, cfg.RedirectURL, []string{oidc.ScopeOpenID, oidc.ScopeProfile}, opts...)
	if err != nil {
		return nil, fmt.Errorf("OpenID provider %s: %v", cfg.Issuer, err)
	}
	return &OIDC{cfg: cfg, rp: p}, nil
}

// Name is part of Upstream.
func (o *OIDC) Name() string { return o.cfg.Issuer }

// AuthCodeURL is part of Upstream.
func (o *OIDC) AuthCodeURL(state, verifier string) string {
	return rp.AuthURL(state, o.rp, rp.WithCodeChallenge(oidc.NewSHACodeChallenge(verifier)))
}

// Exchange is part of Upstream: the ID token is verified (signature,
// issuer, audience, expiry) and names the user.
func (o *OIDC) Exchange(ctx context.Context, code, verifier string) (Identity, error) {
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, o.rp, rp.WithCodeVerifier(verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("code exchange: %v", err)
	}
	c := tokens.IDTokenClaims
	claims := map[string]any{}
	for k, v := range c.Claims {
		claims[k] = v
	}
	claims["sub"] = c.Subject
	if c.PreferredUsername != "" {
		claims["preferred_username"] = c.PreferredUsername
	}
	name, _ := claims[o.cfg.UserClaim].(string)
	if name == "" && o.cfg.UserClaim == "preferred_username" {
		name = c.Subject
	}
	if name == "" {
		return Identity{}, fmt.Errorf("the ID token has no %q claim to name the user", o.cfg.UserClaim)
	}
	return Identity{Name: name, Groups: stringList(claims[o.cfg.GroupsClaim])}, nil
}

func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = x
	case string:
		out = strings.Fields(x)
	}
	return out
}

// HubConfig configures the sign-in through JupyterHub, with kernel-mcp as
// a hub service that is an OAuth client of the hub. A managed service
// gets all of it from the environment the hub gives it (HubConfigFromEnv).
type HubConfig struct {
	// URL is the hub's public URL as browsers reach it, such as
	// https://hub.example.org (the hub's base URL included, when not /).
	URL string
	// APIURL is the hub's API as kernel-mcp reaches it, such as
	// http://127.0.0.1:8081/hub/api; default URL + /hub/api.
	APIURL string
	// ClientID is the service's OAuth client id (service-<name>).
	ClientID string
	// APIToken is the service's API token: its OAuth client secret too.
	APIToken string
	// RedirectURL is kernel-mcp's Issuer+PathCallback, the service's
	// oauth_redirect_uri in the hub's configuration.
	RedirectURL string
	// HTTPClient talks to the hub; nil: a default one.
	HTTPClient *http.Client
}

// HubConfigFromEnv reads what JupyterHub gives a service it manages (or an
// external service configured the same way): JUPYTERHUB_API_URL,
// JUPYTERHUB_API_TOKEN, JUPYTERHUB_CLIENT_ID, and JUPYTERHUB_HOST with
// JUPYTERHUB_BASE_URL for the public address. hubURL, when set, is the
// public address instead (--hub-url).
func HubConfigFromEnv(getenv func(string) string, hubURL, redirectURL string) (HubConfig, error) {
	c := HubConfig{
		URL:         strings.TrimSuffix(hubURL, "/"),
		APIURL:      strings.TrimSuffix(getenv("JUPYTERHUB_API_URL"), "/"),
		ClientID:    getenv("JUPYTERHUB_CLIENT_ID"),
		APIToken:    getenv("JUPYTERHUB_API_TOKEN"),
		RedirectURL: redirectURL,
	}
	if c.URL == "" {
		if host := getenv("JUPYTERHUB_HOST"); host != "" {
			c.URL = strings.TrimSuffix(host+getenv("JUPYTERHUB_BASE_URL"), "/")
		}
	}
	if c.APIToken == "" {
		return c, errors.New("JupyterHub sign-in: JUPYTERHUB_API_TOKEN is not set: run kernel-mcp as a hub service (jupyterhub_config.py c.JupyterHub.services), or set it to the service's api_token")
	}
	if c.URL == "" {
		return c, errors.New("JupyterHub sign-in: the hub's public URL is unknown: set --hub-url (KERNEL_MCP_HUB_URL), such as https://hub.example.org")
	}
	if c.ClientID == "" {
		return c, errors.New("JupyterHub sign-in: JUPYTERHUB_CLIENT_ID is not set: give the service oauth_client_id (service-<name>) and oauth_redirect_uri in jupyterhub_config.py")
	}
	return c, nil
}

// Hub is an Upstream that is JupyterHub: the hub signs the person in with
// its own authenticator, and the hub user is the kernel-mcp user.
type Hub struct {
	cfg   HubConfig
	oauth oauth2.Config
	hc    *http.Client
}

// NewHub returns the JupyterHub Upstream. It does not reach the hub.
func NewHub(cfg HubConfig) (*Hub, error) {
	if cfg.URL == "" || cfg.ClientID == "" || cfg.APIToken == "" || cfg.RedirectURL == "" {
		return nil, errors.New("JupyterHub sign-in: the hub URL, client id, API token and redirect URL are required")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("JupyterHub sign-in: hub URL %q is not an http(s) URL", cfg.URL)
	}
	cfg.URL = strings.TrimSuffix(cfg.URL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = cfg.URL + "/hub/api"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Hub{cfg: cfg, hc: hc, oauth: oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.APIToken,
		RedirectURL:  cfg.RedirectURL,
		Endpoint: oauth2.Endpoint{
			AuthURL:   cfg.URL + "/hub/api/oauth2/authorize",
			TokenURL:  cfg.APIURL + "/oauth2/token",
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}}, nil
}

// Name is part of Upstream.
func (h *Hub) Name() string { return "JupyterHub at " + h.cfg.URL }

// AuthCodeURL is part of Upstream.
func (h *Hub) AuthCodeURL(state, verifier string) string {
	return h.oauth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
}

// Exchange is part of Upstream: the hub's token names the hub user
// (GET /hub/api/user), and comes with the identity (Identity.Token), for
// Config.SignedIn to keep or drop.
func (h *Hub) Exchange(ctx context.Context, code, verifier string) (Identity, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, h.hc)
	tok, err := h.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("code exchange with the hub: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.cfg.APIURL+"/user", nil)
	if err != nil {
		return Identity{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := h.hc.Do(req)
	if err != nil {
		return Identity{}, fmt.Errorf("asking the hub who signed in: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Identity{}, fmt.Errorf("asking the hub who signed in: %s", resp.Status)
	}
	var u struct {
		Name   string   `json:"name"`
		Kind   string   `json:"kind"`
		Groups []string `json:"groups"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&u); err != nil {
		return Identity{}, fmt.Errorf("the hub's answer about the user: %v", err)
	}
	if u.Kind != "" && u.Kind != "user" {
		return Identity{}, fmt.Errorf("the hub signed in a %s, not a user", u.Kind)
	}
	if u.Name == "" {
		return Identity{}, errors.New("the hub named no user")
	}
	return Identity{Name: u.Name, Groups: u.Groups, Token: tok}, nil
}
