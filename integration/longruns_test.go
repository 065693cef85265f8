//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runState is the structured content of a handed-off call or of wait_run
// while the run goes on; a finished run's result is a runOutput with the
// same session_id, run_id and status fields.
type runState struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Output    string `json:"output"`
	Prompt    string `json:"prompt"`
	Password  bool   `json:"password"`
	Queued    int    `json:"queued"`
	Note      string `json:"note"`
	Result    string `json:"result"`
	Stdout    string `json:"stdout"`
	Error     *struct {
		EName string `json:"ename"`
	} `json:"error"`
}

func (st runState) going() bool {
	return st.Status == "running" || st.Status == "queued" || st.Status == "input_requested"
}

// waitRun calls wait_run until the run ends, returning every text it got
// and the final result.
func (s *server) waitRunDone(session, runID string, texts *[]string) (*mcp.CallToolResult, runState) {
	s.t.Helper()
	for i := 0; i < 100; i++ {
		res := s.call("wait_run", map[string]any{"session_id": session, "run_id": runID})
		st := structured[runState](s.t, res)
		*texts = append(*texts, text(res))
		if !st.going() {
			return res, st
		}
	}
	s.t.Fatalf("run %s still going after 100 wait_run calls", runID)
	return nil, runState{}
}

// waitRunUntil calls wait_run until ok says the state is the one wanted,
// or the run ends (which fails the test). Each call waits at most --max-wait,
// so a slow kernel start on a loaded machine only costs more calls.
func (s *server) waitRunUntil(session, runID string, what string, ok func(runState) bool) runState {
	s.t.Helper()
	var seen []string
	for i := 0; i < 60; i++ {
		st := structured[runState](s.t, s.call("wait_run", map[string]any{"session_id": session, "run_id": runID}))
		if ok(st) {
			return st
		}
		seen = append(seen, st.Output)
		if !st.going() {
			s.t.Fatalf("run %s ended (%s) before %s; output %q", runID, st.Status, what, seen)
		}
	}
	s.t.Fatalf("run %s: no %s after 60 wait_run calls", runID, what)
	return runState{}
}

// A run longer than --max-wait hands off; wait_run returns every line once
// and the final value; runs queued behind it hand off as queued and finish
// in order; the history holds one entry per run.
func TestLongRunHandoff(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "2")
	res, _ := s.run("long", "import time\nfor i in range(10):\n    print('line', i, flush=True)\n    time.sleep(1)\n'all done'")
	first := structured[runState](t, res)
	if first.Status != "running" || first.RunID == "" || res.IsError {
		t.Fatalf("a 10 s run with --max-wait 2: %+v\n%s", first, text(res))
	}
	if !strings.Contains(text(res), "wait_run") {
		t.Errorf("hand-off text does not say to call wait_run:\n%s", text(res))
	}
	texts := []string{text(res)}

	// Two more runs join the queue behind it and hand off as queued.
	var queued []runState
	for _, code := range []string{"print('second')", "print('third')"} {
		r, _ := s.run("long", code)
		st := structured[runState](t, r)
		if st.Status != "queued" || st.RunID == "" {
			t.Fatalf("run behind a running one: %+v\n%s", st, text(r))
		}
		queued = append(queued, st)
	}
	listed := structured[struct {
		Sessions []struct {
			Run *struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			} `json:"run"`
			QueuedRuns int `json:"queued_runs"`
		} `json:"sessions"`
	}](t, s.call("list_sessions", nil))
	if r := listed.Sessions[0].Run; r == nil || r.RunID != first.RunID || listed.Sessions[0].QueuedRuns != 2 {
		t.Errorf("list_sessions shows run %+v and %d queued, want %s and 2", r, listed.Sessions[0].QueuedRuns, first.RunID)
	}

	final, st := s.waitRunDone("long", first.RunID, &texts)
	out := structured[runOutput](t, final)
	if st.Status != "ok" || out.Result != "'all done'" || final.IsError {
		t.Fatalf("final result: %+v\n%s", out, text(final))
	}
	all := strings.Join(texts, "\n")
	for i := 0; i < 10; i++ {
		if n := len(regexp.MustCompile(fmt.Sprintf(`(?m)^line %d$`, i)).FindAllString(all, -1)); n != 1 {
			t.Errorf("line %d returned %d times across the calls:\n%s", i, n, all)
		}
	}
	for i := 0; i < 10; i++ {
		if !strings.Contains(out.Stdout, fmt.Sprintf("line %d\n", i)) {
			t.Errorf("final structured stdout lacks line %d: %q", i, out.Stdout)
		}
	}
	// The queued runs ran after it, in order.
	var second, third []string
	_, st2 := s.waitRunDone("long", queued[0].RunID, &second)
	_, st3 := s.waitRunDone("long", queued[1].RunID, &third)
	if st2.Stdout != "second\n" || st3.Stdout != "third\n" {
		t.Errorf("queued runs: %+v %+v", st2, st3)
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "long"}))
	if strings.Count(hist, "for i in range(10)") != 1 || !regexp.MustCompile(`(?s)\[1\] import time.*\[2\] print\('second'\).*\[3\] print\('third'\)`).MatchString(hist) {
		t.Errorf("history:\n%s", hist)
	}
}

