//go:build unix

package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// userClient is one user's go-sdk client over streamable HTTP, recording
// the resource-updated notifications it receives.
type userClient struct {
	t  *testing.T
	cs *mcp.ClientSession

	mu      sync.Mutex
	updated []string
	gotOwn  chan struct{} // one value per update of the user's own "mine" history
}

func connectUser(t *testing.T, url, token string) *userClient {
	t.Helper()
	u := &userClient{t: t, gotOwn: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "users-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.mu.Lock()
			u.updated = append(u.updated, r.Params.URI)
			u.mu.Unlock()
			if r.Params.URI == "session://mine/history" {
				u.gotOwn <- struct{}{}
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	u.cs = cs
	return u
}

func (u *userClient) call(tool string, args map[string]any) *mcp.CallToolResult {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := u.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		u.t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return res
}

// answer renders everything a client sees of a call's outcome, for
// comparing the answer about another user's session with the answer about
// a session that does not exist.
func answer(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "protocol error: " + err.Error()
	}
	return fmt.Sprintf("isError=%v text=%s structured=%v", res.IsError, text(res), res.StructuredContent)
}

// Two users of one server, each with their own token: every tool and
// resource bob aims at alice's sessions answers exactly as for a session
// that does not exist, nothing of alice's shows in the answers, and her
// history is unchanged. Each user's state is in a folder of their own.
func TestUsersAreIsolated(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# users\nalice "+aliceToken+"\n\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	url := startHTTPServer(t, "--tokens-file", tokens, "--state-dir", state, "--pool-size", "0")

	// Without a known token: 401.
	for _, auth := range []string{"", "Bearer not-a-user-token-000000", "Bearer " + aliceToken + "x"} {
		if resp := pingWith(t, url, auth); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("Authorization %q: status %d", auth, resp.StatusCode)
		}
	}

	alice := connectUser(t, url, aliceToken)
	bob := connectUser(t, url, bobToken)
	for _, sid := range []string{"secret", "default"} {
		if res := alice.call("run_code", map[string]any{"session_id": sid, "code": "pw = 'hunter2'\nprint('alice was here')"}); res.IsError {
			t.Fatalf("alice run_code: %s", text(res))
		}
	}
	aliceHistory := text(alice.call("get_history", map[string]any{"session_id": "secret"}))

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	leaks := func(what, s string) {
		t.Helper()
		for _, w := range []string{"hunter2", "alice", "secret"} {
			if strings.Contains(s, w) {
				t.Errorf("%s: the answer shows %q: %s", what, w, s)
			}
		}
	}
	attempts := 0
	// Each call is made on alice's session id and on one nobody has; the
	// answers must be the same but for the id.
	same := func(what string, do func(id string) string) {
		t.Helper()
		attempts++
		got := strings.ReplaceAll(do("secret"), "secret", "ID")
		want := strings.ReplaceAll(do("nosuch"), "nosuch", "ID")
		if got != want {
			t.Errorf("%s on alice's session:\n got %s\nwant (as for no session) %s", what, got, want)
		}
		leaks(what, got)
	}
	tools := []struct {
		tool string
		args map[string]any
	}{
		{"get_history", nil},
		{"interrupt_session", nil},
		{"export_history", map[string]any{"path": filepath.Join(dir, "stolen.txt")}},
		{"save_script", map[string]any{"path": filepath.Join(dir, "stolen.py")}},
		{"save_notebook", map[string]any{"path": filepath.Join(dir, "stolen.ipynb")}},
		{"delete_history", map[string]any{"start": 0}},
		{"reset_session", nil},
		{"reset_run_context", nil},
		{"session_status", nil},
		{"get_value", map[string]any{"expression": "pw"}},
		{"list_variables", nil},
		{"delete_session", nil},
	}
	for round := 0; round < 2; round++ {
		for _, tt := range tools {
			same(tt.tool, func(id string) string {
				args := map[string]any{"session_id": id}
				for k, v := range tt.args {
					args[k] = v
				}
				return answer(bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: args}))
			})
		}
		same("resources/read", func(id string) string {
			res, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://" + id + "/history"})
			if err != nil {
				return "protocol error: " + err.Error()
			}
			return fmt.Sprint(len(res.Contents))
		})
		same("resources/subscribe", func(id string) string {
			return fmt.Sprint(bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "session://" + id + "/history"}))
		})
	}
	// list_sessions shows bob none of alice's; run_code in alice's
	// "default" is bob's own, new session.
	attempts++
	list := bob.call("list_sessions", nil)
	leaks("list_sessions", answer(list, nil))
	if rows := structured[struct {
		Sessions []sessionRow `json:"sessions"`
	}](t, list).Sessions; len(rows) != 0 {
		t.Errorf("bob sees sessions: %+v", rows)
	}
	attempts++
	if res := bob.call("run_code", map[string]any{"session_id": "default", "code": "pw"}); !strings.Contains(text(res), "NameError") {
		t.Errorf("bob's run_code in \"default\" reached alice's namespace: %s", text(res))
	}
	if attempts < 20 {
		t.Fatalf("only %d cross-user attempts", attempts)
	}

	// Alice's history changed nowhere, and her runs notify only her: once
	// bob has seen the update of his own session, he has seen none of hers.
	if err := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "session://mine/history"}); err != nil {
		t.Fatal(err)
	}
	alice.call("run_code", map[string]any{"session_id": "secret", "code": "1"})
	bob.call("run_code", map[string]any{"session_id": "mine", "code": "1"})
	select {
	case <-bob.gotOwn:
	case <-ctx.Done():
		t.Fatal("bob got no update for his own session")
	}
	bob.mu.Lock()
	for _, u := range bob.updated {
		if u != "session://mine/history" {
			t.Errorf("bob was notified of %s", u)
		}
	}
	bob.mu.Unlock()
	after := text(alice.call("get_history", map[string]any{"session_id": "secret", "end": 1}))
	if after != aliceHistory {
		t.Errorf("alice's history changed:\nbefore %s\nafter  %s", aliceHistory, after)
	}
	for _, f := range []string{"stolen.txt", "stolen.py", "stolen.ipynb"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("bob exported alice's session to %s", f)
		}
	}
	// Each user's state lives in their own folder.
	if _, err := os.Stat(filepath.Join(state, "users", "alice", "sessions", "secret.jsonl")); err != nil {
		t.Errorf("alice's history file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "users", "bob", "sessions", "secret.jsonl")); err == nil {
		t.Errorf("bob has a history file for alice's session")
	}
}

// --max-sessions bounds all users' kernels together, and the error names
// only the caller's own sessions.
func TestUsersShareMaxSessions(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHTTPServer(t, "--tokens-file", tokens, "--max-sessions", "1", "--pool-size", "0")
	alice := connectUser(t, url, aliceToken)
	bob := connectUser(t, url, bobToken)
	if res := alice.call("run_code", map[string]any{"session_id": "alices-analysis", "code": "1"}); res.IsError {
		t.Fatal(text(res))
	}
	res := bob.call("run_code", map[string]any{"session_id": "bobs", "code": "1"})
	if !res.IsError || !strings.Contains(text(res), "limit of 1 running kernels across all users") || strings.Contains(text(res), "alices-analysis") {
		t.Fatalf("bob over the total limit: %s", text(res))
	}
	alice.call("delete_session", map[string]any{"session_id": "alices-analysis"})
	if res := bob.call("run_code", map[string]any{"session_id": "bobs", "code": "1"}); res.IsError {
		t.Fatalf("bob after alice freed her kernel: %s", text(res))
	}
}
