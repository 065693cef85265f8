//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The usage walk of python-repl-mcp (seed 002), step by step.
func TestSeedHistoryWalk(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	utils := filepath.Join(dir, "utils.py")
	if err := os.WriteFile(utils, []byte("def double(x):\n    return 2 * x\nprint('Loaded 1 utility function.')\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if res := s.call("create_session", map[string]any{"session_id": "demo", "cwd": dir}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("demo", "import math\nresult = math.sqrt(144)\nresult"); out.Result != "12.0" {
		t.Fatalf("step 2: %+v", out)
	}
	if _, out := s.run("demo", "result + 1"); out.Result != "13.0" {
		t.Fatalf("step 3: %+v", out)
	}
	if out := structured[runOutput](t, s.call("run_file", map[string]any{"session_id": "demo", "path": "utils.py"})); out.Stdout != "Loaded 1 utility function.\n" {
		t.Fatalf("step 4: %+v", out)
	}

	whole := text(s.call("get_history", map[string]any{"session_id": "demo"}))
	wantWhole := "[1] import math\n    result = math.sqrt(144)\n    result\n12.0\n\n[2] result + 1\n13.0\n\n[3] def double(x):\n        return 2 * x\n    print('Loaded 1 utility function.')\nLoaded 1 utility function."
	if strings.TrimSpace(whole) != wantWhole {
		t.Fatalf("step 5, get_history:\n%s\nwant:\n%s", whole, wantWhole)
	}
	last := text(s.call("get_history", map[string]any{"session_id": "demo", "start": -1}))
	if !strings.HasPrefix(last, "[3] def double(x):") || strings.Contains(last, "[2]") {
		t.Fatalf("step 6, start=-1:\n%s", last)
	}

	res := s.call("export_history", map[string]any{"session_id": "demo", "path": "out/history.txt"})
	exported := filepath.Join(dir, "out", "history.txt")
	if res.IsError || !strings.Contains(text(res), exported) {
		t.Fatalf("step 7: %s", text(res))
	}
	if b, err := os.ReadFile(exported); err != nil || strings.TrimSpace(string(b)) != wantWhole {
		t.Fatalf("exported transcript: %v\n%s", err, b)
	}

	res = s.call("save_script", map[string]any{"session_id": "demo", "path": "demo.py"})
	script := filepath.Join(dir, "demo.py")
	if res.IsError || !strings.Contains(text(res), script) {
		t.Fatalf("step 8: %s", text(res))
	}
	out, err := exec.Command("python3", script).CombinedOutput()
	if err != nil || string(out) != "Loaded 1 utility function.\n" {
		t.Fatalf("the saved script does not run as plain python: %v\n%s", err, out)
	}

	if res := s.call("reset_run_context", map[string]any{"session_id": "demo"}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("demo", "result"); out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("step 9: namespace survived: %+v", out)
	}
	if !strings.Contains(text(s.call("get_history", map[string]any{"session_id": "demo"})), "--- kernel restarted") {
		t.Fatal("the transcript does not mark the restart")
	}
	if res := s.call("delete_session", map[string]any{"session_id": "demo"}); res.IsError {
		t.Fatal(text(res))
	}
	if res := s.call("get_history", map[string]any{"session_id": "demo"}); !res.IsError {
		t.Fatalf("history of a deleted session: %s", text(res))
	}
}

func TestHistorySlicesAndDelete(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []string{"a = 0", "a += 1", "a += 10", "a += 100", "a"} {
		s.run("sl", c)
	}
	type hist struct {
		Total, First, Count int
		Transcript          string
	}
	get := func(args map[string]any) hist {
		args["session_id"] = "sl"
		return structured[hist](t, s.call("get_history", args))
	}
	if h := get(map[string]any{"start": 1, "end": -1}); h.First != 2 || h.Count != 3 || !strings.HasPrefix(h.Transcript, "[2] a += 1") {
		t.Fatalf("[1:-1]: %+v", h)
	}
	if h := get(map[string]any{"start": -2}); h.First != 4 || h.Count != 2 {
		t.Fatalf("[-2:]: %+v", h)
	}
	if h := get(map[string]any{"start": 10}); h.Count != 0 || h.Total != 5 {
		t.Fatalf("[10:]: %+v", h)
	}

	// Re-run [1:4) in the live kernel: a grows by 111 again.
	res := s.call("run_code", map[string]any{"session_id": "sl", "start": 1, "end": 4})
	if res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s.run("sl", "a"); out.Result != "222" {
		t.Fatalf("after re-running [1:4): %+v", out)
	}

	if res := s.call("delete_history", map[string]any{"session_id": "sl", "start": 0}); res.IsError {
		t.Fatal(text(res))
	}
	if h := get(map[string]any{}); h.Total != 8 || !strings.HasPrefix(h.Transcript, "[1] a += 1") {
		t.Fatalf("after deleting block 0: %+v", h)
	}
	if res := s.call("delete_history", map[string]any{"session_id": "sl", "start": -3, "end": 100}); res.IsError {
		t.Fatal(text(res))
	}
	if h := get(map[string]any{}); h.Total != 5 {
		t.Fatalf("after deleting [-3:]: %+v", h)
	}
	if res := s.call("delete_history", map[string]any{"session_id": "sl", "start": 99}); !res.IsError || !strings.Contains(text(res), "no block at index 99") {
		t.Fatalf("deleting a missing block: %s", text(res))
	}
	if res := s.call("delete_history", map[string]any{"session_id": "sl"}); !res.IsError || !strings.Contains(text(res), "start") {
		t.Fatalf("delete_history without start: %s", text(res))
	}
}

func TestRerunRestoresState(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("re", "import math")
	s.run("re", "x = math.pi * 2")
	s.run("re", "this_fails")
	s.run("re", "y = x + 1")
	if res := s.call("reset_run_context", map[string]any{"session_id": "re"}); res.IsError {
		t.Fatal(text(res))
	}
	res := s.call("rerun_code", map[string]any{"session_id": "re", "end": 2})
	if res.IsError || !strings.Contains(text(res), "Re-ran 2 block(s)") {
		t.Fatalf("rerun_code [:2]: %s", text(res))
	}
	if _, out := s.run("re", "round(x, 4)"); out.Result != "6.2832" {
		t.Fatalf("x not restored: %+v", out)
	}
	// Re-running everything stops at the failing block and says which.
	res = s.call("rerun_code", map[string]any{"session_id": "re"})
	out := structured[runOutput](t, res)
	if !res.IsError || !strings.HasPrefix(text(res), "Stopped at block [3]: NameError on line 1: name 'this_fails' is not defined") {
		t.Fatalf("rerun stopping at the error: %s", text(res))
	}
	if out.Status != "error" || out.Error == nil {
		t.Fatalf("structured: %+v", out)
	}
}

func TestNotebookIsValidWithPlot(t *testing.T) {
	t.Parallel()
	requirePython(t, "nbformat", "matplotlib")
	s := startServer(t)
	s.run("nb", "print('hello')")
	s.run("nb", "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
	s.run("nb", "1/0")
	path := filepath.Join(t.TempDir(), "deep", "er", "analysis.ipynb")
	res := s.call("save_notebook", map[string]any{"session_id": "nb", "path": path})
	if res.IsError {
		t.Fatal(text(res))
	}
	check := `import nbformat, sys
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
outs = [o for c in nb.cells for o in c.outputs]
assert any("image/png" in o.get("data", {}) for o in outs), "no plot"
assert any(o.output_type == "error" and o.ename == "ZeroDivisionError" for o in outs), "no error"
print(len(nb.cells))`
	out, err := exec.Command("python3", "-c", check, path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "3" {
		t.Fatalf("nbformat says: %v\n%s", err, out)
	}
}

func TestHistoryResourceAndSubscription(t *testing.T) {
	t.Parallel()
	updated := make(chan string, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	})
	s := startServerWith(t, client)

	s.run("res", "v = 41\nv + 1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := s.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != "session://res/history" {
		t.Fatalf("listed resources: %+v", list.Resources)
	}
	tmpls, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, tm := range tmpls.ResourceTemplates {
		uris = append(uris, tm.URITemplate)
	}
	slices.Sort(uris)
	if !slices.Equal(uris, []string{"session://{session_id}/history", "session://{session_id}/outputs/{n}"}) {
		t.Fatalf("templates: %v", uris)
	}
	rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://res/history"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Contents[0].Text; got != "[1] v = 41\n    v + 1\n42\n" && strings.TrimSpace(got) != "[1] v = 41\n    v + 1\n42" {
		t.Fatalf("resource text %q", got)
	}
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://nope/history"}); err == nil {
		t.Fatal("reading an unknown session's history succeeded")
	}

	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "session://res/history"}); err != nil {
		t.Fatal(err)
	}
	s.run("res", "v")
	select {
	case uri := <-updated:
		if uri != "session://res/history" {
			t.Fatalf("update for %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated notification after run_code")
	}
}

