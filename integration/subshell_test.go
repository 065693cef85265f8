//go:build unix

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readNote is the part of a read's structured content that says how it met
// a run in progress.
type readNote struct {
	DuringRun string `json:"during_run"`
	ReadNote  string `json:"read_note"`
}

type valueRead struct {
	readNote
	Value any `json:"value"`
}

// startBackground hands a run off at once and waits until it has printed
// "started", so that it is executing when the test goes on.
func (s *server) startBackground(session, code string) string {
	s.t.Helper()
	res, _ := s.run(session, "print('started', flush=True)\n"+code, "background", true)
	st := structured[runState](s.t, res)
	if st.RunID == "" || !st.going() {
		s.t.Fatalf("background run: %+v\n%s", st, text(res))
	}
	seen := st.Output
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(seen, "started"); {
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s printed no \"started\" in 60 s: %q", st.RunID, seen)
		}
		p := structured[runState](s.t, s.call("wait_run", map[string]any{"session_id": session, "run_id": st.RunID, "wait": 0.5}))
		if !p.going() {
			s.t.Fatalf("run %s ended (%s) before it printed \"started\": %q", st.RunID, p.Status, seen+p.Output)
		}
		seen += p.Output
	}
	return st.RunID
}

// getValue calls get_value and decodes it; a tool error fails t.
func (s *server) getValue(session, expr string) (valueRead, string) {
	s.t.Helper()
	res := s.call("get_value", map[string]any{"session_id": session, "expression": expr})
	if res.IsError {
		s.t.Fatalf("get_value(%s): %s", expr, text(res))
	}
	return structured[valueRead](s.t, res), text(res)
}

func intOf(t testing.TB, v any) int {
	t.Helper()
	n, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("value %v is not an integer", v)
	}
	return n
}

// subshellCount is how many subshells the session's kernel has, asked of
// ipykernel's subshell manager (what list_subshell_request answers).
func (s *server) subshellCount(session string) int {
	s.t.Helper()
	_, out := s.run(session, "len(get_ipython().kernel.shell_channel_thread.manager.list_subshell())")
	if out.Status != "ok" {
		s.t.Fatalf("listing subshells: %+v", out)
	}
	return intOf(s.t, out.Result)
}

