//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Output and protocol abuse: huge, odd or malicious input is answered
// plainly and bounded, and the server keeps serving.

const relOutputLimit = 20000 // the server's default --output-limit

// relBoundedText fails unless a result's text is within the output limit
// plus the omission note, and says so.
func relBoundedText(t *testing.T, res *mcp.CallToolResult, out runOutput) {
	t.Helper()
	txt := text(res)
	n := utf8.RuneCountInString(txt)
	if !out.Truncated || n > relOutputLimit+200 || !strings.Contains(txt, "characters omitted") {
		t.Fatalf("want a truncated result within %d characters + note: truncated=%v, %d characters, note present=%v",
			relOutputLimit, out.Truncated, n, strings.Contains(txt, "characters omitted"))
	}
	if len(out.Stdout) > 4*(relOutputLimit+200) {
		t.Fatalf("structured stdout not bounded: %d bytes", len(out.Stdout))
	}
}

// relHistoryCapped fails unless the session's transcript says output was
// left out and stays small.
func relHistoryCapped(t *testing.T, s *server, id string) {
	t.Helper()
	// The default transcript previews outputs; full: true shows what the
	// history kept.
	if res := s.call("get_history", map[string]any{"session_id": id}); !strings.Contains(text(res), "outputs shortened") || len(text(res)) > 2000 {
		t.Errorf("get_history's preview after the flood: %d bytes, %q", len(text(res)), text(res)[:min(300, len(text(res)))])
	}
	res := s.call("get_history", map[string]any{"session_id": id, "full": true})
	txt := text(res)
	t.Logf("MEASURE: get_history full: true after the flood: %d bytes", len(txt))
	if res.IsError || !strings.Contains(txt, "omitted") {
		t.Fatalf("history should keep a capped output with an omission note: isError=%v, %d bytes, head %q",
			res.IsError, len(txt), txt[:min(300, len(txt))])
	}
	if len(txt) > 2<<20 {
		t.Fatalf("history transcript not capped: %d bytes", len(txt))
	}
}

// Floods of stdout: one 50 MB print and 200,000 small prints. Not parallel:
// the server's peak RSS is measured.
func TestAbuseStdoutFlood(t *testing.T) {
	cases := []struct {
		name, code string
		maxRSS     int64
	}{
		{"one_50MB_print", "print('x' * 50_000_000)", 400 << 20},
		{"200k_small_prints", "for i in range(200000):\n    print(i)", 400 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t)
			check := relBystander(t, s, "bystander")
			base := relPeakRSS(s.cmd.Process.Pid)
			start := time.Now()
			res, out := s.run("flood", c.code)
			elapsed := time.Since(start)
			peak := relPeakRSS(s.cmd.Process.Pid)
			t.Logf("MEASURE: %s: reported in %v; server peak RSS %.0f MB (before: %.0f MB); result text %d chars",
				c.name, elapsed.Round(time.Millisecond), relMB(peak), relMB(base), utf8.RuneCountInString(text(res)))
			if res.IsError || out.Status != "ok" {
				t.Fatalf("flood: isError=%v %+v", res.IsError, out.Note)
			}
			relBoundedText(t, res, out)
			relHistoryCapped(t, s, "flood")
			if peak > c.maxRSS {
				t.Errorf("server peak RSS %.0f MB, want < %.0f MB: output is held in memory unbounded", relMB(peak), relMB(c.maxRSS))
			}
			if _, out := s.run("flood", "'alive'"); out.Result != "'alive'" {
				t.Fatalf("after the flood: %+v", out)
			}
			check()
		})
	}
}

// Bytes that are not UTF-8, written below Python's text layer, come back
// as valid UTF-8 with U+FFFD in their place.
func TestAbuseInvalidUTF8(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cases := []struct{ name, code string }{
		// ipykernel's OutStream has no .buffer; fall back to the raw fd,
		// which ipykernel captures and forwards from a watcher thread with
		// no handshake: output written there just before a run ends can
		// arrive after it (about 1 run in 2,000 on an idle machine, more
		// under load, in a stock ipykernel too), hence the pause.
		{"stdout_buffer", "import sys, os, time\nif hasattr(sys.stdout, 'buffer'):\n    sys.stdout.buffer.write(b'ok \\xff\\xfe end\\n'); sys.stdout.flush()\nelse:\n    os.write(1, b'ok \\xff\\xfe end\\n')\n    time.sleep(0.3)"},
		{"fd_1", "import os, sys, time\nos.write(1, b'ok \\xff\\xfe end\\n')\ntime.sleep(0.3)"},
		{"lone_surrogate", "print('ok \\udcff\\udcfe end')"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, out := s.run("utf8", c.code)
			txt := text(res)
			t.Logf("%s: status %s text %q", c.name, out.Status, txt)
			if res.IsError || out.Status != "ok" {
				t.Fatalf("isError=%v status %s: %q", res.IsError, out.Status, txt)
			}
			if !strings.Contains(txt, "ok") || !strings.Contains(txt, "end") || !utf8.ValidString(txt) || !strings.ContainsRune(txt, utf8.RuneError) {
				t.Fatalf("want valid UTF-8 with U+FFFD between ok and end: %q", txt)
			}
		})
	}
	if _, out := s.run("utf8", "'fine'"); out.Result != "'fine'" {
		t.Fatalf("after invalid UTF-8: %+v", out)
	}
	if res := s.call("get_history", map[string]any{"session_id": "utf8"}); res.IsError || !utf8.ValidString(text(res)) {
		t.Fatalf("history after invalid UTF-8: %q", text(res))
	}
}

