//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The seed example of python-repl-mcp: state persists, the last
// expression's value comes back.
func TestSeedExample(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	res, out := s.run("default", "import math\nresult = math.sqrt(144)\nresult")
	if res.IsError || out.Status != "ok" || out.Result != "12.0" || text(res) != "12.0" {
		t.Fatalf("first: isError=%v out=%+v text=%q", res.IsError, out, text(res))
	}
	_, out = s.run("default", "result + 1")
	if out.Result != "13.0" || out.ExecutionCount != 2 {
		t.Fatalf("second: %+v", out)
	}
	// session_id defaults to "default".
	res = s.call("run_code", map[string]any{"code": "result * 2"})
	if got := structured[runOutput](t, res).Result; got != "24.0" {
		t.Fatalf("default session: result %q", got)
	}
}

func TestDataFrameAndPlot(t *testing.T) {
	t.Parallel()
	requirePython(t, "pandas", "matplotlib")
	s := startServer(t)
	_, out := s.run("ds", "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\ndf")
	if out.Status != "ok" || !strings.Contains(out.Result, "a  b") || !strings.Contains(out.Result, "2  3  z") {
		t.Fatalf("DataFrame display: %+v", out)
	}

	res, out := s.run("ds", "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()")
	if out.Status != "ok" {
		t.Fatalf("plot: %+v %s", out, text(res))
	}
	var images int
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			images++
			if img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
				t.Fatalf("image %s, %d bytes, starts %q", img.MIMEType, len(img.Data), img.Data[:min(8, len(img.Data))])
			}
		}
	}
	if images != 1 {
		t.Fatalf("want 1 image, got %d; content %v", images, res.Content)
	}
	if len(out.Displays) != 1 || !strings.Contains(strings.Join(out.Displays[0].MimeTypes, ","), "image/png") {
		t.Fatalf("displays %+v", out.Displays)
	}
}

func TestErrorsNameTheLineAndKeepOutput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	res, out := s.run("err", "print('before the failure')\nx = undefined_name + 1\nprint('never')")
	if !res.IsError || out.Status != "error" {
		t.Fatalf("want an error result: %+v", out)
	}
	first := text(res)
	if !strings.HasPrefix(first, "NameError on line 2: name 'undefined_name' is not defined") {
		t.Fatalf("headline: %q", first)
	}
	if !strings.Contains(first, "before the failure\n") || strings.Contains(out.Stdout, "never") {
		t.Fatalf("output before the failure must be kept: %q", first)
	}
	if strings.Contains(first, "\x1b[") || strings.Contains(out.Error.Traceback, "\x1b[") {
		t.Fatalf("ANSI codes left in: %q", first)
	}
	if out.Error.EName != "NameError" || out.Error.Line != 2 || out.Stdout != "before the failure\n" {
		t.Fatalf("structured error: %+v stdout %q", out.Error, out.Stdout)
	}

	// The session survives its errors.
	if _, out := s.run("err", "21 * 2"); out.Result != "42" {
		t.Fatalf("after error: %+v", out)
	}
}

func TestStderrInOrder(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	res, out := s.run("io", "import sys\nprint('one', flush=True)\nprint('two', file=sys.stderr, flush=True)\nprint('three', flush=True)")
	if out.Stdout != "one\nthree\n" || out.Stderr != "two\n" {
		t.Fatalf("stdout %q stderr %q", out.Stdout, out.Stderr)
	}
	if got := text(res); got != "one\ntwo\nthree" {
		t.Fatalf("text content out of order: %q", got)
	}
}

