//go:build unix

package integration

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The binary over stdio with --ui: the web view's URL is on stderr, it
// answers with its token and refuses without, session_status gives the
// same URL, and the listener goes when the server does.
func TestWebViewOverStdio(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--ui", "127.0.0.1:0", "--pool-size", "0")
	re := regexp.MustCompile(`kernel-mcp: web view at (http://127\.0\.0\.1:\d+/ui/\?token=[0-9a-f]{32})\n`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no web view URL on stderr:\n%s", s.stderr.String())
		} else {
			time.Sleep(20 * time.Millisecond) // polling the log for a line, with a deadline
		}
	}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(url); code != 200 || !strings.Contains(strings.ToLower(body), "<!doctype html") {
		t.Errorf("with the token: %d %.100s", code, body)
	}
	bare := url[:strings.Index(url, "?")]
	if code, _ := get(bare); code != 401 {
		t.Errorf("without the token: %d", code)
	}
	if code, _ := get(bare + "?token=" + strings.Repeat("0", 32)); code != 401 {
		t.Errorf("with a wrong token: %d", code)
	}

	s.run("default", "x = 1")
	if st := text(s.call("session_status", map[string]any{})); !strings.Contains(st, "Web view: "+url) {
		t.Errorf("session_status does not give the URL:\n%s", st)
	}
	if code, body := get(strings.Replace(url, "/ui/?", "/ui/api/sessions/default/cells?", 1)); code != 200 || !strings.Contains(body, `"code":"x = 1"`) {
		t.Errorf("cells: %d %s", code, body)
	}

	s.close()
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("the web view still answers after the server exited: %d", resp.StatusCode)
	}
}