// Cancelling a call after its run was handed off leaves the run going;
// interrupt_session stops it and the namespace stays. The run's own timeout
// bounds the whole run, hand-off or not.
func TestLongRunCancelInterruptTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "2")
	res, _ := s.run("c", "import time\nkept = 7\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(0.2)", "background", true)
	st := structured[runState](t, res)
	if st.RunID == "" || !st.going() {
		t.Fatalf("background run: %+v\n%s", st, text(res))
	}
	// A wait_run cancelled by its client stops waiting, not the run.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_run", Arguments: map[string]any{"session_id": "c", "run_id": st.RunID, "wait": 2}})
	cancel()
	if err == nil {
		t.Fatal("wait_run outlived its 0.5 s client deadline")
	}
	var texts []string
	s.waitRunUntil("c", st.RunID, "output after a cancelled wait_run", func(p runState) bool {
		return p.Status == "running" && strings.Contains(p.Output, "tick")
	})
	s.call("interrupt_session", map[string]any{"session_id": "c"})
	final, fst := s.waitRunDone("c", st.RunID, &texts)
	if fst.Status != "interrupted" && fst.Status != "error" {
		t.Fatalf("interrupted run: %+v\n%s", fst, text(final))
	}
	if _, out := s.run("c", "kept"); out.Result != "7" {
		t.Fatalf("namespace after interrupt: %+v", out)
	}

	// timeout bounds the run though its call handed it off at 2 s.
	res, _ = s.run("c", "import time\nbefore = 1\ntime.sleep(60)", "timeout", 4)
	st = structured[runState](t, res)
	if st.Status != "running" {
		t.Fatalf("a 4 s timeout with --max-wait 2: %+v", st)
	}
	final, fst = s.waitRunDone("c", st.RunID, &texts)
	if fst.Status != "timeout" || !final.IsError {
		t.Fatalf("run with timeout 4: %+v\n%s", fst, text(final))
	}
	if _, out := s.run("c", "before + kept"); out.Result != "8" {
		t.Fatalf("namespace after the timeout: %+v", out)
	}
}

// Runs belong to the session, not to the connection: a second streamable
// HTTP client waits on the first one's run.
func TestLongRunSecondConnection(t *testing.T) {
	t.Parallel()
	url := startHTTPServer(t, "--max-wait", "2")
	connect := func() *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "conn", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	a := connect()
	res := call(a, "run_code", map[string]any{"session_id": "shared", "code": "import time\ntime.sleep(4)\nprint('from the first connection')\n6 * 7"})
	st := structured[runState](t, res)
	if st.Status != "running" {
		t.Fatalf("first connection's run: %+v", st)
	}
	a.Close()
	b := connect()
	defer b.Close()
	for i := 0; i < 20 && st.going(); i++ {
		res = call(b, "wait_run", map[string]any{"session_id": "shared", "run_id": st.RunID})
		st = structured[runState](t, res)
	}
	out := structured[runOutput](t, res)
	if st.Status != "ok" || out.Result != "42" || !strings.Contains(text(res), "from the first connection") {
		t.Fatalf("second connection's wait_run: %+v\n%s", out, text(res))
	}
}