func TestTimeoutInterruptsAndKeepsVariables(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("slow", "kept = 'still here'")
	res, out := s.run("slow", "import time\nprint('started', flush=True)\nfor i in range(30):\n    time.sleep(0.1)\n", "timeout", 1)
	if out.Status != "timeout" || !res.IsError {
		t.Fatalf("want timeout: %+v", out)
	}
	if !strings.Contains(out.Note, "namespace was kept") || !strings.Contains(text(res), "timed out after 1s") {
		t.Fatalf("note: %q text: %q", out.Note, text(res))
	}
	if out.Stdout != "started\n" {
		t.Fatalf("output so far must be kept: %q", out.Stdout)
	}
	// The interrupt stopped the loop: it did not run to its end (a
	// timeout that only reported itself would leave i at 29).
	if _, out := s.run("slow", "i"); out.Result == "" || out.Result == "29" {
		t.Fatalf("the loop was not interrupted: i = %q", out.Result)
	}
	if _, out := s.run("slow", "kept"); out.Result != "'still here'" {
		t.Fatalf("variable lost after timeout: %+v", out)
	}
}

func TestKernelDeathReportedThenRecovers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("crash", "x = 1")
	res, out := s.run("crash", "import os\nos._exit(1)")
	if !res.IsError || !strings.Contains(text(res), "kernel died (exit status 1) — variables lost, history kept") {
		t.Fatalf("os._exit: %+v\n%s", out, text(res))
	}
	if st := stateOf(s, "crash"); st != "dead" {
		t.Fatalf("state after death = %q, want dead", st)
	}
	res, out = s.run("crash", "y = 2\ny")
	if out.Result != "2" || !strings.Contains(text(res), "previous kernel had died") {
		t.Fatalf("after restart: %+v %q", out, text(res))
	}
	if _, out := s.run("crash", "x"); out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("x should be gone: %+v", out)
	}

	// SIGKILL from outside, mid-run.
	pid := s.pidOf("crash")
	done := make(chan runOutput, 1)
	go func() {
		_, out := s.run("crash", "import time\ntime.sleep(30)")
		done <- out
	}()
	waitState(t, s, "crash", "busy")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out.Error == nil || !strings.Contains(out.Note, "kernel died (signal 9)") {
			t.Fatalf("SIGKILL: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run_code did not report the SIGKILL within 10 s")
	}
	if _, out := s.run("crash", "'back'"); out.Result != "'back'" {
		t.Fatalf("after SIGKILL: %+v", out)
	}
}

func stateOf(s *server, session string) string {
	for _, r := range s.sessions() {
		if r.SessionID == session {
			return r.State
		}
	}
	return ""
}

// waitState polls list_sessions (which never waits behind a run) until the
// session reaches state.
func waitState(t *testing.T, s *server, session, state string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for stateOf(s, session) != state {
		if time.Now().After(deadline) {
			t.Fatalf("session %q never reached state %q", session, state)
		}
		time.Sleep(20 * time.Millisecond) // list_sessions is the event source here
	}
}

