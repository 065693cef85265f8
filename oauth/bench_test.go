package oauth

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkTokenCheck is what the resource side adds to a call: the check
// of a token seen before (a cache lookup and the revocation check), and of
// one seen for the first time (the ES256 signature too).
func BenchmarkTokenCheck(b *testing.B) {
	e := newEnv(b, nil)
	c := newRaw(b, e)
	tok := c.signIn(c.client(), "alice", "alice-pw")
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.as.VerifyToken(b.Context(), tok.access, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first-use", func(b *testing.B) {
		for b.Loop() {
			e.as.cacheMu.Lock()
			clear(e.as.cache)
			e.as.cacheMu.Unlock()
			if _, err := e.as.VerifyToken(b.Context(), tok.access, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMCPCall is one MCP tools/call over loopback HTTP to a stateless
// endpoint, without authorization and behind RequireToken: the difference
// is the added latency per call.
func BenchmarkMCPCall(b *testing.B) {
	e := newEnv(b, nil)
	c := newRaw(b, e)
	tok := c.signIn(c.client(), "alice", "alice-pw")
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	call := func(b *testing.B, path, token string) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	b.Run("no-auth", func(b *testing.B) {
		for b.Loop() {
			call(b, "/open", "")
		}
	})
	b.Run("oauth", func(b *testing.B) {
		for b.Loop() {
			call(b, "/mcp", tok.access)
		}
	})
}
