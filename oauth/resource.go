package oauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// RequireToken lets through only requests that carry a valid access token
// for this resource with Scope. Others get 401 (no token, or one that is
// invalid, expired, revoked or for another resource) or 403 (a token
// without the scope), with WWW-Authenticate naming the resource metadata.
// The Authorization header is removed before next runs: a token is never
// passed on. next finds the user with UserFromContext.
func (s *Server) RequireToken(next http.Handler) http.Handler {
	strip := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ew, ok := w.(*bearerErrorWriter); ok {
			w = ew.ResponseWriter // next writes to the connection itself
		}
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
	check := auth.RequireBearerToken(s.VerifyToken, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.ResourceMetadataURL(),
		Scopes:              []string{Scope},
	})(strip)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check.ServeHTTP(&bearerErrorWriter{ResponseWriter: w, hadToken: r.Header.Get("Authorization") != ""}, r)
	})
}

// bearerErrorWriter adds RFC 6750's error code to the challenge go-sdk's
// check sends: invalid_token on a 401 for a token that was sent (none
// when no token was: RFC 6750 section 3.1), insufficient_scope on a 403,
// so that a client can tell signing in again from asking for more.
type bearerErrorWriter struct {
	http.ResponseWriter
	hadToken bool
}

func (w *bearerErrorWriter) WriteHeader(code int) {
	h := w.Header()
	if c := h.Get("WWW-Authenticate"); strings.HasPrefix(c, "Bearer ") && !strings.Contains(c, "error=") {
		switch {
		case code == http.StatusUnauthorized && w.hadToken:
			h.Set("WWW-Authenticate", c+`, error="invalid_token"`)
		case code == http.StatusForbidden:
			h.Set("WWW-Authenticate", c+`, error="insufficient_scope"`)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// UserFromContext is the user whose token let the request in, or "" when
// the request did not pass RequireToken.
func UserFromContext(ctx context.Context) string {
	if ti := auth.TokenInfoFromContext(ctx); ti != nil {
		return ti.UserID
	}
	return ""
}

// VerifyToken checks an access token: signed by one of this server's
// keys, issued by it, for this resource, not expired, not revoked. A
// token seen before is found in a cache until it expires; revocation is
// checked on every call. Errors wrap auth.ErrInvalidToken.
func (s *Server) VerifyToken(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(token))
	ck := string(key[:])
	s.cacheMu.Lock()
	c, ok := s.cache[ck]
	s.cacheMu.Unlock()
	now := s.cfg.Now()
	if ok && now.After(c.info.Expiration) {
		s.cacheMu.Lock()
		delete(s.cache, ck)
		s.cacheMu.Unlock()
		ok = false
	}
	if !ok {
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, s.verifier)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if !slices.ContainsFunc(claims.Audience, func(a string) bool {
			return strings.TrimSuffix(a, "/") == strings.TrimSuffix(s.cfg.Resource, "/")
		}) {
			return nil, fmt.Errorf("%w: the token is for another resource (audience %v), not %s", auth.ErrInvalidToken, []string(claims.Audience), s.cfg.Resource)
		}
		if claims.JWTID == "" || claims.Subject == "" {
			return nil, fmt.Errorf("%w: the token has no id or subject", auth.ErrInvalidToken)
		}
		c = cachedToken{jti: claims.JWTID, info: &auth.TokenInfo{
			Scopes:     strings.Fields(claims.Scopes.String()),
			Expiration: claims.GetExpiration(),
			UserID:     claims.Subject,
			Extra:      map[string]any{"client_id": claims.ClientID},
		}}
		s.cacheMu.Lock()
		if len(s.cache) >= maxCachedTokens {
			for k, v := range s.cache {
				if now.After(v.info.Expiration) || len(s.cache) >= maxCachedTokens {
					delete(s.cache, k)
				}
			}
		}
		s.cache[ck] = c
		s.cacheMu.Unlock()
	}
	if live, why := s.store.accessTokenLive(c.jti); !live {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, why)
	}
	return c.info, nil
}