// History survives the server being killed with SIGKILL: a new server on
// the same state dir restores the session as stopped, with every block.
func TestHistorySurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	s.run("kept", "a = 1")
	s.run("kept", "print('two')")
	s.run("kept", "a + 2")
	pid := s.pidOf("kept")
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.close() // reaps the killed server
	if !waitGone(t, pid, 2*time.Second) {
		t.Fatalf("kernel %d outlived its SIGKILLed server", pid)
	}

	s2 := startServer(t, "--state-dir", state)
	rows := s2.sessions()
	if len(rows) != 1 || rows[0].SessionID != "kept" || rows[0].State != "stopped" || rows[0].HistoryCount != 3 {
		t.Fatalf("restored sessions: %+v", rows)
	}
	want := "[1] a = 1\n\n[2] print('two')\ntwo\n\n[3] a + 2\n3"
	if got := strings.TrimSpace(text(s2.call("get_history", map[string]any{"session_id": "kept"}))); got != want {
		t.Fatalf("restored history:\n%s\nwant:\n%s", got, want)
	}
	// The first run starts a kernel; rerun_code rebuilds the state.
	res := s2.call("rerun_code", map[string]any{"session_id": "kept", "end": 1})
	if res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s2.run("kept", "a"); out.Result != "1" {
		t.Fatalf("after rerun: %+v", out)
	}
	var files []string
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, state))
		}
		return nil
	})
	// The history, and the run numbers reserved for the session (so that a
	// crash never gives a run's id again), nothing else.
	if strings.Join(files, ",") != "/run-ids.json,/sessions/kept.jsonl" {
		t.Fatalf("state dir holds %v", files)
	}
	var reserved map[string]int
	if b, err := os.ReadFile(filepath.Join(state, "run-ids.json")); err != nil || json.Unmarshal(b, &reserved) != nil || reserved["kept"] < 2 {
		t.Fatalf("run-ids.json: %v %v", reserved, err)
	}
	b, _ := os.ReadFile(filepath.Join(state, "sessions", "kept.jsonl"))
	var first map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &first); err != nil || first["meta"] == nil {
		t.Fatalf("history file does not start with its meta record: %v %s", err, b)
	}
}

