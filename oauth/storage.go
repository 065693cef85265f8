package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is one authorization in progress, from /oauth/authorize to
// the exchange of its code. Kept in memory only: it lives minutes.
type authRequest struct {
	ID            string
	ClientID      string
	RedirectURI   string
	State         string
	Nonce         string
	Scopes        []string
	ResponseType  oidc.ResponseType
	ResponseMode  oidc.ResponseMode
	CodeChallenge *oidc.CodeChallenge
	Created       time.Time
	resource      string

	// Set during the sign-in.
	browser        string // digest of the browser binding cookie's value
	upstreamState  string
	upstreamVerify string
	consentToken   string
	Subject        string
	Groups         []string // the provider's groups of Subject, at sign-in
	AuthTime       time.Time
	done           bool
	code           string
	grantID        string // set when tokens are made from it
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                         { return a.ID }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return nil }
func (a *authRequest) GetAudience() []string                 { return []string{a.resource} }
func (a *authRequest) GetAuthTime() time.Time                { return a.AuthTime }
func (a *authRequest) GetClientID() string                   { return a.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.CodeChallenge }
func (a *authRequest) GetNonce() string                      { return a.Nonce }
func (a *authRequest) GetRedirectURI() string                { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.ResponseMode }
func (a *authRequest) GetScopes() []string                   { return a.Scopes }
func (a *authRequest) GetState() string                      { return a.State }
func (a *authRequest) GetSubject() string                    { return a.Subject }
func (a *authRequest) Done() bool                            { return a.done }

// refreshRequest is a grant as op sees it when a refresh token is used.
type refreshRequest struct {
	g        grant
	scopes   []string
	resource string
	token    string // the refresh token presented
}

var _ op.RefreshTokenRequest = (*refreshRequest)(nil)

func (r *refreshRequest) GetAMR() []string            { return nil }
func (r *refreshRequest) GetAudience() []string       { return []string{r.resource} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.g.AuthTime }
func (r *refreshRequest) GetClientID() string         { return r.g.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.g.Subject }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

// Lifetimes of what is only in memory.
const (
	authRequestLifetime = 10 * time.Minute
	maxAuthRequests     = 10000
)

// errNotFound answers a lookup of something unknown, expired or revoked.
var errNotFound = errors.New("not found")

// storage is op.Storage over the state file and the authorization
// requests in memory. One mutex guards it all; every change to what is
// persisted is saved before the method returns.
type storage struct {
	dir        string // "" keeps everything in memory (tests)
	resource   string
	accessTTL  time.Duration
	refreshTTL time.Duration
	now        func() time.Time
	loginURL   func(id string) string
	// stillAllowed applies the server's AllowedUsers and AllowedGroups to
	// a grant's user each time one of its tokens is used, and says why
	// not: a user taken off the lists is shut out at once, not when their
	// grant expires. The grant stays: a user let back in goes on with it.
	stillAllowed func(*grant) string
	fetchCIMD    func(ctx context.Context, id string) (*client, error)
	maxClients   int // 0: maxDCRClients
	logger       *slog.Logger

	mu       sync.Mutex
	st       *persisted
	keys     []*signingKey // decoded st.Keys, same order
	requests map[string]*authRequest
	codes    map[string]string // code -> request id
	cimd     map[string]cachedClient
}

type cachedClient struct {
	c       *client
	fetched time.Time
}

// cimdCacheTTL is how long a fetched metadata document is trusted, and
// maxCachedCIMD how many are kept.
const (
	cimdCacheTTL  = 5 * time.Minute
	maxCachedCIMD = 10000
)

var _ op.Storage = (*storage)(nil)

// saveLocked persists the state; the caller holds mu.
func (s *storage) saveLocked() error {
	if s.dir == "" {
		return nil
	}
	s.st.prune(s.now())
	return s.st.save(s.dir)
}

// loadKeysLocked decodes st.Keys, making the first key when there is none.
func (s *storage) loadKeysLocked() error {
	if len(s.st.Keys) == 0 {
		k, err := newStoredKey(s.now())
		if err != nil {
			return err
		}
		s.st.Keys = append(s.st.Keys, k)
		if err := s.saveLocked(); err != nil {
			return err
		}
	}
	s.keys = s.keys[:0]
	for _, k := range s.st.Keys {
		d, err := decodeKey(k)
		if err != nil {
			return err
		}
		s.keys = append(s.keys, d)
	}
	return nil
}

