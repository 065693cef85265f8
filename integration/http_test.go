//go:build unix

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// startHTTPServer runs the binary over streamable HTTP on a free port and
// returns its /mcp URL once it is listening.
func startHTTPServer(t *testing.T, args ...string) string {
	t.Helper()
	requireKernel(t)
	return startHTTPCmd(t, exec.Command(binary, append([]string{"--transport", "streamable-http", "--port", "0", "--state-dir", "none"}, args...)...))
}

// startHTTPCmd starts a server command of the caller's that serves
// streamable HTTP and returns its URL once it is listening. The server is
// interrupted and awaited when the test ends, and its stderr is logged if
// the test failed.
func startHTTPCmd(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		re := regexp.MustCompile(`serving streamable-http at (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(interruptSignal)
		cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("server stderr:\n%s", log.String())
		}
	})
	select {
	case u := <-urlc:
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not start listening:\n%s", log.String())
		return ""
	}
}

func TestStreamableHTTPWithToken(t *testing.T) {
	t.Parallel()
	const token = "integration-test-token"
	url := startHTTPServer(t, "--token", token)

	// Without the token, or with a wrong one: 401.
	for _, auth := range []string{"", "Bearer wrong-token", "Basic " + token} {
		resp := pingWith(t, url, auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("Authorization %q: status %d, WWW-Authenticate %q", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// With it, a go-sdk client runs code end to end.
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "web", "code": "import math\nresult = math.sqrt(144)\nresult"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := structured[runOutput](t, res); out.Result != "12.0" {
		t.Fatalf("run_code over HTTP: %+v", out)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "web", "code": "result + 1"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := structured[runOutput](t, res); out.Result != "13.0" {
		t.Fatalf("state over HTTP: %+v", out)
	}
}

func TestNonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "--transport", "streamable-http", "--host", "0.0.0.0", "--port", "0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "token") {
		t.Fatalf("binding 0.0.0.0 without a token: err %v, output %q", err, out)
	}
}

// pingWith POSTs a JSON-RPC ping with the given Authorization header (none
// when empty) and returns the response, its body closed.
func pingWith(t *testing.T, url, auth string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