// SIGTERM while a block runs: the server shuts every kernel down and exits,
// the blocks that finished are on disk for the next server, and so is the
// run cut short, as interrupted with the output it had.
func TestSIGTERMDuringRunKeepsHistory(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	s.run("term", "done = 1")
	s.run("term", "print('finished block')")
	pid := s.pidOf("term")
	running := make(chan struct{})
	go func() {
		defer close(running)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"session_id": "term", "code": "import time\nprint('cut short', flush=True)\nwhile True:\n    time.sleep(0.05)"}})
	}()
	waitState(t, s, "term", "busy")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !waitGone(t, s.cmd.Process.Pid, 30*time.Second) {
		t.Fatal("server still running 30 s after SIGTERM during a run")
	}
	elapsed := time.Since(start)
	s.close()
	<-running
	t.Logf("MEASURE: server stopped %v after SIGTERM during a run", elapsed)
	if elapsed > 15*time.Second {
		t.Fatalf("server took %v to stop on SIGTERM during a run", elapsed)
	}
	if !waitGone(t, pid, 5*time.Second) {
		t.Fatalf("kernel %d outlived the server", pid)
	}
	s2 := startServer(t, "--state-dir", state)
	got := text(s2.call("get_history", map[string]any{"session_id": "term"}))
	if !strings.HasPrefix(got, "[1] done = 1") || !strings.Contains(got, "[2] print('finished block')\nfinished block") ||
		!strings.Contains(got, "[3] import time") || !strings.Contains(got, "cut short") || !strings.Contains(got, "server stopped") {
		t.Fatalf("history after SIGTERM:\n%s", got)
	}
}