// rotateKey makes a new signing key; the old ones stay published until
// every token they signed has expired.
func (s *storage) rotateKey() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k, err := newStoredKey(now)
	if err != nil {
		return err
	}
	for i := range s.st.Keys {
		if s.st.Keys[i].Retired.IsZero() {
			s.st.Keys[i].Retired = now.Add(s.accessTTL + time.Minute)
		}
	}
	s.st.Keys = append(s.st.Keys, k)
	if err := s.saveLocked(); err != nil {
		return err
	}
	return s.loadKeysLocked()
}

// CreateAuthRequest keeps a validated authorization request.
func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, a := range s.requests {
		if now.Sub(a.Created) > authRequestLifetime {
			delete(s.requests, id)
			if a.code != "" {
				delete(s.codes, a.code)
			}
		}
	}
	if len(s.requests) >= maxAuthRequests {
		return nil, oidc.ErrServerError().WithDescription("too many sign-ins in progress; try again in a few minutes")
	}
	a := &authRequest{
		ID:           rand.Text(),
		ClientID:     req.ClientID,
		RedirectURI:  req.RedirectURI,
		State:        req.State,
		Nonce:        req.Nonce,
		Scopes:       slices.Clone(req.Scopes),
		ResponseType: req.ResponseType,
		ResponseMode: req.ResponseMode,
		Created:      now,
		resource:     s.resource,
	}
	if req.CodeChallenge != "" {
		a.CodeChallenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.requests[a.ID] = a
	return a, nil
}

// request returns the live authorization request id, or nil.
func (s *storage) requestLocked(id string) *authRequest {
	a := s.requests[id]
	if a == nil || s.now().Sub(a.Created) > authRequestLifetime {
		return nil
	}
	return a
}

func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.requestLocked(id); a != nil {
		return a, nil
	}
	return nil, fmt.Errorf("authorization request: %w", errNotFound)
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.requestLocked(s.codes[code]); a != nil && a.done && a.grantID == "" {
		return a, nil
	}
	return nil, fmt.Errorf("authorization code: %w", errNotFound)
}

func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.requestLocked(id)
	if a == nil || !a.done {
		return fmt.Errorf("authorization request: %w", errNotFound)
	}
	if a.code != "" {
		return errors.New("authorization request already has a code")
	}
	a.code = code
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.requests[id]; a != nil {
		delete(s.codes, a.code)
		delete(s.requests, id)
	}
	return nil
}

// newGrantLocked turns a completed authorization request into a grant,
// once: a code is good for one exchange.
func (s *storage) newGrantLocked(a *authRequest) (*grant, error) {
	if a.grantID != "" {
		return nil, oidc.ErrInvalidGrant().WithDescription("authorization code already used")
	}
	now := s.now()
	g := &grant{
		ID:       rand.Text(),
		ClientID: a.ClientID,
		Subject:  a.Subject,
		Groups:   slices.Clone(a.Groups),
		// Known even when empty: a grant made before groups were kept
		// cannot pass a check by group.
		GroupsKnown: true,
		Scopes:      slices.Clone(a.Scopes),
		AuthTime:    a.AuthTime,
		Created:     now,
		Expires:     now.Add(s.refreshTTL),
	}
	a.grantID = g.ID
	delete(s.codes, a.code)
	delete(s.requests, a.ID)
	s.st.Grants[g.ID] = g
	return g, nil
}

// accessTokenID makes a token id (jti) that names its grant: "grant.random".
func accessTokenID(grantID string) string { return grantID + "." + rand.Text() }

// grantOfTokenID is the grant id inside an access token id.
func grantOfTokenID(jti string) string {
	g, _, _ := strings.Cut(jti, ".")
	return g
}

// CreateAccessToken is the code exchange without a refresh token.
func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gid string
	switch r := req.(type) {
	case *authRequest:
		g, err := s.newGrantLocked(r)
		if err != nil {
			return "", time.Time{}, err
		}
		if err := s.saveLocked(); err != nil {
			return "", time.Time{}, err
		}
		gid = g.ID
	case *refreshRequest:
		gid = r.g.ID
	default:
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	return accessTokenID(gid), s.now().Add(s.accessTTL), nil
}

