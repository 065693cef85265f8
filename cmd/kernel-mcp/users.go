package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
)

// servers are the MCP servers one process runs: one, or one per user of a
// tokens file. Users are kept apart by construction: each has an
// mcpserver.Server of their own (sessions, histories, state folder
// <state dir>/users/<name>, warm pool) and an HTTP endpoint of their own,
// chosen by the bearer token, so neither a session id nor an MCP session
// of one user means anything in another's.
type servers struct {
	list  []*mcpserver.Server
	users []user // empty: one server, no users
	// With --auth oauth, list is empty: each signed-in user's server is
	// made on their first call (oauth.go), from base.
	oauth *oauthSide
	base  mcpserver.Config
}

// newServers builds the servers. With users, MaxSessions bounds all users'
// kernels together and cfg.MaxSessionsPerUser each user's.
// uiURLs, when set, are the web view's URLs, one per server.
func newServers(users []user, cfg config, base mcpserver.Config, uiURLs []string) (*servers, error) {
	if cfg.OAuth != nil {
		return &servers{base: base}, nil
	}
	if len(users) == 0 {
		if len(uiURLs) > 0 {
			base.UIURL = uiURLs[0]
		}
		srv, err := mcpserver.New(base)
		if err != nil {
			return nil, err
		}
		return &servers{list: []*mcpserver.Server{srv}}, nil
	}
	s := &servers{users: users}
	total := engine.NewKernelLimit(base.MaxSessions)
	for i, u := range users {
		c := base
		if len(uiURLs) > i {
			c.UIURL = uiURLs[i]
		}
		c.SharedLimit = total
		c.MultiUser = true
		c.MaxSessions = cfg.MaxSessionsPerUser
		if base.StateDir != "" {
			c.StateDir = filepath.Join(base.StateDir, "users", u.Name)
		}
		c.Logger = base.Logger.With("user", u.Name)
		srv, err := mcpserver.New(c)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.list = append(s.list, srv)
	}
	return s, nil
}

// Close shuts every server's kernels down.
func (s *servers) Close() error {
	errs := make([]error, len(s.list), len(s.list)+1)
	for i, srv := range s.list {
		errs[i] = srv.Close()
	}
	if s.oauth != nil {
		errs = append(errs, s.oauth.users.Close())
	}
	return errors.Join(errs...)
}

// httpHandler is the HTTP handler for all the servers: with users, each
// request goes to the endpoint of the user whose token it carries.
func (s *servers) httpHandler(cfg config, logger *slog.Logger) http.Handler {
	if s.oauth != nil {
		return s.oauth.handler()
	}
	if len(s.users) == 0 {
		return newHTTPHandler(cfg, s.list[0], logger)
	}
	routes := make([]userRoute, len(s.users))
	for i, u := range s.users {
		routes[i] = userRoute{name: u.Name, digest: sha256.Sum256([]byte(u.Token)), h: mcpHTTPHandler(cfg, s.list[i], logger.With("user", u.Name))}
	}
	return routeByToken(routes, logger)
}

// userRoute is one user's endpoint and the digest of their token.
type userRoute struct {
	name   string
	digest [sha256.Size]byte
	h      http.Handler
}

// routeByToken sends each request to the endpoint of the user whose token
// it carries; a request without a known token gets 401 as with --token.
// Every user's digest is compared, in constant time, whichever matches.
func routeByToken(routes []userRoute, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, cred, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
		match := -1
		for i := range routes {
			if subtle.ConstantTimeCompare(got[:], routes[i].digest[:]) == 1 {
				match = i
			}
		}
		if !ok || match < 0 {
			logger.Warn("rejected unauthenticated HTTP request", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
			unauthorized(w, r)
			return
		}
		authorized(r)
		routes[match].h.ServeHTTP(w, r)
	})
}