// TestSubshellReadsDuringRun: while a 20 s loop runs, get_value,
// list_variables, inspect, complete and session_status answer at once, on
// the session's subshell, and say so; the run keeps all its output, its
// history entry and its execution count.
func TestSubshellReadsDuringRun(t *testing.T) {
	s := startServer(t)
	runID := s.startBackground("r", "import time\nlosses = []\nfor i in range(20):\n    losses.append(1.0 / (i + 1))\n    print('step', i, flush=True)\n    time.sleep(1)")

	first, txt := s.getValue("r", "len(losses)")
	n1 := intOf(t, first.Value)
	if first.DuringRun != runID || n1 < 1 || n1 > 20 {
		t.Fatalf("first read: %+v\n%s", first, txt)
	}
	if !strings.Contains(txt, "Read during run "+runID) || !strings.Contains(txt, "values may change") {
		t.Errorf("get_value's text does not say it was read during the run:\n%s", txt)
	}
	// Later, a larger one: poll until the loop has moved on.
	var n2 int
	for deadline := time.Now().Add(15 * time.Second); n2 <= n1; {
		if time.Now().After(deadline) {
			t.Fatalf("len(losses) stayed %d", n1)
		}
		v, _ := s.getValue("r", "len(losses)")
		if v.DuringRun != runID {
			t.Fatalf("read after the run ended (%d steps seen): %+v", n2, v)
		}
		n2 = intOf(t, v.Value)
	}
	if n2 >= 20 {
		t.Fatalf("the second read came after the loop's end: %d", n2)
	}

	lv := s.call("list_variables", map[string]any{"session_id": "r"})
	vars := structured[struct {
		readNote
		Variables []struct {
			Name string `json:"name"`
		} `json:"variables"`
	}](t, lv)
	found := false
	for _, v := range vars.Variables {
		found = found || v.Name == "losses"
	}
	if !found || vars.DuringRun != runID {
		t.Errorf("list_variables during the run: %+v\n%s", vars, text(lv))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"inspect", map[string]any{"session_id": "r", "code": "losses"}},
		{"complete", map[string]any{"session_id": "r", "code": "loss"}},
		{"session_status", map[string]any{"session_id": "r"}},
	} {
		res := s.call(c.tool, c.args)
		if rn := structured[readNote](t, res); res.IsError || rn.DuringRun != runID {
			t.Errorf("%s during the run: %+v\n%s", c.tool, rn, text(res))
		}
		if c.tool == "complete" && !strings.Contains(text(res), "losses") {
			t.Errorf("complete: %s", text(res))
		}
		if c.tool == "session_status" && !strings.Contains(text(res), "Interpreter:") {
			t.Errorf("session_status did not probe beside the run:\n%s", text(res))
		}
	}

	var texts []string
	finRes, fin := s.waitRunDone("r", runID, &texts)
	if fin.Status != "ok" {
		t.Fatalf("run: %+v", fin)
	}
	var want strings.Builder
	want.WriteString("started\n")
	for i := range 20 {
		fmt.Fprintf(&want, "step %d\n", i)
	}
	if fin.Stdout != want.String() {
		t.Errorf("run stdout:\n%q\nwant\n%q", fin.Stdout, want.String())
	}
	// One history entry, execution count 1: the reads took none.
	if ec := structured[runOutput](t, finRes).ExecutionCount; ec != 1 {
		t.Errorf("the run's execution count is %d, want 1", ec)
	}
	hist := structured[struct {
		Total int `json:"total"`
	}](t, s.call("get_history", map[string]any{"session_id": "r"}))
	if hist.Total != 1 {
		t.Errorf("history after the run has %d entries, want 1", hist.Total)
	}
	if _, out := s.run("r", "2 + 2"); out.ExecutionCount != 2 {
		t.Errorf("the next run has execution count %d, want 2", out.ExecutionCount)
	}
}

