//go:build unix

package integration

import (
	"encoding/json"
	"net"
	"net/url"
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