// input() and getpass() through MCP elicitation, with a client that answers;
// a declined question raises EOFError in the code; a getpass answer is
// nowhere in the outputs or the history.
func TestInputElicitation(t *testing.T) {
	t.Parallel()
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			switch {
			case strings.Contains(req.Params.Message, "Nope?"):
				return &mcp.ElicitResult{Action: "decline"}, nil
			case strings.Contains(req.Params.Message, "getpass()"):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "s3cret-value"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
		},
	})
	s := startServerWith(t, client)
	res, out := s.run("in", "name = input('Name? ')\nprint('hi', name)")
	if out.Status != "ok" || out.Stdout != "hi Ada\n" {
		t.Fatalf("input() through elicitation: %+v\n%s", out, text(res))
	}
	res, out = s.run("in", "import getpass\npw = getpass.getpass('Password: ')\nprint(len(pw))")
	if out.Status != "ok" || out.Stdout != "12\n" || strings.Contains(text(res), "s3cret") {
		t.Fatalf("getpass through elicitation: %+v\n%s", out, text(res))
	}
	res, out = s.run("in", "input('Nope? ')")
	if !res.IsError || out.Error == nil || out.Error.EName != "EOFError" {
		t.Fatalf("declined input(): %+v\n%s", out, text(res))
	}
	if len(asked) != 3 || !strings.Contains(asked[0], "Name?") || !strings.Contains(asked[1], "getpass()") {
		t.Errorf("elicitations: %q", asked)
	}
	for _, tool := range []string{"get_history", "export_history"} {
		args := map[string]any{"session_id": "in"}
		if tool == "export_history" {
			args["path"] = filepath.Join(t.TempDir(), "h.txt")
		}
		r := s.call(tool, args)
		got := text(r)
		if tool == "export_history" {
			b, err := os.ReadFile(args["path"].(string))
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("%s shows the getpass answer:\n%s", tool, got)
		}
	}
}