// Carriage-return progress bars and clear_output(wait=True) animations
// show their final state only.
func TestAbuseProgressAndAnimation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	res, out := s.run("anim", "for i in range(101):\n    print(f'\\r{i}%', end='', flush=True)")
	if txt := text(res); out.Status != "ok" || !strings.Contains(txt, "100%") || strings.Contains(txt, "50%") || strings.Contains(out.Stdout, "50%") {
		t.Fatalf("\\r progress: text %q stdout %q", txt, out.Stdout)
	}

	res, out = s.run("anim", "from IPython.display import display, clear_output\nfor i in range(20):\n    clear_output(wait=True)\n    display(f'frame {i}')")
	if txt := text(res); out.Status != "ok" || txt != "'frame 19'" || len(out.Displays) != 1 || out.Displays[0].Text != "'frame 19'" {
		t.Fatalf("clear_output(wait=True) animation: text %q displays %+v", txt, out.Displays)
	}
}

// A 20 MB image: the server survives and answers; what comes back is logged.
// Not parallel: the server's peak RSS is measured.
func TestAbuseHugeImage(t *testing.T) {
	s := startServer(t)
	check := relBystander(t, s, "bystander")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	start := time.Now()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"session_id": "img",
		"code":       "from IPython.display import Image, display\ndisplay(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + bytes(20_000_000), format='png'))",
	}})
	elapsed := time.Since(start)
	peak := relPeakRSS(s.cmd.Process.Pid)
	if err != nil {
		t.Logf("MEASURE: 20 MB image: call failed after %v: %v; server peak RSS %.0f MB", elapsed.Round(time.Millisecond), err, relMB(peak))
		if alive(s.cmd.Process.Pid) && s.cmd.ProcessState == nil {
			t.Fatalf("the client lost the result of a 20 MB image (server alive): %v", err)
		}
		t.Fatalf("the server died on a 20 MB image: %v", err)
	}
	var imgBytes, images int
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			images++
			imgBytes += len(img.Data)
		}
	}
	out := structured[runOutput](t, res)
	t.Logf("MEASURE: 20 MB image: reported in %v; %d image content(s), %d bytes; text %q; server peak RSS %.0f MB",
		elapsed.Round(time.Millisecond), images, imgBytes, text(res), relMB(peak))
	if res.IsError || out.Status != "ok" || len(out.Displays) != 1 {
		t.Fatalf("20 MB image: isError=%v %+v", res.IsError, out)
	}
	if _, out := s.run("img", "'alive'"); out.Result != "'alive'" {
		t.Fatalf("after a 20 MB image: %+v", out)
	}
	if hres := s.call("get_history", map[string]any{"session_id": "img"}); hres.IsError || len(text(hres)) > 1<<20 {
		t.Fatalf("history after a 20 MB image: isError=%v %d bytes", hres.IsError, len(text(hres)))
	}
	check()
}

