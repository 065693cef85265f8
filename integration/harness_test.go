//go:build unix

// Package integration drives the built kernel-mcp binary with real MCP
// clients against real kernels.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the kernel-mcp executable built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kernel-mcp-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kernel-mcp")
	build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/kernel-mcp")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kernel-mcp:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	restore, err := ipytest.MemoryHistory()
	if err != nil {
		fmt.Fprintln(os.Stderr, "an IPython dir for the tests' kernels:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	restore()
	if err := gatewaytest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the test gateways:", err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireKernel fails (under CI) or skips (locally) when python3 has no
// ipykernel: a skip in CI would hide a broken install step.
func requireKernel(t testing.TB) {
	t.Helper()
	requirePython(t, "ipykernel")
}

func requirePython(t testing.TB, modules ...string) {
	t.Helper()
	args := []string{"-c", "import " + strings.Join(modules, ", ")}
	if out, err := exec.Command("python3", args...).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("python3 cannot import %s: %v\n%s", strings.Join(modules, ", "), err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// server is one running kernel-mcp process and a go-sdk client session on it.
type server struct {
	t        testing.TB
	cmd      *exec.Cmd
	cs       *mcp.ClientSession
	stderr   *lockedBuffer
	progress chan *mcp.ProgressNotificationParams
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer spawns the binary over stdio with the given flags, in a state
// dir of its own, and connects a client. It is closed at test end.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	return startServerWith(t, nil, args...)
}

// startServerWith is startServer with a client of the caller's (nil: one
// that collects progress notifications in server.progress).
func startServerWith(t testing.TB, client *mcp.Client, args ...string) *server {
	t.Helper()
	return startServerFull(t, client, nil, args...)
}

// startServerEnv is startServer with extra environment variables for the
// server (and so for the kernels it starts).
func startServerEnv(t testing.TB, env []string, args ...string) *server {
	t.Helper()
	return startServerFull(t, nil, env, args...)
}

func startServerFull(t testing.TB, client *mcp.Client, env []string, args ...string) *server {
	t.Helper()
	requireKernel(t)
	args = append([]string{"--state-dir", t.TempDir()}, args...)
	cmd := exec.Command(binary, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return connectCmd(t, cmd, client)
}

// connectCmd starts a server command of the caller's over stdio and
// connects client to it (nil: one that collects progress notifications in
// server.progress). The server is closed when the test ends, and its
// stderr logged if the test failed.
func connectCmd(t testing.TB, cmd *exec.Cmd, client *mcp.Client) *server {
	t.Helper()
	return connectVia(t, cmd, client, nil)
}

// connectVia is connectCmd with the client's transport wrapped by wrap
// (nil: as it is), e.g. to see the JSON the server wrote.
func connectVia(t testing.TB, cmd *exec.Cmd, client *mcp.Client, wrap func(mcp.Transport) mcp.Transport) *server {
	t.Helper()
	s := &server{t: t, cmd: cmd, stderr: &lockedBuffer{}, progress: make(chan *mcp.ProgressNotificationParams, 100)}
	cmd.Stderr = s.stderr
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "integration-test", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				select {
				case s.progress <- r.Params:
				default:
				}
			},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}
	if wrap != nil {
		tr = wrap(tr)
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v\nserver stderr:\n%s", err, s.stderr.String())
	}
	s.cs = cs
	t.Cleanup(func() {
		s.close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// close ends the session (closing stdin) and waits for the server to exit.
func (s *server) close() {
	if s.cs != nil {
		s.cs.Close()
		s.cs = nil
	}
}

// call invokes a tool and fails the test on a protocol error.
func (s *server) call(tool string, args map[string]any) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return res
}

// run calls run_code and decodes its structured content.
func (s *server) run(session, code string, extra ...any) (*mcp.CallToolResult, runOutput) {
	s.t.Helper()
	args := map[string]any{"session_id": session, "code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	res := s.call("run_code", args)
	return res, structured[runOutput](s.t, res)
}

type runOutput struct {
	SessionID      string `json:"session_id"`
	ExecutionCount int    `json:"execution_count"`
	Status         string `json:"status"`
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	Result         string `json:"result"`
	ResultFrom     string `json:"result_from"`
	Displays       []struct {
		MimeTypes []string `json:"mime_types"`
		Text      string   `json:"text"`
		TextFrom  string   `json:"text_from"`
	} `json:"displays"`
	Error *struct {
		EName     string `json:"ename"`
		EValue    string `json:"evalue"`
		Line      int    `json:"line"`
		Traceback string `json:"traceback"`
	} `json:"error"`
	Errors []struct {
		EName  string `json:"ename"`
		EValue string `json:"evalue"`
		Line   int    `json:"line"`
	} `json:"errors"`
	Truncated bool   `json:"truncated"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Note      string `json:"note"`
}

// errorName is the part of an error that shownErrors returns.
type errorName struct{ EName, EValue string }

// shownErrors are the tracebacks a cell showed, in order: errors when the
// result has it, else the one error (a result names a traceback once). An
// error without a traceback was the reply's alone (IPython's UsageError, a
// kernel that died): the cell showed none.
func (o runOutput) shownErrors() []errorName {
	var n []errorName
	for _, e := range o.Errors {
		n = append(n, errorName{e.EName, e.EValue})
	}
	if len(n) == 0 && o.Error != nil && o.Error.Traceback != "" {
		n = append(n, errorName{o.Error.EName, o.Error.EValue})
	}
	return n
}

func structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if res.StructuredContent == nil {
		t.Fatalf("no structured content; text: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

// text joins a result's text contents.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pidOf returns a session's kernel pid from list_sessions.
func (s *server) pidOf(session string) int {
	s.t.Helper()
	for _, row := range s.sessions() {
		if row.SessionID == session {
			return row.Pid
		}
	}
	s.t.Fatalf("no session %q in list_sessions", session)
	return 0
}

type sessionRow struct {
	SessionID    string `json:"session_id"`
	State        string `json:"state"`
	HistoryCount int    `json:"history_count"`
	Pid          int    `json:"pid"`
	Kernel       string `json:"kernel"`
}

func (s *server) sessions() []sessionRow {
	s.t.Helper()
	out := structured[struct {
		Sessions []sessionRow `json:"sessions"`
	}](s.t, s.call("list_sessions", nil))
	return out.Sessions
}

// alive reports whether a process exists.
func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// waitGone waits up to d for pid to disappear (a zombie counts as gone:
// its parent, the server, may not have reaped it yet).
func waitGone(t testing.TB, pid int, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if !alive(pid) || isZombie(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a pid: there is no event to wait on
	}
}

func isZombie(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "State:") {
			return strings.Contains(sc.Text(), "Z")
		}
	}
	return false
}

// rawConn is a kernel-mcp process spoken to in raw JSON-RPC lines.
type rawConn struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	msgs  chan map[string]json.RawMessage
	err   chan error
	stder *lockedBuffer
	done  chan struct{} // closed when the process has exited
}

func startRaw(t *testing.T, args ...string) *rawConn {
	t.Helper()
	return startRawIn(t, "", args...)
}

// startRawIn is startRaw with the server's working directory set to dir.
func startRawIn(t *testing.T, dir string, args ...string) *rawConn {
	t.Helper()
	requireKernel(t)
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	c := &rawConn{t: t, cmd: cmd, stdin: stdin, msgs: make(chan map[string]json.RawMessage, 100), err: make(chan error, 1), stder: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stder
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-c.done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", c.stder.String())
		}
	})
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m map[string]json.RawMessage
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					c.err <- fmt.Errorf("server wrote a line that is not JSON: %q", line[:min(200, len(line))])
					return
				}
				c.msgs <- m
			}
			if err != nil {
				c.err <- fmt.Errorf("server stdout: %w", err)
				return
			}
		}
	}()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.wait(`"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("writing to the server: %v\n%s", err, c.stder.String())
	}
}

// wait returns the next message whose id is id (a JSON literal: `"x"`,
// `7`, `null`), skipping notifications and other responses.
func (c *rawConn) wait(id string) map[string]json.RawMessage {
	c.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m := <-c.msgs:
			if got, ok := m["id"]; ok && string(got) == id {
				return m
			}
			if _, ok := m["id"]; !ok && id == "null" {
				continue
			}
		case err := <-c.err:
			c.t.Fatalf("waiting for the response to id %s: %v", id, err)
		case <-timeout:
			c.t.Fatalf("no response to id %s within 60 s", id)
		}
	}
}