// send_input waits for the run as wait_run does: a run that asks again
// returns the new prompt, one that ends right after the answer returns its
// final result in the same call, and one still going is handed off.
func TestSendInputWaits(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	asked := func(res *mcp.CallToolResult, prompt string) runState {
		t.Helper()
		st := structured[runState](t, res)
		if st.Status == "running" || st.Status == "queued" {
			st = s.waitRunUntil("si", st.RunID, "input request", func(p runState) bool { return p.Status == "input_requested" })
		}
		if st.Status != "input_requested" || st.Prompt != prompt {
			t.Fatalf("want the prompt %q: %+v\n%s", prompt, st, text(res))
		}
		return st
	}
	res, _ := s.run("si", "a = input('A? ')\nb = input('B? ')\nprint('hello', a, b)")
	st := asked(res, "A? ")
	r := s.call("send_input", map[string]any{"session_id": "si", "run_id": st.RunID, "text": "x"})
	if r.IsError {
		t.Fatalf("send_input: %s", text(r))
	}
	asked(r, "B? ")
	r = s.call("send_input", map[string]any{"session_id": "si", "run_id": st.RunID, "text": "y"})
	fin := structured[runState](t, r)
	if r.IsError || fin.Status != "ok" || fin.Stdout != "hello x y\n" || fin.RunID != st.RunID || !strings.Contains(text(r), "hello x y") || !strings.Contains(text(r), `Answered input() (prompt "B? ")`) {
		t.Fatalf("send_input to a run that ends after the answer: %+v\n%s", fin, text(r))
	}

	// Still going after --max-wait: handed off with its run_id.
	short := startServer(t, "--max-wait", "1")
	res, _ = short.run("go", "input('go? ')\nimport time\nprint('started', flush=True)\ntime.sleep(120)")
	st = structured[runState](t, res)
	if st.Status != "input_requested" {
		st = short.waitRunUntil("go", st.RunID, "input request", func(p runState) bool { return p.Status == "input_requested" })
	}
	r = short.call("send_input", map[string]any{"session_id": "go", "run_id": st.RunID, "text": ""})
	if p := structured[runState](t, r); r.IsError || p.Status != "running" || p.RunID != st.RunID || !strings.Contains(text(r), "wait_run") {
		t.Errorf("send_input to a run that goes on: %+v\n%s", p, text(r))
	}
	short.call("interrupt_session", map[string]any{"session_id": "go"})

	// wait 0 answers only: what the run prints next is left for wait_run.
	res, _ = s.run("w0", "a = input('A? ')\nprint('after', a)")
	st = asked(res, "A? ")
	r = s.call("send_input", map[string]any{"session_id": "w0", "run_id": st.RunID, "text": "z", "wait": 0})
	if r.IsError || r.StructuredContent != nil || !strings.Contains(text(r), "Answered input()") || strings.Contains(text(r), "after z") {
		t.Fatalf("send_input with wait 0: %s", text(r))
	}
	fin = s.waitRunUntil("w0", st.RunID, "the end", func(p runState) bool { return p.Status == "ok" })
	if fin.Stdout != "after z\n" {
		t.Errorf("after send_input with wait 0, wait_run's result: %+v", fin)
	}
	if r := s.call("send_input", map[string]any{"session_id": "w0", "text": "z", "wait": -1}); !r.IsError || !strings.Contains(text(r), "invalid wait -1") {
		t.Errorf("send_input with wait -1: %s", text(r))
	}
}

// Without elicitation, a run asking for input hands off as input_requested
// with the prompt, and send_input answers it. Bad input to the run tools is
// a clear error.
func TestInputSendInput(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "2")
	res, _ := s.run("q", "answer = input('Your name? ')\nprint('hello', answer)")
	st := structured[runState](t, res)
	if st.Status == "running" {
		// The kernel took more than --max-wait to start and ask.
		st = s.waitRunUntil("q", st.RunID, "input request", func(p runState) bool { return p.Status == "input_requested" })
	} else if !strings.Contains(text(res), "send_input") {
		t.Errorf("hand-off for input does not name send_input:\n%s", text(res))
	}
	if st.Status != "input_requested" || st.Prompt != "Your name? " {
		t.Fatalf("input() without elicitation: %+v\n%s", st, text(res))
	}
	r := s.call("wait_run", map[string]any{"session_id": "q", "run_id": st.RunID})
	if p := structured[runState](t, r); p.Status != "input_requested" || p.Prompt != "Your name? " || !strings.Contains(text(r), "send_input") {
		t.Fatalf("wait_run while input is asked: %+v\n%s", p, text(r))
	}
	r = s.call("send_input", map[string]any{"session_id": "q", "run_id": st.RunID, "text": "Grace"})
	if r.IsError {
		t.Fatalf("send_input: %s", text(r))
	}
	var texts []string
	final, fst := s.waitRunDone("q", st.RunID, &texts)
	if fst.Status != "ok" || fst.Stdout != "hello Grace\n" {
		t.Fatalf("after send_input: %+v\n%s", fst, text(final))
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"send_input", map[string]any{"session_id": "q", "run_id": st.RunID, "text": "x"}, "is not waiting for input"},
		{"wait_run", map[string]any{"session_id": "q", "run_id": "r999"}, `no run "r999" in session "q"`},
		{"wait_run", map[string]any{"session_id": "q", "wait": -1}, "invalid wait -1"},
		{"wait_run", map[string]any{"session_id": "nosuch"}, `no session "nosuch"`},
		{"send_input", map[string]any{"session_id": "q", "run_id": "r999", "text": "x"}, `no run "r999"`},
	} {
		r := s.call(tc.tool, tc.args)
		if !r.IsError || !strings.Contains(text(r), tc.want) {
			t.Errorf("%s %v: isError %v, %q; want %q", tc.tool, tc.args, r.IsError, text(r), tc.want)
		}
	}
	// A wait above --max-wait is clamped, and the result says so.
	r = s.call("wait_run", map[string]any{"session_id": "q", "run_id": st.RunID, "wait": 3600})
	if r.IsError || !strings.Contains(text(r), "more than the server's max wait") {
		t.Errorf("wait 3600 with --max-wait 2: %s", text(r))
	}
	// The session went on through all of it.
	if _, out := s.run("q", "answer"); out.Result != "'Grace'" {
		t.Errorf("namespace: %+v", out)
	}
}