// 10,000 display_data messages: bounded result, reasonably fast.
func TestAbuseManyDisplays(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	start := time.Now()
	res, out := s.run("disp", "from IPython.display import display\nfor i in range(10000):\n    display(i)")
	elapsed := time.Since(start)
	sc, _ := json.Marshal(res.StructuredContent)
	t.Logf("MEASURE: 10,000 display_data: reported in %v; text %d chars; structured content %d bytes; %d displays listed",
		elapsed.Round(time.Millisecond), utf8.RuneCountInString(text(res)), len(sc), len(out.Displays))
	if res.IsError || out.Status != "ok" {
		t.Fatalf("isError=%v %+v", res.IsError, out.Note)
	}
	// Bounded either way: cut in the middle by characters, or the first
	// outputs kept and the rest counted.
	txt := text(res)
	if n := utf8.RuneCountInString(txt); !out.Truncated || n > relOutputLimit+200 {
		t.Fatalf("want a truncated result within %d characters + note: truncated=%v, %d characters", relOutputLimit, out.Truncated, n)
	}
	if !strings.HasPrefix(txt, "0\n1\n2\n") {
		t.Fatalf("displays out of order or lost: head %q", txt[:min(20, len(txt))])
	}
	switch {
	case strings.Contains(txt, "characters omitted"):
		if !strings.HasSuffix(txt, "9998\n9999") {
			t.Fatalf("cut in the middle but the end is lost: tail %q", txt[max(0, len(txt)-20):])
		}
	case strings.Contains(txt, "more outputs not kept"):
		kept := strings.Count(txt, "\n")
		var left int
		if m := regexp.MustCompile(`\[(\d+) more outputs not kept\]`).FindStringSubmatch(txt); m != nil {
			left, _ = strconv.Atoi(m[1])
		}
		want := 10000 - len(out.Displays)
		// ipykernel may drop messages under a flood (the result says so):
		// then fewer than all of the rest arrived to be counted.
		dropped := strings.Contains(txt, "drops messages under a flood")
		if left != want && !(dropped && left > 0 && left < want) {
			t.Fatalf("the count of outputs left out is wrong: %d displays listed, %d lines, %d counted (dropped noted: %v), tail %q", len(out.Displays), kept, left, dropped, txt[max(0, len(txt)-60):])
		}
	default:
		t.Fatalf("a bounded result must say what it left out: tail %q", txt[max(0, len(txt)-60):])
	}
	if len(sc) > 1<<20 {
		t.Errorf("structured content of %d bytes: not bounded", len(sc))
	}
	if elapsed > 60*time.Second {
		t.Errorf("10,000 displays took %v", elapsed)
	}
	if _, out := s.run("disp", "'alive'"); out.Result != "'alive'" {
		t.Fatalf("after 10,000 displays: %+v", out)
	}
}