// CreateAccessAndRefreshTokens is the code exchange with offline_access,
// and every refresh: the presented refresh token is used up (rotation) and
// a new one of the same family is returned. A refresh token that was
// already used revokes its whole family.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var g *grant
	switch r := req.(type) {
	case *authRequest:
		var err error
		if g, err = s.newGrantLocked(r); err != nil {
			return "", "", time.Time{}, err
		}
	case *refreshRequest:
		rt := s.st.Refresh[tokenDigest(current)]
		g = s.st.Grants[r.g.ID]
		if rt == nil || g == nil || g.Revoked || rt.Grant != g.ID {
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token revoked")
		}
		if rt.Used {
			// Two refreshes raced with one token, a client retried one
			// whose answer it lost, or it was replayed: which, the server
			// cannot tell, and there is no grace window (docs/teams.md).
			s.revokeGrantLocked(g, "refresh token reused")
			if err := s.saveLocked(); err != nil {
				return "", "", time.Time{}, err
			}
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token already used: every token of this sign-in is revoked")
		}
		rt.Used = true
	default:
		return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	token := rand.Text() + rand.Text()
	s.st.Refresh[tokenDigest(token)] = &refreshToken{Grant: g.ID, Expires: g.Expires}
	if err := s.saveLocked(); err != nil {
		return "", "", time.Time{}, err
	}
	return accessTokenID(g.ID), token, now.Add(s.accessTTL), nil
}

// TokenRequestByRefreshToken looks a refresh token up. One that was used
// before revokes its family here already.
func (s *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.st.Refresh[tokenDigest(token)]
	if rt == nil || s.now().After(rt.Expires) {
		return nil, fmt.Errorf("refresh token: %w", errNotFound)
	}
	g := s.st.Grants[rt.Grant]
	if g == nil || g.Revoked {
		return nil, fmt.Errorf("refresh token: %w", errNotFound)
	}
	if why := s.disallowed(g); why != "" {
		return nil, fmt.Errorf("refresh token: %s", why) // invalid_grant
	}
	if rt.Used {
		s.revokeGrantLocked(g, "refresh token reused")
		if err := s.saveLocked(); err != nil {
			return nil, err
		}
		return nil, errors.New("refresh token already used: every token of this sign-in is revoked")
	}
	return &refreshRequest{g: *g, scopes: slices.Clone(g.Scopes), resource: s.resource, token: token}, nil
}

func (s *storage) revokeGrantLocked(g *grant, why string) {
	if !g.Revoked && s.logger != nil {
		s.logger.Warn("oauth: grant revoked", "user", g.Subject, "client_id", g.ClientID, "why", why)
	}
	g.Revoked = true
	g.RevokedBy = why
}

// TerminateSession revokes every grant of userID to clientID.
func (s *storage) TerminateSession(ctx context.Context, userID, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.st.Grants {
		if g.Subject == userID && g.ClientID == clientID {
			s.revokeGrantLocked(g, "signed out")
		}
	}
	return s.saveLocked()
}

// refreshRevocationPrefix marks, for RevokeToken, a refresh token that
// GetRefreshTokenInfo recognized: what follows is its grant id.
const refreshRevocationPrefix = "grant:"

// GetRefreshTokenInfo recognizes a refresh token of clientID for
// revocation.
func (s *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.st.Refresh[tokenDigest(token)]
	if rt == nil {
		return "", "", op.ErrInvalidRefreshToken
	}
	g := s.st.Grants[rt.Grant]
	if g == nil || g.ClientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return g.Subject, refreshRevocationPrefix + g.ID, nil
}

// RevokeToken revokes a refresh token's whole grant (RFC 7009 section 2.1:
// its access tokens too), or one access token by its id. A token the
// client does not own, or an unknown one, is answered as revoked: RFC 7009
// says an invalid token is not an error.
func (s *storage) RevokeToken(ctx context.Context, tokenOrID, userID, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gid, ok := strings.CutPrefix(tokenOrID, refreshRevocationPrefix); ok {
		if g := s.st.Grants[gid]; g != nil && g.ClientID == clientID {
			s.revokeGrantLocked(g, "revoked by the client")
		}
	} else if g := s.st.Grants[grantOfTokenID(tokenOrID)]; g != nil && g.ClientID == clientID && g.Subject == userID {
		s.st.RevokedAccess[tokenOrID] = s.now().Add(s.accessTTL + time.Minute)
	} else {
		return nil
	}
	if err := s.saveLocked(); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// accessTokenLive reports whether an access token id is neither revoked
// itself nor of a revoked or unknown grant; on false, why.
// disallowed is stillAllowed, when set.
func (s *storage) disallowed(g *grant) string {
	if s.stillAllowed == nil {
		return ""
	}
	return s.stillAllowed(g)
}

func (s *storage) accessTokenLive(jti string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, revoked := s.st.RevokedAccess[jti]; revoked {
		return false, "token revoked"
	}
	g := s.st.Grants[grantOfTokenID(jti)]
	switch {
	case g == nil:
		return false, "token of an unknown grant"
	case g.Revoked:
		return false, "token revoked (" + g.RevokedBy + ")"
	}
	if why := s.disallowed(g); why != "" {
		return false, why
	}
	return true, ""
}

func (s *storage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1], nil
}