// The official TypeScript SDK client at its default 60 s request timeout
// completes a 75 s run through wait_run, with all its output.
func TestLongRunTypeScriptClient(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	script, err := filepath.Abs("testdata/longrun.mjs")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat("node_modules/@modelcontextprotocol/sdk/package.json"); err != nil || serr != nil {
		msg := "node or the TypeScript MCP SDK is missing: run `npm ci` in integration/"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	code := "import time\nfor i in range(15):\n    print('tick', i, flush=True)\n    time.sleep(5)\n'finished'"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, code, binary, "--state-dir", t.TempDir(), "--pool-size", "0")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nstderr:\n%s", err, outb, stderr.String())
	}
	var got struct {
		RunID string   `json:"run_id"`
		Texts []string `json:"texts"`
		Calls []struct {
			Tool   string `json:"tool"`
			MS     int64  `json:"ms"`
			Status string `json:"status"`
		} `json:"calls"`
		Final   runOutput `json:"final"`
		IsError bool      `json:"isError"`
	}
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("client output %q: %v", outb, err)
	}
	t.Logf("MEASURE: TypeScript client calls: %+v", got.Calls)
	if got.IsError || got.Final.Status != "ok" || got.Final.Result != "'finished'" || len(got.Calls) < 2 || got.Calls[0].Status != "running" {
		t.Fatalf("75 s run through the TypeScript client: %+v", got)
	}
	all := strings.Join(got.Texts, "\n")
	for i := 0; i < 15; i++ {
		if n := len(regexp.MustCompile(fmt.Sprintf(`(?m)^tick %d$`, i)).FindAllString(all, -1)); n != 1 {
			t.Errorf("tick %d returned %d times:\n%s", i, n, all)
		}
		if !strings.Contains(got.Final.Stdout, fmt.Sprintf("tick %d\n", i)) {
			t.Errorf("final stdout lacks tick %d", i)
		}
	}
}

// A data-tool query queued behind a run shares one --max-wait with its
// wait for the turn: it does not get a whole max-wait more once its turn
// comes (it gets at least 2 s).
func TestQueryAfterWaitingSharesMaxWait(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "6")
	var texts []string
	res, _ := s.run("q", "import time\nready = 1")
	if st := structured[runState](t, res); st.going() {
		s.waitRunDone("q", st.RunID, &texts) // a slow kernel start
	}
	res, _ = s.run("q", "time.sleep(4)", "background", true)
	if st := structured[runState](t, res); !st.going() {
		t.Fatalf("background run: %+v", st)
	}
	// A run queued behind it keeps the query in line (a read with nothing
	// queued ahead of it would go beside the run, on a subshell).
	s.run("q", "pass", "background", true)
	// The query gets its turn after at least 4 s of the 6, so it may run
	// for 2 s at most; a whole max-wait would let it run for 6.
	res = s.call("get_value", map[string]any{"session_id": "q", "expression": "time.sleep(60) or ready"})
	m := regexp.MustCompile(`stopped after ([0-9.]+)s`).FindStringSubmatch(text(res))
	if !res.IsError || m == nil {
		t.Fatalf("slow query behind a 4 s run with --max-wait 6: %s", text(res))
	}
	// 2 s, or a little more when the run started sleeping a moment before
	// the query's call began; the whole max wait would be 6.
	if ran, _ := strconv.ParseFloat(m[1], 64); ran < 2 || ran > 3 {
		t.Fatalf("the query ran for %v s behind a 4 s run with --max-wait 6, want 2–3: %s", ran, text(res))
	}
	if _, out := s.run("q", "ready + 1"); out.Result != "2" {
		t.Fatalf("namespace after the stopped query: %+v", out)
	}
}

