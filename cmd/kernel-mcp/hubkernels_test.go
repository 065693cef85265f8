package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/kernel-mcp/kernel-mcp/oauth"
	"golang.org/x/oauth2"
)

func TestParseHubKernels(t *testing.T) {
	hub := []string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub"}
	cfg, err := parseConfig(append(hub, "--hub-kernels", "--hub-server-name", "mcp"), env(base))
	if err != nil || !cfg.HubKernels || cfg.HubServerName != "mcp" {
		t.Fatalf("--hub-kernels: %v %q %v", cfg.HubKernels, cfg.HubServerName, err)
	}
	cfg, err = parseConfig(hub, env(with(map[string]string{"KERNEL_MCP_HUB_KERNELS": "true"})))
	if err != nil || !cfg.HubKernels || cfg.HubServerName != "" {
		t.Fatalf("KERNEL_MCP_HUB_KERNELS: %v %v", cfg.HubKernels, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--transport", "streamable-http", "--hub-kernels"}, "needs --auth oauth"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--oidc-issuer", "https://l", "--oidc-client-id", "c", "--hub-kernels"}, "through JupyterHub"},
		{append(hub, "--hub-server-name", "x"), "needs --hub-kernels"},
		{append(hub, "--hub-kernels", "--hub-server-name", "a/b"), "JupyterHub server name"},
		{append(hub, "--hub-kernels", "--gateway-url", "http://127.0.0.1:8888"), "cannot be used with --gateway-url"},
		{append(hub, "--hub-kernels", "--python", "/usr/bin/python3"), "kernelspecs decide"},
		{append(hub, "--hub-kernels", "--workdir", "/tmp"), "user's server's root"},
		{append(hub, "--hub-kernels=maybe"), "want true or false"},
	} {
		if _, err := parseConfig(tc.args, env(base)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestHubKernelsTokens: the token of a sign-in is kept in the user's state
// folder, readable by kernel-mcp's user only, read back by a restarted
// server, and an expired or missing one is an error saying to sign in.
func TestHubKernelsTokens(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config{HubKernels: true, HubServerName: "mcp"}
	hc := oauth.HubConfig{URL: "https://hub.example.org", APIURL: "http://127.0.0.1:8081/hub/api"}
	h := newHubKernels(cfg, hc, dir, logger)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	if _, err := h.token("alice"); err == nil || !strings.Contains(err.Error(), "sign in again") {
		t.Errorf("no token yet: %v", err)
	}
	// The OAuth server refuses alice's tokens with that reason, so her
	// client signs in again.
	if why := h.signInNeeded("alice"); !strings.Contains(why, "holds no JupyterHub token for alice") {
		t.Errorf("signInNeeded with no token: %q", why)
	}
	// A missing file is looked for once; the sign-in that brings a token
	// ends that.
	if _, err := h.token("alice"); err == nil || !h.none["alice"] {
		t.Errorf("no token, asked again: %v (remembered as missing: %v)", err, h.none["alice"])
	}
	h.signedIn(oauth.Identity{Name: "alice", Token: &oauth2.Token{AccessToken: "alice-tok", Expiry: now.Add(time.Hour)}})
	if tok, err := h.token("alice"); err != nil || tok != "alice-tok" || h.none["alice"] {
		t.Errorf("after the sign-in: %q %v", tok, err)
	}
	h.signedIn(oauth.Identity{Name: "carol"}) // an OpenID sign-in has none
	st, err := os.Stat(filepath.Join(dir, "users", "alice", "hub-token.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("alice's token file: %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "users", "carol")); err == nil {
		t.Error("a folder for carol, who brought no token")
	}
	restarted := newHubKernels(cfg, hc, dir, logger)
	restarted.now = h.now
	if tok, err := restarted.token("alice"); err != nil || tok != "alice-tok" {
		t.Errorf("after a restart: %q %v", tok, err)
	}
	if why := restarted.signInNeeded("alice"); why != "" {
		t.Errorf("signInNeeded with a live token: %q", why)
	}
	now = now.Add(2 * time.Hour)
	if _, err := restarted.token("alice"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	if why := restarted.signInNeeded("alice"); !strings.Contains(why, "expired") {
		t.Errorf("signInNeeded with an expired token: %q", why)
	}
	// A token file that cannot be read is no reason to sign in again.
	unreadable := filepath.Join(dir, "users", "dave", "hub-token.json")
	if err := os.MkdirAll(unreadable, 0o700); err != nil {
		t.Fatal(err)
	}
	if why := restarted.signInNeeded("dave"); why != "" {
		t.Errorf("signInNeeded with an unreadable token file: %q", why)
	}
	var nilHub *hubKernels
	if why := nilHub.signInNeeded("alice"); why != "" {
		t.Errorf("without --hub-kernels: %q", why)
	}
	var c mcpserver.Config
	h.apply(&c, "alice")
	if c.UserServer == nil || c.GatewayURL != "https://hub.example.org/user/alice/mcp/" || c.PoolSize != 0 {
		t.Errorf("alice's server config: %+v", c)
	}
	if newHubKernels(config{}, hc, dir, logger) != nil {
		t.Error("hub kernels without --hub-kernels")
	}
}