func TestSessionsRunInParallel(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("p1", "import time")
	s.run("p2", "import time")
	var wg sync.WaitGroup
	start := time.Now()
	for _, id := range []string{"p1", "p2"} {
		wg.Go(func() {
			if _, out := s.run(id, "time.sleep(2)\n'done'"); out.Result != "'done'" {
				t.Errorf("%s: %+v", id, out)
			}
		})
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed >= 4*time.Second {
		t.Fatalf("two 2 s runs in two sessions took %v: not parallel", elapsed)
	}
}

func TestInterruptWhileRunning(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("int", "before = 5")
	done := make(chan runOutput, 1)
	go func() {
		_, out := s.run("int", "import time\nwhile True:\n    time.sleep(0.05)")
		done <- out
	}()
	waitState(t, s, "int", "busy")
	res := s.call("interrupt_session", map[string]any{"session_id": "int"})
	if res.IsError || !strings.Contains(text(res), "Interrupt sent") {
		t.Fatalf("interrupt_session: %s", text(res))
	}
	select {
	case out := <-done:
		if out.Status != "error" || out.Error == nil || out.Error.EName != "KeyboardInterrupt" {
			t.Fatalf("interrupted run: %+v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run was not interrupted")
	}
	if _, out := s.run("int", "before"); out.Result != "5" {
		t.Fatalf("namespace lost: %+v", out)
	}
}

func TestInstallPackage(t *testing.T) {
	t.Parallel()
	const pkg = "pyjokes"
	exec.Command("python3", "-m", "pip", "uninstall", "-y", "-q", pkg).Run()
	t.Cleanup(func() { exec.Command("python3", "-m", "pip", "uninstall", "-y", "-q", pkg).Run() })
	s := startServer(t)
	if _, out := s.run("pip", "import pyjokes"); out.Error == nil || out.Error.EName != "ModuleNotFoundError" {
		t.Fatalf("%s should not be installed yet: %+v", pkg, out)
	}
	res := s.call("install_package", map[string]any{"session_id": "pip", "package_name": pkg})
	if res.IsError {
		t.Fatalf("install_package: %s", text(res))
	}
	if _, out := s.run("pip", "import pyjokes\nisinstance(pyjokes.get_joke(), str)"); out.Result != "True" {
		t.Fatalf("not importable after install: %+v", out)
	}

	for _, bad := range []string{"requests; rm -rf /", "-e .", "--index-url=http://x y", "../../etc", "pkg @ http://x"} {
		res := s.call("install_package", map[string]any{"session_id": "pip", "package_name": bad})
		if !res.IsError || !strings.Contains(text(res), "invalid package_name") {
			t.Fatalf("install_package(%q) accepted: %s", bad, text(res))
		}
	}
}

func TestBadInputGetsClearErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("keep", "v = 1")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"interrupt_session", map[string]any{"session_id": "nope"}, `no session "nope"; sessions: keep`},
		{"session_status", map[string]any{"session_id": "nope"}, `no session "nope"; sessions: keep`},
		{"run_code", map[string]any{"session_id": "keep"}, "run_code needs code"},
		{"run_code", map[string]any{"session_id": "keep", "code": "1", "timeout": -1}, "invalid timeout -1"},
		{"run_code", map[string]any{"session_id": "keep", "code": "1", "timeout": "soon"}, "timeout"},
		{"run_code", map[string]any{"session_id": "../etc", "code": "1"}, "invalid session_id"},
		{"run_code", map[string]any{"session_id": "a/b", "code": "1"}, "invalid session_id"},
		{"run_file", map[string]any{"session_id": "keep", "path": "/no/such/file.py"}, "cannot run /no/such/file.py"},
		{"create_session", map[string]any{"session_id": "keep"}, `session "keep" already exists`},
		{"create_session", map[string]any{"session_id": "nopy", "python": "/no/such/python"}, "/no/such/python"},
	}
	for _, c := range cases {
		res := s.call(c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s(%v): isError=%v %q, want it to say %q", c.tool, c.args, res.IsError, text(res), c.want)
		}
	}
	// Every bad call left the session as it was.
	if _, out := s.run("keep", "v"); out.Result != "1" {
		t.Fatalf("session disturbed: %+v", out)
	}
	names := []string{}
	for _, r := range s.sessions() {
		names = append(names, r.SessionID)
	}
	if strings.Join(names, ",") != "keep" {
		t.Fatalf("sessions after bad input: %v", names)
	}
}

