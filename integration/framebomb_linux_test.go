package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A kernel that announces a 2^50-byte frame on its iopub connection costs
// its own session's variables and nothing else: the server stays up (it
// used to panic in zmq4's reader and take every user's kernels with it),
// the run ends as interrupted with the size and the limit named, and is in
// the history; another user's run that was going on at the time ends
// normally and is in their history. Under --sandbox with --tokens-file, as
// the attack was made.
func TestFaultFrameBomb(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	const aliceToken, bobToken = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHTTPServer(t, "--tokens-file", tokens, "--state-dir", filepath.Join(dir, "state"), "--sandbox", "--pool-size", "0")
	alice := connectUser(t, url, aliceToken)
	bob := connectUser(t, url, bobToken)

	// Bob's run waits for his answer while alice's kernel misbehaves.
	res := bob.call("run_code", map[string]any{"session_id": "nb", "code": "bob_kept = 1\nanswer = input('go? ')\nprint('bob got', answer)", "background": true})
	bobRun := structured[runState](t, res)
	if bobRun.RunID == "" {
		t.Fatalf("bob's background run: %s", text(res))
	}

	alice.call("run_code", map[string]any{"session_id": "nb", "code": "alice_var = 1"})
	res = alice.call("run_code", map[string]any{"session_id": "nb", "code": ipytest.FrameBomb})
	out := structured[runOutput](t, res)
	txt := text(res)
	// Over ipc every connection gets the header: whichever the server
	// reads first stops the kernel.
	why := regexp.MustCompile(`it broke the protocol on (shell|control|stdin|iopub|heartbeat): it announced a 1125899906842624-byte frame, over the 268435456-byte limit \(--max-message-size\)`)
	if out.Status != "interrupted" || !why.MatchString(out.Note) || !why.MatchString(txt) {
		t.Fatalf("the bomb's run: status %q, note %q\n%s\nwant interrupted, naming the size and the limit", out.Status, out.Note, txt)
	}

	// Alice's next call gets a fresh kernel; her history has the run.
	res = alice.call("run_code", map[string]any{"session_id": "nb", "code": "'alice again'"})
	if out := structured[runOutput](t, res); out.Result != "'alice again'" || !strings.Contains(text(res), "previous kernel") {
		t.Fatalf("alice after the bomb: %+v\n%s", out, text(res))
	}
	hist := text(alice.call("get_history", map[string]any{"session_id": "nb"}))
	if !strings.Contains(hist, "_bomb = bytes") || !why.MatchString(hist) || !strings.Contains(hist, "alice again") {
		t.Errorf("alice's history lacks the bomb's run or the next one:\n%s", hist)
	}

	// Bob's kernel never noticed.
	res = bob.call("send_input", map[string]any{"session_id": "nb", "run_id": bobRun.RunID, "text": "yes"})
	if !strings.Contains(text(res), "bob got yes") {
		t.Fatalf("bob's run after alice's bomb:\n%s", text(res))
	}
	if out := structured[runOutput](t, bob.call("run_code", map[string]any{"session_id": "nb", "code": "bob_kept"})); out.Result != "1" {
		t.Errorf("bob's variable after alice's bomb: %+v", out)
	}
	if hist := text(bob.call("get_history", map[string]any{"session_id": "nb"})); !strings.Contains(hist, "bob got yes") {
		t.Errorf("bob's history lacks his run:\n%s", hist)
	}
}
