//go:build unix

package integration

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everything is all a client sees of a result: its text and its
// structured content.
func everything(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res.StructuredContent)
	return text(res) + "\n" + string(b)
}

// A gateway URL with a password in it (http://user:pass@host) never shows
// the password: not in the errors of an unreachable gateway or of one that
// refuses the token, not in what a working one reports (create_session,
// run_code, list_kernels, session_status, list_sessions), not in the log.
// The URL itself is still named, with the password as "xxxxx".
func TestGatewayPasswordHidden(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	const password = "secretpass"
	withPassword := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("user", password)
		return u.String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, url, token string
		works            bool
	}{
		{"unreachable", closed, "", false},
		{"wrong token", gw.URL, "wrong", false},
		{"working", gw.URL, gw.Token, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, "--gateway-url", withPassword(tc.url), "--gateway-token", tc.token, "--pool-size", "0")
			shown := strings.Replace(tc.url, "http://", "http://user:xxxxx@", 1)
			calls := []struct {
				tool string
				args map[string]any
			}{
				{"create_session", map[string]any{"session_id": "a"}},
				{"run_code", map[string]any{"session_id": "a", "code": "1+1"}},
				{"run_code", map[string]any{"code": "1+1"}},
				{"list_kernels", nil},
				{"session_status", map[string]any{"session_id": "a"}},
				{"list_sessions", nil},
			}
			for _, c := range calls {
				res := s.call(c.tool, c.args)
				got := everything(res)
				if strings.Contains(got, password) {
					t.Errorf("%s %v shows the password: %s", c.tool, c.args, got)
				}
				if c.tool == "list_kernels" || (c.tool == "create_session" && tc.works) {
					if !strings.Contains(got, shown) {
						t.Errorf("%s does not name the gateway as %s: %s", c.tool, shown, got)
					}
				}
				if c.tool != "list_sessions" && c.tool != "session_status" && res.IsError == tc.works {
					t.Errorf("%s %v: isError=%v: %s", c.tool, c.args, res.IsError, got)
				}
			}
			s.close()
			if log := s.stderr.String(); strings.Contains(log, password) {
				t.Errorf("the log shows the password:\n%s", log)
			}
		})
	}
}

// With several users on one gateway, kernel_id could name another user's
// kernel: attaching would hand over its namespace. It is refused, whatever
// the id, and the other user's session goes on.
func TestUsersNoKernelIDAttach(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef00"
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHTTPServer(t, "--tokens-file", tokens, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0")
	alice, bob := connectUser(t, url, aliceToken), connectUser(t, url, bobToken)
	if res := bob.call("run_code", map[string]any{"session_id": "mine", "code": "secret = 'bob-secret-42'"}); res.IsError {
		t.Fatalf("bob's run: %s", text(res))
	}
	status := text(bob.call("session_status", map[string]any{"session_id": "mine"}))
	m := regexp.MustCompile(`kernel ([0-9a-f-]{36})`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("no gateway kernel id in bob's session_status:\n%s", status)
	}
	res := alice.call("create_session", map[string]any{"session_id": "theirs", "kernel_id": m[1]})
	if !res.IsError || !strings.Contains(text(res), "several users") || strings.Contains(text(res), "bob-secret-42") {
		t.Fatalf("create_session {kernel_id: bob's kernel} as alice: %s", text(res))
	}
	if res := alice.call("run_code", map[string]any{"session_id": "theirs", "code": "secret"}); !strings.Contains(text(res), "NameError") {
		t.Errorf("alice's session reaches bob's namespace: %s", text(res))
	}
	if res := bob.call("run_code", map[string]any{"session_id": "mine", "code": "secret"}); !strings.Contains(text(res), "bob-secret-42") {
		t.Errorf("bob's session after alice's attempt: %s", text(res))
	}
}