func TestRunFileAndSessionLifecycle(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte("from_file = 40\nprint('ran the file')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.call("create_session", map[string]any{"session_id": "life", "cwd": dir})
	info := structured[struct {
		Language string `json:"language"`
		Version  string `json:"version"`
		Pid      int    `json:"pid"`
	}](t, res)
	if res.IsError || info.Language != "python" || !strings.HasPrefix(info.Version, "3.") || info.Pid == 0 {
		t.Fatalf("create_session: %s %+v", text(res), info)
	}
	res = s.call("run_file", map[string]any{"session_id": "life", "path": "script.py"})
	if out := structured[runOutput](t, res); out.Stdout != "ran the file\n" {
		t.Fatalf("run_file: %+v", out)
	}
	if _, out := s.run("life", fmt.Sprintf("import os\n(from_file + 2, os.getcwd() == %q)", dir)); out.Result != "(42, True)" {
		t.Fatalf("file namespace/cwd: %+v", out)
	}

	st := structured[struct {
		Interpreter string            `json:"interpreter"`
		Pid         int               `json:"pid"`
		Cwd         string            `json:"cwd"`
		MemoryRSS   int64             `json:"memory_rss_bytes"`
		Packages    map[string]string `json:"packages"`
	}](t, s.call("session_status", map[string]any{"session_id": "life"}))
	if st.Interpreter == "" || st.Pid != info.Pid || st.Cwd != dir || st.MemoryRSS < 1e6 || st.Packages["ipykernel"] == "" {
		t.Fatalf("session_status: %+v", st)
	}
	if _, out := s.run("life", "'_kmcp_status' in dir()"); out.Result != "False" {
		t.Fatalf("status probe left names behind: %+v", out)
	}

	res = s.call("reset_run_context", map[string]any{"session_id": "life"})
	if res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("life", "from_file"); out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("namespace survived reset_run_context: %+v", out)
	}
	if n := historyCount(s, "life"); n != 4 {
		t.Fatalf("history after reset_run_context: %d entries, want 4", n)
	}
	res = s.call("reset_session", map[string]any{"session_id": "life"})
	if res.IsError || historyCount(s, "life") != 0 {
		t.Fatalf("reset_session: %s, history %d", text(res), historyCount(s, "life"))
	}

	pid := s.pidOf("life")
	res = s.call("delete_session", map[string]any{"session_id": "life"})
	if res.IsError {
		t.Fatal(text(res))
	}
	if !waitGone(t, pid, 10*time.Second) {
		t.Fatalf("kernel %d still running after delete_session", pid)
	}
	if len(s.sessions()) != 0 {
		t.Fatalf("session not forgotten: %+v", s.sessions())
	}

	kernels := structured[struct {
		Kernels      []struct{ Name string } `json:"kernels"`
		Interpreters []struct {
			Path      string `json:"path"`
			IPyKernel string `json:"ipykernel"`
		} `json:"interpreters"`
	}](t, s.call("list_kernels", nil))
	if len(kernels.Interpreters) == 0 {
		t.Fatalf("list_kernels found no interpreter: %+v", kernels)
	}
}

func historyCount(s *server, session string) int {
	for _, r := range s.sessions() {
		if r.SessionID == session {
			return r.HistoryCount
		}
	}
	return -1
}

