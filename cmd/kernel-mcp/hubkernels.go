// --hub-kernels: with the sign-in through JupyterHub, each person's kernels
// run in their own single-user server, which the hub starts on demand
// (package hub), reached through the hub's proxy as a gateway. The token
// is the one the hub issues to kernel-mcp's OAuth client when the person
// signs in, kept per user; its scopes reach that person's servers only.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/hub"
	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/oauth"
)

// hubServerName is what JupyterHub takes as a named server's name, without
// the characters a URL path would escape.
var hubServerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)

// parseHubKernels reads --hub-kernels and --hub-server-name, after
// --auth and --gateway-url.
func parseHubKernels(cfg *config, get func(string) string) error {
	on, err := parseSwitch("hub-kernels", get("hub-kernels"))
	if err != nil {
		return err
	}
	name := get("hub-server-name")
	switch {
	case !on && name != "":
		return invalid("hub-server-name", name, "needs --hub-kernels / KERNEL_MCP_HUB_KERNELS=true")
	case !on:
		return nil
	case cfg.OAuth == nil || !cfg.OAuth.hub:
		return invalid("hub-kernels", "true", "needs --auth oauth with the sign-in through JupyterHub (--hub-url): the hub user who signs in is whose server runs the kernels")
	case cfg.GatewayURL != "":
		return invalid("hub-kernels", "true", "cannot be used with --gateway-url: each person's kernels run in their own JupyterHub server")
	case cfg.Sandbox:
		return invalid("hub-kernels", "true", "cannot be used with --sandbox: the sandbox confines local kernels, and these run in the people's JupyterHub servers")
	case cfg.Python != "":
		return invalid("python", cfg.Python, "cannot be used with --hub-kernels: the user's server's kernelspecs decide the interpreter (pick one with --kernel)")
	case cfg.MemoryLimit > 0:
		return invalid("memory-limit", get("memory-limit"), "cannot be used with --hub-kernels: the hub's spawner sets the servers' limits")
	case cfg.WorkDir != "":
		return invalid("workdir", cfg.WorkDir, "cannot be used with --hub-kernels: kernels work in the user's server's root")
	case name != "" && !hubServerName.MatchString(name):
		return invalid("hub-server-name", name, "want a JupyterHub server name: letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	cfg.HubKernels, cfg.HubServerName = true, name
	return nil
}

// hubKernels gives each signed-in user's engine their JupyterHub server,
// and keeps the hub's tokens: in <state dir>/users/<name>/hub-token.json
// (0600), or in memory without a state folder.
type hubKernels struct {
	api, public, serverName string
	stateDir                string
	hc                      *http.Client
	logger                  *slog.Logger
	now                     func() time.Time

	mu     sync.Mutex
	tokens map[string]hub.Token
	none   map[string]bool // users whose token file was looked for and missing
}

func newHubKernels(cfg config, hc oauth.HubConfig, stateDir string, logger *slog.Logger) *hubKernels {
	if !cfg.HubKernels {
		return nil
	}
	api := hc.APIURL
	if api == "" {
		api = hc.URL + "/hub/api"
	}
	return &hubKernels{
		api: api, public: hc.URL, serverName: cfg.HubServerName, stateDir: stateDir,
		// A transport of its own, whose idle connections close with
		// the server (close).
		hc:     &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		logger: logger, now: time.Now, tokens: map[string]hub.Token{}, none: map[string]bool{},
	}
}

// close drops the idle connections to the hub, once the users' servers
// are closed.
func (h *hubKernels) close() {
	if h != nil {
		h.hc.CloseIdleConnections()
	}
}

func (h *hubKernels) tokenPath(user string) string {
	return filepath.Join(h.stateDir, "users", user, "hub-token.json")
}

// signedIn keeps the token the hub issued at a user's sign-in.
func (h *hubKernels) signedIn(id oauth.Identity) {
	if h == nil || id.Token == nil || id.Token.AccessToken == "" || !oauth.ValidUserName(id.Name) {
		return
	}
	t := hub.Token{AccessToken: id.Token.AccessToken, Expiry: id.Token.Expiry, SavedAt: h.now()}
	h.mu.Lock()
	h.tokens[id.Name] = t
	delete(h.none, id.Name)
	h.mu.Unlock()
	// Written outside the lock: token is asked at every use of every
	// person's OAuth token (signInNeeded), and must not wait for a disk.
	if h.stateDir != "" {
		if err := hub.SaveToken(h.tokenPath(id.Name), t); err != nil {
			h.logger.Error("cannot keep the user's JupyterHub token; it is kept in memory until kernel-mcp stops", "user", id.Name, "error", err)
		}
	}
}

// token is the user's hub token now, or an error saying what to do.
func (h *hubKernels) token(user string) (string, error) {
	h.mu.Lock()
	t, ok := h.tokens[user]
	none := h.none[user]
	h.mu.Unlock()
	if !ok && h.stateDir != "" {
		var err error
		if none {
			err = hub.ErrNoToken // looked for already: only a sign-in brings one
		} else {
			t, err = hub.LoadToken(h.tokenPath(user))
		}
		if errors.Is(err, hub.ErrNoToken) {
			h.mu.Lock()
			if _, signedIn := h.tokens[user]; !signedIn {
				h.none[user] = true
			}
			h.mu.Unlock()
			return "", signInAgain(fmt.Sprintf("kernel-mcp holds no JupyterHub token for %s (the sign-in was made before --hub-kernels was on, or without a state folder): sign in again from your MCP client", user))
		}
		if err != nil {
			return "", fmt.Errorf("reading %s's JupyterHub token: %v", user, err)
		}
		h.mu.Lock()
		if newer, have := h.tokens[user]; have {
			t = newer // a sign-in while the file was read
		} else {
			h.tokens[user] = t
		}
		h.mu.Unlock()
	} else if !ok {
		return "", signInAgain(fmt.Sprintf("kernel-mcp holds no JupyterHub token for %s (it keeps them in memory only, without a state folder, and restarted since): sign in again from your MCP client", user))
	}
	if t.Expired(h.now()) {
		return "", signInAgain(fmt.Sprintf("the JupyterHub token kernel-mcp holds for %s expired at %s (the hub's oauth_token_expires_in): sign in again from your MCP client", user, t.Expiry.UTC().Format(time.RFC3339)))
	}
	return t.AccessToken, nil
}

// signInAgain is token's error when only a new sign-in gives kernel-mcp a
// hub token for the user.
type signInAgain string

func (e signInAgain) Error() string { return string(e) }

// signInNeeded is oauth.Config.SignInNeeded: a user for whom kernel-mcp
// holds no usable hub token must sign in again, and their MCP client is
// told so at once (401, then invalid_grant for its refresh token), which
// makes it sign in through the hub again. A token file that cannot be read
// is no reason: the call that needs it says why.
func (h *hubKernels) signInNeeded(user string) string {
	if h == nil {
		return ""
	}
	var again signInAgain
	if _, err := h.token(user); errors.As(err, &again) {
		return string(again)
	}
	return ""
}

// apply points a user's server configuration at their hub server.
func (h *hubKernels) apply(c *mcpserver.Config, user string) {
	if h == nil {
		return
	}
	us := &userHubServer{s: &hub.Server{
		API: h.api, Public: h.public, User: user, Name: h.serverName, HTTPClient: h.hc,
		Token: func() (string, error) { return h.token(user) },
	}}
	c.UserServer = us
	c.GatewayURL = us.URL()
	c.PoolSize = 0
}

// userHubServer is a hub.Server as the engine takes it.
type userHubServer struct{ s *hub.Server }

func (u *userHubServer) URL() string            { return u.s.URL() }
func (u *userHubServer) Token() (string, error) { return u.s.Token() }

func (u *userHubServer) Start(ctx context.Context, progress func(string)) error {
	return u.s.Start(ctx, func(p hub.Progress) {
		if p.Message == "" {
			return
		}
		msg := p.Message
		if p.Percent > 0 {
			msg = fmt.Sprintf("%d%% %s", p.Percent, p.Message)
		}
		progress(msg)
	})
}

func (u *userHubServer) Gone(ctx context.Context) (string, error) { return u.s.Gone(ctx) }
