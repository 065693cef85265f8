package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Scope is the one scope kernel-mcp grants: use of the user's sessions.
const Scope = "mcp"

// How a client came to be known.
const (
	registeredDCR  = "dcr"  // RFC 7591, POST /oauth/register
	registeredCIMD = "cimd" // its client id is the URL of its metadata document
)

// client is a registered OAuth client. Every client is public (no secret)
// and must use PKCE with S256: MCP clients run on people's machines, where
// no secret stays secret.
type client struct {
	ID         string    `json:"client_id"`
	Name       string    `json:"client_name,omitempty"`
	URI        string    `json:"client_uri,omitempty"`
	Redirects  []string  `json:"redirect_uris"`
	Grants     []string  `json:"grant_types"`
	Registered string    `json:"registered"`
	Created    time.Time `json:"created"`

	loginURL func(authRequestID string) string
}

var _ op.Client = (*client)(nil)

func (c *client) GetID() string                    { return c.ID }
func (c *client) RedirectURIs() []string           { return c.Redirects }
func (c *client) PostLogoutRedirectURIs() []string { return nil }

// ApplicationType is native for every client: op then accepts https
// redirects, loopback ones on any port (RFC 8252) and custom schemes, and
// refuses plain http elsewhere.
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *client) GrantTypes() []oidc.GrantType {
	out := []oidc.GrantType{oidc.GrantTypeCode}
	if slices.Contains(c.Grants, string(oidc.GrantTypeRefreshToken)) {
		out = append(out, oidc.GrantTypeRefreshToken)
	}
	return out
}
func (c *client) LoginURL(id string) string            { return c.loginURL(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return 10 * time.Minute }
func (c *client) DevMode() bool                        { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) IsScopeAllowed(scope string) bool     { return scope == Scope }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// displayName is how the consent page names the client: its own name,
// which it chose itself, then where it really comes from.
func (c *client) displayName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// clientMetadata is the client metadata of RFC 7591 and of a Client ID
// Metadata Document, as far as kernel-mcp reads it.
type clientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// Limits on what a client may register.
const (
	maxRedirectURIs     = 10
	maxClientNameLength = 100
	maxURILength        = 2000
	maxMetadataDocument = 64 << 10
	maxDCRClients       = 10000
)

// errInvalidClientMetadata is the RFC 7591 error code for metadata refused.
var errInvalidClientMetadata = errors.New("invalid_client_metadata")

// errInvalidRedirectURI is the RFC 7591 error code for a redirect refused.
var errInvalidRedirectURI = errors.New("invalid_redirect_uri")

// metadataError is a refusal of client metadata, with its RFC 7591 code.
type metadataError struct {
	code error
	msg  string
}

func (e *metadataError) Error() string { return e.msg }
func (e *metadataError) Unwrap() error { return e.code }

func badMetadata(format string, args ...any) error {
	return &metadataError{errInvalidClientMetadata, fmt.Sprintf(format, args...)}
}

func badRedirect(format string, args ...any) error {
	return &metadataError{errInvalidRedirectURI, fmt.Sprintf(format, args...)}
}

// validate checks metadata and turns it into a client. Only public clients
// with the authorization code grant are accepted.
func (m *clientMetadata) validate() (*client, error) {
	if len(m.RedirectURIs) == 0 {
		return nil, badRedirect("redirect_uris is missing: name at least one")
	}
	if len(m.RedirectURIs) > maxRedirectURIs {
		return nil, badRedirect("redirect_uris names %d URIs; at most %d", len(m.RedirectURIs), maxRedirectURIs)
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, err
		}
	}
	switch m.TokenEndpointAuthMethod {
	case "", string(oidc.AuthMethodNone):
	default:
		return nil, badMetadata("token_endpoint_auth_method %q is not supported: clients are public (\"none\") and prove themselves with PKCE", m.TokenEndpointAuthMethod)
	}
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{string(oidc.GrantTypeCode)}
	}
	for _, g := range grants {
		if g != string(oidc.GrantTypeCode) && g != string(oidc.GrantTypeRefreshToken) {
			return nil, badMetadata("grant type %q is not supported: only authorization_code and refresh_token", g)
		}
	}
	if !slices.Contains(grants, string(oidc.GrantTypeCode)) {
		return nil, badMetadata("grant_types must include authorization_code")
	}
	for _, t := range m.ResponseTypes {
		if t != string(oidc.ResponseTypeCode) {
			return nil, badMetadata("response type %q is not supported: only code", t)
		}
	}
	if len(m.ClientName) > maxClientNameLength {
		return nil, badMetadata("client_name is over %d characters", maxClientNameLength)
	}
	if len(m.ClientURI) > maxURILength {
		return nil, badMetadata("client_uri is over %d characters", maxURILength)
	}
	if m.ClientURI != "" {
		if u, err := url.Parse(m.ClientURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, badMetadata("client_uri %q is not an http(s) URL", m.ClientURI)
		}
	}
	return &client{
		Name:      m.ClientName,
		URI:       m.ClientURI,
		Redirects: slices.Clone(m.RedirectURIs),
		Grants:    slices.Clone(grants),
	}, nil
}

// checkRedirectURI accepts an absolute https URL, a loopback http URL
// (RFC 8252), or a private-use scheme such as com.example.app:/cb; never a
// fragment.
func checkRedirectURI(raw string) error {
	if len(raw) > maxURILength {
		return badRedirect("redirect URI is over %d characters", maxURILength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return badRedirect("redirect URI %q is not an absolute URI", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return badRedirect("redirect URI %q has a fragment", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return badRedirect("redirect URI %q has no host", raw)
		}
	case "http":
		if !loopbackHost(u.Hostname()) {
			return badRedirect("redirect URI %q is plain http to a host other than this machine: use https, or http://127.0.0.1", raw)
		}
	case "javascript", "data", "file", "vbscript":
		return badRedirect("redirect URI %q has a scheme that cannot be a redirect", raw)
	default:
		// A private-use scheme (RFC 8252 section 7.1): a native app.
	}
	return nil
}

// loopbackHost reports whether host (no port) is this machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