// Calls queued on one session run in the order they were sent, even though
// the SDK hands each to its own goroutine. The calls are written to the
// server's stdin in one burst, so their order on the wire is certain.
func TestCallsRunInArrivalOrder(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	const n = 20
	var burst bytes.Buffer
	burst.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"order","code":"seen = []"}}}` + "\n")
	for i := range n {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"order","code":"seen.append(%d)"}}}`+"\n", i+2, i)
	}
	fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"order","code":"seen"}}}`, n+2)
	c.send(burst.String()) // one write: the order on the wire is certain
	var resp struct {
		Result struct {
			StructuredContent runOutput `json:"structuredContent"`
		} `json:"result"`
	}
	b, _ := json.Marshal(c.wait(fmt.Sprint(n + 2)))
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if got := resp.Result.StructuredContent.Result; got != "["+strings.Join(want, ", ")+"]" {
		t.Fatalf("order: %s", got)
	}
}

func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "prog", "code": "import time\nfor i in range(5):\n    print('step', i, flush=True)\n    time.sleep(0.5)"}}
	params.SetProgressToken("tok-1")
	if _, err := s.cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-s.progress:
		if p.ProgressToken != "tok-1" || !strings.Contains(p.Message, "step") {
			t.Fatalf("progress %+v", p)
		}
	default:
		t.Fatal("no progress notification during a 2.5 s run")
	}
}

// Over streamable HTTP too, in both eras: under protocol 2026-07-28 (no
// HTTP session) a notification reaches the client only on its call's own
// response stream, so it must be sent in the call's context.
func TestProgressNotificationsHTTP(t *testing.T) {
	t.Parallel()
	url := startHTTPServer(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			progress := make(chan *mcp.ProgressNotificationParams, 64)
			client := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					select {
					case progress <- r.Params:
					default:
					}
				},
			})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("the session speaks %s, want %s", got, version)
			}
			params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "prog-" + version, "code": "import time\nfor i in range(5):\n    print('step', i, flush=True)\n    time.sleep(0.5)"}}
			params.SetProgressToken("tok-" + version)
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-progress:
				if p.ProgressToken != "tok-"+version || !strings.Contains(p.Message, "step") {
					t.Fatalf("progress %+v", p)
				}
			default:
				t.Fatal("no progress notification during a 2.5 s run")
			}
		})
	}
}

// Closing stdin ends the server and every kernel it started.
func TestStdinEOFShutsKernelsDown(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("a", "1")
	s.run("b", "1")
	pids := []int{s.pidOf("a"), s.pidOf("b")}
	// close shuts stdin and waits for the process; the transport would send
	// SIGTERM only after its 10 s TerminateDuration.
	start := time.Now()
	s.close()
	if elapsed := time.Since(start); elapsed > 9*time.Second {
		t.Fatalf("server took %v to exit after stdin closed", elapsed)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, s.stderr.String())
	}
	for _, pid := range pids {
		if !waitGone(t, pid, 5*time.Second) {
			t.Fatalf("kernel %d outlived the server", pid)
		}
	}
}

func TestSignalsShutKernelsDown(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startServer(t)
			s.run("a", "1")
			pid := s.pidOf("a")
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			limit := 20 * time.Second
			if sig == syscall.SIGKILL {
				limit = 2 * time.Second // Pdeathsig: immediate
			}
			if !waitGone(t, pid, limit) {
				t.Fatalf("kernel %d still alive %v after %v to the server", pid, limit, sig)
			}
		})
	}
}

// notifications/cancelled from the client interrupts the run the same way a
// timeout does: the kernel is free again and keeps its variables.
func TestCancellationInterrupts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("cancel", "kept = 7")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "cancel", "code": "while True:\n    pass"}})
		errc <- err
	}()
	waitState(t, s, "cancel", "busy")
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	// The next call runs only once the loop was interrupted.
	if _, out := s.run("cancel", "kept"); out.Result != "7" {
		t.Fatalf("after cancellation: %+v", out)
	}
	if _, out := s.run("cancel", "len(In)"); out.Status != "ok" {
		t.Fatalf("kernel not usable after cancellation: %+v", out)
	}
}

// Code that ignores SIGINT cannot be interrupted: after the grace period the
// kernel is restarted and the result says plainly that state was lost.
func TestIgnoredInterruptRestartsKernel(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("stubborn", "lost = 1")
	pid := s.pidOf("stubborn")
	start := time.Now()
	res, out := s.run("stubborn", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", "timeout", 1)
	elapsed := time.Since(start)
	if out.Status != "timeout" || !strings.Contains(out.Note, "restarted: all variables were lost") {
		t.Fatalf("ignored interrupt: %+v\n%s", out, text(res))
	}
	if elapsed > 20*time.Second {
		t.Fatalf("restart took %v", elapsed)
	}
	if !waitGone(t, pid, 10*time.Second) {
		t.Fatalf("old kernel %d still running", pid)
	}
	if _, out := s.run("stubborn", "lost"); out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("want a fresh namespace: %+v", out)
	}
}

// Closing stdin while a block runs forever still ends the server promptly:
// calls in flight get a few seconds to finish, then the kernels are shut
// down. (A go-sdk client's Close waits for its own calls in flight, so the
// test speaks JSON-RPC over the pipes itself.)
func TestStdinEOFDuringRun(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"eof","code":"while True:\n    pass"}}}`)
	// Ask list_sessions until the run is under way.
	deadline := time.Now().Add(60 * time.Second)
	for id := 100; ; id++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`, id))
		if b, _ := json.Marshal(c.wait(fmt.Sprint(id))); strings.Contains(string(b), `"state":"busy"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never became busy")
		}
	}
	start := time.Now()
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server still running 30 s after stdin closed during a run:\n%s", c.stder.String())
	}
	elapsed := time.Since(start)
	t.Logf("MEASURE: server exited %v after stdin closed during a run", elapsed)
	if elapsed > 15*time.Second {
		t.Fatalf("server needed %v to exit after stdin closed during a run", elapsed)
	}
}
