package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseOAuth(t *testing.T) {
	http := []string{"--transport", "streamable-http"}
	cfg, err := parseConfig(append(http, "--auth", "oauth", "--oidc-issuer", "https://login.example", "--oidc-client-id", "km", "--allowed-groups", "a, b"), env(with(map[string]string{"KERNEL_MCP_OIDC_CLIENT_SECRET": "s3"})))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.OAuth; o == nil || o.hub || o.OIDCClientSecret != "s3" || !slices.Equal(o.AllowedGroups, []string{"a", "b"}) {
		t.Errorf("oauth config: %+v", cfg.OAuth)
	}
	// A hub service is found by the variable the hub gives it.
	cfg, err = parseConfig(append(http, "--auth", "oauth"), env(with(map[string]string{"JUPYTERHUB_API_TOKEN": "t"})))
	if err != nil || cfg.OAuth == nil || !cfg.OAuth.hub {
		t.Errorf("hub service: %+v %v", cfg.OAuth, err)
	}
	// --ui: the web view moves to the public URL and signs in there.
	cfg, err = parseConfig(append(http, "--auth", "oauth", "--hub-url", "https://hub", "--ui", "127.0.0.1:0", "--ui-readonly"), env(base))
	if err != nil || !cfg.OAuth.WebView || !cfg.OAuth.WebViewReadOnly || cfg.UI != "" {
		t.Errorf("--ui with --auth oauth: %+v, UI %q, %v", cfg.OAuth, cfg.UI, err)
	}
	// Without --auth oauth, nothing changes.
	if cfg, err := parseConfig(nil, env(base)); err != nil || cfg.OAuth != nil {
		t.Errorf("default: %+v %v", cfg.OAuth, err)
	}
}

func TestParseOAuthInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--auth", "oauth", "--oidc-issuer", "https://l", "--oidc-client-id", "c"}, nil, "HTTP transports"},
		{[]string{"--transport", "streamable-http", "--auth", "magic"}, nil, "want token or oauth"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth"}, nil, "nobody could sign in"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--oidc-issuer", "https://l"}, nil, "needs --oidc-client-id"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--oidc-issuer", "https://l", "--oidc-client-id", "c"}, nil, "not both"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub"}, map[string]string{"KERNEL_MCP_TOKEN": "x"}, "cannot be used with --token"},
		{[]string{"--transport", "streamable-http", "--host", "0.0.0.0", "--auth", "oauth", "--hub-url", "https://hub"}, nil, "needs --public-url"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "http://kernels.example"}, nil, "use https"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "https://kernels.example/x?y=1"}, nil, "without a query"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--public-url", "https://hub.example/services/km", "--ui", ":0"}, nil, "below a path"},
		{[]string{"--transport", "streamable-http", "--auth", "oauth", "--hub-url", "https://hub", "--allowed-users", "a/b"}, nil, "not a user name"},
		{[]string{"--transport", "streamable-http", "--hub-url", "https://hub"}, nil, "without --auth oauth"},
	} {
		_, err := parseConfig(tc.args, env(with(tc.env)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