func (s *storage) SignatureAlgorithms(ctx context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{signingAlgorithm}, nil
}

// KeySet is every key still published: the signing one and the retired
// ones whose tokens may not have expired yet.
func (s *storage) KeySet(ctx context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

// GetClientByClientID finds a client registered here, or fetches the
// Client ID Metadata Document its id names (cached a few minutes).
func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	if c := s.st.Clients[id]; c != nil {
		cp := *c
		cp.loginURL = s.loginURL
		s.mu.Unlock()
		return &cp, nil
	}
	if cc, ok := s.cimd[id]; ok && s.now().Sub(cc.fetched) < cimdCacheTTL {
		s.mu.Unlock()
		return cc.c, nil
	}
	s.mu.Unlock()
	if !isMetadataDocumentID(id) || s.fetchCIMD == nil {
		return nil, fmt.Errorf("client %q: %w", id, errNotFound)
	}
	c, err := s.fetchCIMD(ctx, id)
	if err != nil {
		return nil, err
	}
	c.loginURL = s.loginURL
	c.Created = s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, cc := range s.cimd {
		if s.now().Sub(cc.fetched) >= cimdCacheTTL {
			delete(s.cimd, k)
		}
	}
	// Anyone can name a document: past the bound, one is fetched each time
	// rather than kept.
	if len(s.cimd) < maxCachedCIMD {
		s.cimd[id] = cachedClient{c: c, fetched: s.now()}
	}
	return c, nil
}

// errClientsFull refuses a registration when no client can make room.
var errClientsFull = errors.New("no room for another client")

// registerClient keeps a client registered by DCR and gives it an id.
// Registration is open to anyone, so when the store is full the oldest
// client that never got a grant makes room; only when every client has
// one is the registration refused.
func (s *storage) registerClient(c *client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := s.maxClients
	if limit <= 0 {
		limit = maxDCRClients
	}
	if len(s.st.Clients) >= limit {
		used := map[string]bool{}
		for _, g := range s.st.Grants {
			used[g.ClientID] = true
		}
		var oldest *client
		for _, x := range s.st.Clients {
			if !used[x.ID] && (oldest == nil || x.Created.Before(oldest.Created)) {
				oldest = x
			}
		}
		if oldest == nil {
			return fmt.Errorf("%w: this server keeps at most %d registered clients, and every one of them holds a sign-in; one is forgotten when its sign-in expires or is revoked", errClientsFull, limit)
		}
		delete(s.st.Clients, oldest.ID)
	}
	c.ID = "km-" + rand.Text()
	c.Registered = registeredDCR
	c.Created = s.now()
	s.st.Clients[c.ID] = c
	return s.saveLocked()
}

// AuthorizeClientIDSecret refuses: every client is public.
func (s *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	return errors.New("clients have no secret here: use PKCE")
}

func (s *storage) SetUserinfoFromScopes(ctx context.Context, ui *oidc.UserInfo, userID, clientID string, scopes []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, ui *oidc.UserInfo, tokenID, subject, origin string) error {
	ui.Subject = subject
	return nil
}

func (s *storage) SetIntrospectionFromToken(ctx context.Context, ir *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	return errors.New("introspection is not offered")
}

func (s *storage) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(ctx context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	return nil, errors.New("private_key_jwt is not offered")
}

func (s *storage) ValidateJWTProfileScopes(ctx context.Context, userID string, scopes []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not offered")
}

func (s *storage) Health(ctx context.Context) error { return nil }

var _ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)

// GetPrivateClaimsFromRequest puts the granted scopes in the access token
// (op's JWT access tokens carry none otherwise): the resource checks them.
func (s *storage) GetPrivateClaimsFromRequest(ctx context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(scopes, " ")}, nil
}