// An elicitation accepted without the answer field gives the code
// nothing: the run goes on waiting for input, and the result says how to
// answer it with send_input.
func TestInputElicitationWithoutAnswer(t *testing.T) {
	t.Parallel()
	client := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil // no content: the SDKs check the schema only of content that is there
		},
	})
	s := startServerWith(t, client)
	res, out := s.run("in", "name = input('Name? ')\nprint('hi', repr(name))")
	if out.Status != "input_requested" || !strings.Contains(text(res), "came without an answer") || !strings.Contains(text(res), `send_input {"session_id": "in", "run_id": "r1"`) || strings.Contains(out.Stdout, "hi") {
		t.Fatalf("an elicitation answer without answer: %+v\n%s", out, text(res))
	}
	res = s.call("send_input", map[string]any{"session_id": "in", "run_id": "r1", "text": "Ada"})
	if out := structured[runOutput](t, res); out.Status != "ok" || out.Stdout != "hi 'Ada'\n" {
		t.Fatalf("send_input after the empty answer: %+v\n%s", out, text(res))
	}
}

// A call queued behind a run that waits for input returns at once, naming
// the question and how to answer it, whether the run asked before the call
// came or while it waited; nothing waits out --max-wait (300 s here, more
// than the client's own 120 s for a call). Reads sent while nothing else
// is queued go beside the run on the kernel's subshell and answer; a read
// queued behind a queued run takes its turn, and so returns at once too.
func TestQueuedBehindInput(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-wait", "300")
	r1 := structured[runState](t, s.call("run_code", map[string]any{"session_id": "qi", "code": "a = input('Name? ')\nprint('hi', a)", "background": true}))
	s.waitRunUntil("qi", r1.RunID, "input request", func(p runState) bool { return p.Status == "input_requested" })
	question := `run r1 called input() with the prompt "Name? "`
	answer := `send_input {"session_id": "qi", "run_id": "r1", "text": "..."}, or stop the run with interrupt_session`
	if res := s.call("get_value", map[string]any{"session_id": "qi", "expression": "1 + 1"}); res.IsError || !strings.Contains(text(res), "Read during run r1") {
		t.Errorf("get_value beside a run waiting for input: %s", text(res))
	}
	res, _ := s.run("qi", "'second'")
	r2 := structured[runState](t, res)
	if r2.Status != "queued" || !strings.Contains(text(res), "It cannot start yet") || !strings.Contains(text(res), question) || !strings.Contains(text(res), answer) {
		t.Errorf("run_code behind a run waiting for input: %+v\n%s", r2, text(res))
	}
	for _, args := range []map[string]any{
		{"expression": "1 + 1"},
		{"tool": "list_variables"},
	} {
		tool := "get_value"
		if t, ok := args["tool"]; ok {
			tool = t.(string)
			delete(args, "tool")
		}
		args["session_id"] = "qi"
		res := s.call(tool, args)
		if !res.IsError || !strings.Contains(text(res), question) || !strings.Contains(text(res), answer) || !strings.Contains(text(res), "nothing was done") {
			t.Errorf("%s behind a run queued behind a run waiting for input: %s", tool, text(res))
		}
	}
	if res := s.call("wait_run", map[string]any{"session_id": "qi", "run_id": r2.RunID}); !strings.Contains(text(res), question) {
		t.Errorf("wait_run of the queued run: %s", text(res))
	}
	s.call("send_input", map[string]any{"session_id": "qi", "run_id": r1.RunID, "text": "Ada"})
	var texts []string
	if _, fin := s.waitRunDone("qi", r2.RunID, &texts); fin.Result != "'second'" {
		t.Errorf("the queued run after the answer: %+v", fin)
	}

	// The call is queued first; the run ahead asks while it waits.
	gate := filepath.Join(t.TempDir(), "gate")
	code := fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.05)\nb = input('Later? ')", gate)
	r3 := structured[runState](t, s.call("run_code", map[string]any{"session_id": "qi", "code": code, "background": true}))
	type called struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan called, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "qi", "code": "'third'"}})
		done <- called{res, err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(text(s.call("session_status", map[string]any{"session_id": "qi"})), "Runs queued: 1") {
		if time.Now().After(deadline) {
			t.Fatal("the second run_code never queued")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := <-done
	if c.err != nil {
		t.Fatalf("run_code queued before the input request: %v", c.err)
	}
	later := fmt.Sprintf(`run %s called input() with the prompt "Later? "`, r3.RunID)
	if st := structured[runState](t, c.res); st.Status != "queued" || !strings.Contains(text(c.res), later) {
		t.Errorf("run_code queued before the input request: %+v\n%s", st, text(c.res))
	}
	s.call("interrupt_session", map[string]any{"session_id": "qi"})
}

// A get_value sent right after send_input, in one batch, finds the
// question answered: send_input keeps its place in line until it has
// answered, so the get_value waits its turn; when it goes beside the run
// still going, it waits in the kernel until input() has returned, and
// reads the answer either way.
func TestSendInputThenGetValue(t *testing.T) {
	t.Parallel()
	c := startRaw(t, "--state-dir", "none")
	for i := range 5 {
		id := 10 * (i + 1)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_code","arguments":{"session_id":"sg","code":"name = input('Name? ')"}}}`, id))
		if b, _ := json.Marshal(c.wait(fmt.Sprint(id))); !strings.Contains(string(b), "input_requested") {
			t.Fatalf("run_code did not hand off its question: %s", b)
		}
		want := fmt.Sprintf("Ada %d", i)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_input","arguments":{"session_id":"sg","text":%q}}}`+"\n"+
			`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_value","arguments":{"session_id":"sg","expression":"name"}}}`, id+1, want, id+2))
		var resp struct {
			Result struct {
				IsError           bool `json:"isError"`
				StructuredContent struct {
					Value any `json:"value"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		b, _ := json.Marshal(c.wait(fmt.Sprint(id + 2)))
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Result.IsError || resp.Result.StructuredContent.Value != want {
			t.Fatalf("get_value sent after send_input: %s", b)
		}
	}
}

// A question out to the user as an elicitation is theirs to answer: a
// run_code sent while the user is being asked waits for the answer, then
// runs, and is never told to answer it with send_input.
func TestInputElicitationQueued(t *testing.T) {
	t.Parallel()
	var s *server
	second := make(chan *mcp.CallToolResult, 1)
	var early string
	client := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "eq", "code": "'second'"}})
				if err != nil {
					res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
				}
				second <- res
			}()
			// While the user is asked, the run_code waits behind the question.
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(text(s.call("session_status", map[string]any{"session_id": "eq"})), "Runs queued: 1") {
				select {
				case res := <-second:
					early = text(res)
					second <- res
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
				default:
				}
				if time.Now().After(deadline) {
					early = "the run_code never queued"
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}, nil
		},
	})
	s = startServerWith(t, client, "--max-wait", "120")
	res, out := s.run("eq", "name = input('Name? ')\nprint('hi', name)")
	if out.Status != "ok" || out.Stdout != "hi Ada\n" {
		t.Fatalf("input() through elicitation: %+v\n%s", out, text(res))
	}
	if early != "" {
		t.Fatalf("run_code sent while the user was asked returned before the answer: %s", early)
	}
	res = <-second
	if got := structured[runOutput](t, res); got.Status != "ok" || got.Result != "'second'" || strings.Contains(text(res), "send_input") {
		t.Errorf("run_code sent while the user was asked: %+v\n%s", got, text(res))
	}
}