type rawError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rawResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (r rawResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func decodeRaw[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

// ping checks the server still answers.
func (c *rawConn) ping(id int) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	if m := c.wait(fmt.Sprint(id)); m["error"] != nil {
		c.t.Fatalf("ping: %s", m["error"])
	}
}

// Malformed and unexpected JSON-RPC get JSON-RPC errors; the server keeps
// serving the requests that follow.
func TestAbuseProtocol(t *testing.T) {
	t.Parallel()
	// Each case gets a server of its own, so one that kills the server does
	// not hide the others.
	t.Run("malformed_json", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--state-dir", "none")
		c.send(`{"jsonrpc":"2.0","id":1,"method":"ping",,,}`)
		m := c.wait("null")
		if e := decodeRaw[rawError](t, m["error"]); e.Code != -32700 {
			t.Fatalf("malformed JSON: want a -32700 parse error, got %s", m["error"])
		}
		c.ping(2)
	})
	t.Run("unknown_method", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--state-dir", "none")
		c.send(`{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}`)
		m := c.wait("3")
		if e := decodeRaw[rawError](t, m["error"]); e.Code != -32601 {
			t.Fatalf("unknown method: want -32601, got %s", m["error"])
		}
		c.ping(4)
	})
	t.Run("unknown_tool", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--state-dir", "none")
		c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
		m := c.wait("5")
		if m["error"] != nil {
			if e := decodeRaw[rawError](t, m["error"]); !strings.Contains(e.Message, "no_such_tool") {
				t.Fatalf("unknown tool: error does not name it: %s", m["error"])
			}
		} else if r := decodeRaw[rawResult](t, m["result"]); !r.IsError || !strings.Contains(r.text(), "no_such_tool") {
			t.Fatalf("unknown tool: %s", m["result"])
		}
		c.ping(6)
	})
	t.Run("wrong_argument_types", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--state-dir", "none")
		for i, a := range []struct{ args, field string }{
			{`{"code":123}`, "code"},
			{`{"code":"1","timeout":"x"}`, "timeout"},
			{`{"session_id":5,"code":"1"}`, "session_id"},
		} {
			id := 10 + i
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":%s}}`, id, a.args))
			m := c.wait(fmt.Sprint(id))
			if m["error"] != nil {
				t.Errorf("%s: want an isError result, got a protocol error %s", a.args, m["error"])
				continue
			}
			if r := decodeRaw[rawResult](t, m["result"]); !r.IsError || !strings.Contains(r.text(), a.field) {
				t.Errorf("%s: want an isError result naming %q: %s", a.args, a.field, m["result"])
			}
		}
		c.ping(19)
	})
	t.Run("10MB_code", func(t *testing.T) {
		t.Parallel()
		c := startRaw(t, "--state-dir", "none")
		code := "# " + strings.Repeat("a", 10<<20) + "\n'big code ran'"
		args, _ := json.Marshal(map[string]any{"session_id": "big", "code": code})
		start := time.Now()
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"run_code","arguments":%s}}`, args))
		m := c.wait("20")
		t.Logf("MEASURE: 10 MB code argument: answered in %v", time.Since(start).Round(time.Millisecond))
		if m["error"] != nil {
			if e := decodeRaw[rawError](t, m["error"]); e.Message == "" {
				t.Fatalf("10 MB code: unclear error %s", m["error"])
			}
			t.Logf("10 MB code: protocol error %s", m["error"])
		} else {
			r := decodeRaw[rawResult](t, m["result"])
			t.Logf("10 MB code: isError=%v text %q", r.IsError, r.text()[:min(300, len(r.text()))])
			if !r.IsError && !strings.Contains(r.text(), "'big code ran'") {
				t.Fatalf("10 MB code: %s", m["result"][:min(500, len(m["result"]))])
			}
		}
		c.ping(21)
		c.send(`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"big","code":"6*7"}}}`)
		if r := decodeRaw[rawResult](t, c.wait("22")["result"]); r.IsError || r.text() != "42" {
			t.Fatalf("after 10 MB code: %+v", r)
		}
	})
}

// session_id is a path component on disk: traversal is refused, and nothing
// is written outside the state dir.
func TestAbusePathTraversal(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	state := filepath.Join(parent, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	// The server's working directory is a sibling of the state dir, so a
	// relative traversal would land somewhere the test can see.
	work := filepath.Join(parent, "work", "cwd")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	etcBefore := relListDir(t, "/etc")
	c := startRawIn(t, work, "--state-dir", state)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"legit","code":"1"}}}`)
	if r := decodeRaw[rawResult](t, c.wait("1")["result"]); r.IsError {
		t.Fatalf("legit session: %s", r.text())
	}
	bad := []string{"../../etc", "a/b", "..", "%2e%2e", ".", "../state2", "/etc/passwd", `a\b`, "a\x00b", strings.Repeat("a", 300)}
	id := 100
	for _, sid := range bad {
		for _, tool := range []string{"run_code", "create_session", "get_history", "export_history", "delete_session", "reset_session"} {
			id++
			args := map[string]any{"session_id": sid}
			switch tool {
			case "run_code":
				args["code"] = "open('/tmp/should-not-exist-kmcp', 'w')"
			case "export_history":
				args["path"] = filepath.Join(parent, "export.txt")
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
			c.send(string(b))
			m := c.wait(fmt.Sprint(id))
			if m["error"] != nil {
				t.Errorf("%s(%q): protocol error %s, want an isError result", tool, sid, m["error"])
				continue
			}
			r := decodeRaw[rawResult](t, m["result"])
			if !r.IsError {
				t.Errorf("%s(session_id=%q) accepted: %s", tool, sid, r.text())
			} else if (tool == "run_code" || tool == "create_session") && !strings.Contains(r.text(), "invalid session_id") {
				t.Errorf("%s(%q): unclear refusal %q", tool, sid, r.text())
			}
		}
	}
	c.ping(999)

	// Only the state dir (and the test's own work dir) exist under parent;
	// inside the state dir every path is a plain name of a legal session.
	if got := relListDir(t, parent); strings.Join(got, ",") != "state,work" {
		t.Fatalf("files appeared beside the state dir: %v", got)
	}
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(state, p)
		if strings.Contains(rel, "etc") || strings.Contains(rel, "..") || strings.Contains(rel, "%") || strings.HasPrefix(rel, "a"+string(filepath.Separator)) {
			t.Errorf("state dir holds %q", rel)
		}
		return nil
	})
	t.Logf("state dir tree: %v", relWalk(state))
	if _, err := os.Stat("/tmp/should-not-exist-kmcp"); err == nil {
		os.Remove("/tmp/should-not-exist-kmcp")
		t.Errorf("code of a refused session ran")
	}
	if after := relListDir(t, "/etc"); !slices.Equal(etcBefore, after) {
		t.Errorf("/etc changed: %d entries before, %d after", len(etcBefore), len(after))
	}
}

func relListDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func relWalk(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(root, p); rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// Browsers must not reach the loopback HTTP server: a DNS-rebinding Host
// header and a cross-origin request are refused with 403.
func TestAbuseHTTPBrowserRequests(t *testing.T) {
	t.Parallel()
	url := startHTTPServer(t)
	post := func(mod func(*http.Request)) (int, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mod(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name string
		mod  func(*http.Request)
		want int
	}{
		{"plain_loopback_client", func(*http.Request) {}, http.StatusOK},
		{"rebinding_host", func(r *http.Request) { r.Host = "evil.example:80" }, http.StatusForbidden},
		{"rebinding_host_no_port", func(r *http.Request) { r.Host = "attacker.test" }, http.StatusForbidden},
		{"cross_origin", func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example")
			r.Header.Set("Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
		{"cross_origin_no_fetch_metadata", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
	}
	for _, c := range cases {
		code, body := post(c.mod)
		if code != c.want {
			t.Errorf("%s: status %d, want %d: %q", c.name, code, c.want, body)
		}
	}
}