// TestSubshellOutputNotMixed: 200 reads during a run that streams numbered
// lines: the run's stdout is exactly the sequence, and no read's output
// (each read prints) reaches it.
func TestSubshellOutputNotMixed(t *testing.T) {
	s := startServer(t, "--output-limit", "1000000")
	stop := filepath.Join(t.TempDir(), "stop")
	runID := s.startBackground("m", fmt.Sprintf("import os, time\ni = 0\nwhile not os.path.exists(%q):\n    print(i, flush=True)\n    i += 1\n    time.sleep(0.002)", stop))
	last := -1
	for k := range 200 {
		v, txt := s.getValue("m", fmt.Sprintf("(print('read %d', flush=True), i)[1]", k))
		if v.DuringRun != runID {
			t.Fatalf("read %d not beside the run: %+v\n%s", k, v, txt)
		}
		n := intOf(t, v.Value)
		if n < last {
			t.Fatalf("read %d: i went back from %d to %d", k, last, n)
		}
		last = n
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	_, fin := s.waitRunDone("m", runID, &texts)
	if fin.Status != "ok" {
		t.Fatalf("run: %+v", fin)
	}
	lines := strings.Split(strings.TrimSuffix(fin.Stdout, "\n"), "\n")
	if lines[0] != "started" {
		t.Fatalf("stdout starts %q", lines[0])
	}
	for j, l := range lines[1:] {
		if l != strconv.Itoa(j) {
			t.Fatalf("stdout line %d is %q, want %d: output lost, repeated or foreign", j+2, l, j)
		}
	}
	// The loop prints i, then adds 1: a read that saw i = n came after
	// lines 0 to n-1 were printed, so at least n lines were.
	if len(lines)-1 < last {
		t.Fatalf("the run printed %d lines, but a read saw i = %d", len(lines)-1, last)
	}
}

// TestSubshellLeavesFiguresAlone: reads beside a run that is drawing with
// the inline backend neither flush nor close its figure (IPython's
// post_execute hooks never run for them), and import no matplotlib.
func TestSubshellLeavesFiguresAlone(t *testing.T) {
	requirePython(t, "matplotlib")
	s := startServer(t)
	if _, out := s.run("f", "import sys\n'matplotlib' in sys.modules"); out.Result != "False" {
		t.Fatalf("matplotlib loaded before any plot: %+v", out)
	}
	// A session with no matplotlib: the reads must not load it.
	stop0 := filepath.Join(t.TempDir(), "stop")
	runID := s.startBackground("f", fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.01)", stop0))
	for _, tool := range []string{"get_value", "list_variables", "session_status"} {
		args := map[string]any{"session_id": "f"}
		if tool == "get_value" {
			args["expression"] = "1"
		}
		res := s.call(tool, args)
		if rn := structured[readNote](t, res); res.IsError || rn.DuringRun != runID {
			t.Fatalf("%s: %+v\n%s", tool, rn, text(res))
		}
	}
	if err := os.WriteFile(stop0, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	s.waitRunDone("f", runID, &texts)
	if _, out := s.run("f", "'matplotlib' in sys.modules"); out.Result != "False" {
		t.Errorf("a read beside the run imported matplotlib")
	}
	stop := filepath.Join(t.TempDir(), "stop")
	runID = s.startBackground("f", fmt.Sprintf("%%matplotlib inline\nimport os, time\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\ndrawn = True\nwhile not os.path.exists(%q):\n    time.sleep(0.01)", stop))
	for deadline := time.Now().Add(60 * time.Second); ; {
		if v, _ := s.getValue("f", "globals().get('drawn', False)"); v.Value == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not draw in 60 s")
		}
	}
	for range 3 {
		if v, txt := s.getValue("f", "len(plt.get_fignums())"); v.DuringRun != runID || intOf(t, v.Value) != 1 {
			t.Fatalf("read beside the drawing run: %+v\n%s", v, txt)
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, fin := s.waitRunDone("f", runID, &texts)
	if imgs, _ := imageParts(res); fin.Status != "ok" || len(imgs) != 1 {
		t.Errorf("the drawing run ended %s with %d images, want its one figure:\n%s", fin.Status, len(imgs), text(res))
	}
}

// TestSubshellSlowRead: a read whose own expression is slow says so after
// its bound, and goes on in the kernel; the next read waits for it.
func TestSubshellSlowRead(t *testing.T) {
	s := startServer(t)
	s.run("s", "import time")
	runID := s.startBackground("s", "time.sleep(30)")
	res := s.call("get_value", map[string]any{"session_id": "s", "expression": "time.sleep(7) or 1"})
	if !res.IsError || !strings.Contains(text(res), "the expression itself is slow") || !strings.Contains(text(res), runID) {
		t.Fatalf("slow read: %s", text(res))
	}
	if v, txt := s.getValue("s", "2"); v.DuringRun != runID || intOf(t, v.Value) != 2 {
		t.Fatalf("the read after the slow one: %+v\n%s", v, txt)
	}
	s.call("interrupt_session", map[string]any{"session_id": "s"})
}

// TestSubshellIPyKernel6: a kernel without subshells keeps today's
// behaviour: a read waits for the run, and says why.
func TestSubshellIPyKernel6(t *testing.T) {
	py := ipytest.IPyKernel6(t)
	s := startServer(t, "--python", py, "--pool-size", "0")
	s.run("six", "x = 1")
	// The read must reach the server while the run goes on, and it waits
	// for the run's end, so no stop file can end the run after it: the
	// run lasts far longer than sending one call takes.
	runID := s.startBackground("six", "import time\ntime.sleep(10)\nx = 2")
	v, txt := s.getValue("six", "x")
	if v.DuringRun != "" || intOf(t, v.Value) != 2 {
		t.Fatalf("read on ipykernel 6: %+v\n%s", v, txt)
	}
	want := "Waited for run " + runID + " to end: this kernel has no subshells"
	if !strings.HasPrefix(v.ReadNote, want) || !strings.HasPrefix(txt, want) {
		t.Errorf("the read does not say why it waited: %q\n%s", v.ReadNote, txt)
	}
}

// TestSubshellGatewayRead: through Jupyter Kernel Gateway, which passes
// subshell messages on, a read during a run goes beside it.
func TestSubshellGatewayRead(t *testing.T) {
	gw := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	s := startServer(t, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0")
	s.run("gw", "n = 0")
	stop := "/tmp/kmcp-subshell-gw-" + strconv.Itoa(os.Getpid())
	os.Remove(stop)
	t.Cleanup(func() { os.Remove(stop) })
	runID := s.startBackground("gw", fmt.Sprintf("import os, time\nfor n in range(1, 600):\n    if os.path.exists(%q):\n        break\n    time.sleep(0.05)", stop))
	// Kernel Gateway passes subshell messages on (kernel's
	// TestSubshellGateway): the read goes beside the run.
	v, txt := s.getValue("gw", "n")
	if v.DuringRun != runID {
		t.Fatalf("read through Kernel Gateway did not go beside the run: %+v\n%s", v, txt)
	}
	if n := intOf(t, v.Value); n < 1 || n >= 599 {
		t.Errorf("read beside the run gave n = %d", n)
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	if _, fin := s.waitRunDone("gw", runID, &texts); fin.Status != "ok" {
		t.Fatalf("run: %+v", fin)
	}
}

// TestSubshellGIL: a run that holds the GIL in C (a catastrophic regular
// expression) stalls the kernel's threads. A read gives up within its bound
// and says why, also the first one, which has to create the subshell; a
// second one does not pile up behind the first; one pending when
// interrupt_session stops the run gets its value; the session is intact.
func TestSubshellGIL(t *testing.T) {
	s := startServer(t)
	// The run says it has started by a file: output would not get out,
	// since ipykernel's iopub thread needs the GIL too.
	dir := t.TempDir()
	round := 0
	startRegex := func() string {
		t.Helper()
		round++
		mark := filepath.Join(dir, strconv.Itoa(round))
		res, _ := s.run("g", fmt.Sprintf("import re\nopen(%q, 'w').close()\nre.match(r'(a+)+$', 'a' * 32 + 'b')", mark), "background", true)
		st := structured[runState](t, res)
		for deadline := time.Now().Add(60 * time.Second); ; {
			if _, err := os.Stat(mark); err == nil {
				return st.RunID
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not start: %s", st.RunID, text(res))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stalled := func(runID, want string) {
		t.Helper()
		t0 := time.Now()
		res := s.call("get_value", map[string]any{"session_id": "g", "expression": "1"})
		if !res.IsError || !strings.Contains(text(res), want) || !strings.Contains(text(res), "native code") || !strings.Contains(text(res), runID) {
			t.Fatalf("read while the GIL is held: %s", text(res))
		}
		t.Logf("answered in %v: %s", time.Since(t0).Round(time.Millisecond), text(res))
	}
	interrupt := func(runID string) {
		t.Helper()
		if res := s.call("interrupt_session", map[string]any{"session_id": "g"}); res.IsError {
			t.Fatalf("interrupt_session: %s", text(res))
		}
		var texts []string
		if _, fin := s.waitRunDone("g", runID, &texts); fin.Status != "interrupted" && fin.Status != "error" {
			t.Errorf("run after interrupt_session: %+v", fin)
		}
	}

	// No subshell yet: creating one is what stalls.
	runID := startRegex()
	stalled(runID, "did not answer create_subshell_request")
	interrupt(runID)

	runID = startRegex()
	stalled(runID, "did not answer within")
	stalled(runID, "still busy with an earlier read")
	var (
		wg      sync.WaitGroup
		pending *mcp.CallToolResult
	)
	wg.Go(func() { pending = s.call("get_value", map[string]any{"session_id": "g", "expression": "6 * 7"}) })
	interrupt(runID)
	wg.Wait()
	if pending.IsError || !strings.Contains(text(pending), "42") {
		t.Errorf("the read pending at the interrupt: %s", text(pending))
	}
	if _, out := s.run("g", "x = 5\nx * 2"); out.Status != "ok" || out.Result != "10" {
		t.Errorf("the session after: %+v", out)
	}
	if v, _ := s.getValue("g", "x"); intOf(t, v.Value) != 5 {
		t.Errorf("get_value after: %+v", v)
	}
}

// TestSubshellCleanup: one subshell per session, created on the first read
// during a run; a reset takes it with the kernel, and the next read during
// a run makes one again.
func TestSubshellCleanup(t *testing.T) {
	s := startServer(t)
	if n := s.subshellCount("c"); n != 0 {
		t.Fatalf("subshells before any read: %d", n)
	}
	for round := range 2 {
		stop := filepath.Join(t.TempDir(), "stop")
		runID := s.startBackground("c", fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.01)", stop))
		for range 3 {
			if v, txt := s.getValue("c", "1"); v.DuringRun != runID {
				t.Fatalf("round %d: %+v\n%s", round, v, txt)
			}
		}
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var texts []string
		s.waitRunDone("c", runID, &texts)
		if n := s.subshellCount("c"); n != 1 {
			t.Fatalf("round %d: %d subshells after three reads, want 1", round, n)
		}
		if res := s.call("reset_session", map[string]any{"session_id": "c"}); res.IsError {
			t.Fatalf("reset_session: %s", text(res))
		}
		if n := s.subshellCount("c"); n != 0 {
			t.Fatalf("round %d: %d subshells after reset_session", round, n)
		}
	}
}

// TestSubshellRunThreadOutput: reads beside a run leave it the output of
// the threads it starts and of its subprocesses (os.system writes to the
// process's file descriptor, which ipykernel's watcher thread forwards):
// the run's stdout is complete, and session_status's probe beside it
// still reads its own output alone.
func TestSubshellRunThreadOutput(t *testing.T) {
	s := startServer(t, "--output-limit", "1000000")
	dir := t.TempDir()
	half, stop := filepath.Join(dir, "half"), filepath.Join(dir, "stop")
	runID := s.startBackground("th", fmt.Sprintf(`import os, threading, time
ticks = 0
def tick():
    global ticks
    while not os.path.exists(%[2]q):
        print("thread", ticks, flush=True)
        ticks += 1
        time.sleep(0.005)
    print("thread end", flush=True)
t = threading.Thread(target=tick)
t.start()
while not os.path.exists(%[1]q):
    time.sleep(0.005)
os.system("echo fd-level")
fd_done = True
t.join()
print("main end", flush=True)`, half, stop))
	read := func(expr string) valueRead {
		v, txt := s.getValue("th", expr)
		if v.DuringRun != runID {
			t.Fatalf("get_value(%s) not beside the run: %+v\n%s", expr, v, txt)
		}
		return v
	}
	status := func() {
		res := s.call("session_status", map[string]any{"session_id": "th"})
		if rn := structured[readNote](t, res); res.IsError || rn.DuringRun != runID || !strings.Contains(text(res), "Interpreter:") {
			t.Fatalf("session_status beside the run: %+v\n%s", rn, text(res))
		}
	}
	for range 20 {
		read("ticks")
		status()
	}
	if err := os.WriteFile(half, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); read("globals().get('fd_done', False)").Value != true; {
		if time.Now().After(deadline) {
			t.Fatal("the run did not reach os.system in 60 s")
		}
		status()
	}
	n := intOf(t, read("ticks").Value)
	for range 5 {
		status()
	}
	for deadline := time.Now().Add(60 * time.Second); intOf(t, read("ticks").Value) < n+5; {
		if time.Now().After(deadline) {
			t.Fatal("the run's thread stopped ticking")
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	_, fin := s.waitRunDone("th", runID, &texts)
	if fin.Status != "ok" {
		t.Fatalf("run: %+v", fin)
	}
	var thread []string
	other := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(fin.Stdout, "\n"), "\n") {
		if strings.HasPrefix(l, "thread ") && l != "thread end" {
			thread = append(thread, l)
		} else {
			other[l] = true
		}
	}
	// The thread's lines come in order and none twice. A line written at
	// the instant a read sets its parent can still go to the read (seen
	// once in ~300 lines, a known limit in docs/long-runs.md); without the
	// set_parent wrapper every line after the first read goes, and the
	// probes above do not parse.
	last, lost := -1, 0
	for _, l := range thread {
		j, err := strconv.Atoi(strings.TrimPrefix(l, "thread "))
		if err != nil || j <= last {
			t.Fatalf("the thread's line %q after %d: out of order or repeated\n%s", l, last, fin.Stdout)
		}
		lost += j - last - 1
		last = j
	}
	if lost > 2 {
		t.Fatalf("%d of the thread's %d lines went to reads\n%s", lost, last+1, fin.Stdout)
	} else if lost > 0 {
		t.Logf("%d of the thread's %d lines went to a read", lost, last+1)
	}
	if len(thread) <= n+5 {
		t.Errorf("the run's stdout has %d lines from its thread, but a read saw %d ticks", len(thread), n+5)
	}
	for _, l := range []string{"started", "fd-level", "thread end", "main end"} {
		if !other[l] {
			t.Errorf("the run's stdout lacks %q:\n%s", l, fin.Stdout)
		}
	}
}

// TestSubshellGone: when the kernel no longer has the session's subshell
// (whoever owns the kernel deleted it), a read says so, and the next read
// makes a new one and goes beside the run.
func TestSubshellGone(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	background := func(name string) (string, string) {
		stop := filepath.Join(dir, name)
		return s.startBackground("x", fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.01)", stop)), stop
	}
	end := func(runID, stop string) {
		t.Helper()
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var texts []string
		if _, fin := s.waitRunDone("x", runID, &texts); fin.Status != "ok" {
			t.Fatalf("run: %+v", fin)
		}
	}
	runID, stop := background("1")
	if v, txt := s.getValue("x", "1"); v.DuringRun != runID {
		t.Fatalf("first read: %+v\n%s", v, txt)
	}
	end(runID, stop)
	// Delete it the way delete_subshell_request does, on ipykernel's
	// shell channel thread.
	_, out := s.run("x", `import threading
_k = get_ipython().kernel
_m = _k.shell_channel_thread.manager
_gone = threading.Event()
def _drop():
    for i in _m.list_subshell():
        _m._delete_subshell(i)
    _gone.set()
_k.shell_channel_thread.io_loop.add_callback(_drop)
_gone.wait(30) and len(_m.list_subshell())`)
	if out.Status != "ok" || out.Result != "0" {
		t.Fatalf("deleting the subshell: %+v", out)
	}
	runID, stop = background("2")
	res := s.call("get_value", map[string]any{"session_id": "x", "expression": "1"})
	if !res.IsError || !strings.Contains(text(res), "no longer has the session's subshell") {
		t.Fatalf("read on the deleted subshell: %s", text(res))
	}
	if v, txt := s.getValue("x", "2"); v.DuringRun != runID || intOf(t, v.Value) != 2 {
		t.Fatalf("read after: %+v\n%s", v, txt)
	}
	end(runID, stop)
	if n := s.subshellCount("x"); n != 1 {
		t.Errorf("%d subshells, want 1", n)
	}
}
