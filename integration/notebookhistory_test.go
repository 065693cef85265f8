//go:build unix

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rerunOutput is rerun_code's structured content, as far as these tests
// read it.
type rerunOutput struct {
	Status string `json:"status"`
	Blocks []struct {
		Block   int    `json:"block"`
		Status  string `json:"status"`
		Outputs string `json:"outputs"`
		Result  string `json:"result"`
	} `json:"blocks"`
}

// historyFile reads a session's history file: its entries' run ids and
// stdout, in order.
func historyFile(t *testing.T, state, session string) (runs, stdout []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(state, "sessions", session+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Entry *struct {
				Run     string `json:"run"`
				Outputs []struct {
					Name string `json:"name"`
					Text string `json:"text"`
				} `json:"outputs"`
			} `json:"entry"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("history file line %q: %v", sc.Text(), err)
		}
		if rec.Entry == nil {
			continue
		}
		out := ""
		for _, o := range rec.Entry.Outputs {
			if o.Name == "stdout" {
				out += o.Text
			}
		}
		runs, stdout = append(runs, rec.Entry.Run), append(stdout, out)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs, stdout
}

// rerun_code is Restart & Run All: every block gets its new outputs in its
// own place, in memory and in the history file, and the result names the
// block whose outputs differ from those recorded before (a random number)
// and gives the others one line each. save_notebook then holds each block
// once.
func TestRerunInPlaceComparesOutputs(t *testing.T) {
	t.Parallel()
	requirePython(t, "matplotlib")
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	codes := []string{"import random", "print('fixed')", "print(random.random())", "x = 6 * 7\nx",
		"%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
		"plt.plot([random.random() for _ in range(3)])\nplt.show()"}
	for _, c := range codes {
		if _, out := s.run("ip", c); out.Status != "ok" {
			t.Fatalf("%s: %+v", c, out)
		}
	}
	_, before := historyFile(t, state, "ip")
	res := s.call("rerun_code", map[string]any{"session_id": "ip"})
	got := text(res)
	if res.IsError || !strings.HasPrefix(got, "Re-ran 6 block(s) ([1] to [6]) in a fresh kernel, in place: 6 of 6 ran; outputs differ in [3], [6].") {
		t.Fatalf("rerun_code:\n%s", got)
	}
	for _, want := range []string{"[1] ok, same outputs", "[2] ok, same outputs", "[3] ok, outputs differ from those recorded before (stdout):", "[4] ok, same outputs",
		"[5] ok, same outputs", "[6] ok, outputs differ from those recorded before (image/png):"} {
		if !strings.Contains(got, want) {
			t.Errorf("rerun_code's text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fixed") {
		t.Errorf("blocks whose outputs match are shown in full:\n%s", got)
	}
	// Only the changed plot comes as an image: the same one is a line.
	images := 0
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			images++
		}
	}
	if images != 1 {
		t.Errorf("rerun_code's result has %d images; want the changed plot's only", images)
	}
	out := structured[rerunOutput](t, res)
	if len(out.Blocks) != 6 || out.Blocks[2].Outputs != "changed: stdout" || out.Blocks[5].Outputs != "changed: image/png" ||
		out.Blocks[0].Outputs != "same" || out.Blocks[3].Outputs != "same" || out.Blocks[4].Outputs != "same" {
		t.Fatalf("structured blocks: %+v", out.Blocks)
	}

	if n := s.historyCount("ip"); n != 6 {
		t.Fatalf("history has %d blocks after the rerun; want the 6 it had", n)
	}
	runs, after := historyFile(t, state, "ip")
	if len(after) != 6 || after[1] != "fixed\n" || after[2] == before[2] || after[2] == "" {
		t.Fatalf("history file after the rerun: stdout %q (before %q)", after, before)
	}
	for _, r := range runs {
		if r != runs[0] || r == "" {
			t.Fatalf("history file's run ids %q: every block re-ran in the one rerun_code run", runs)
		}
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "ip"}))
	if strings.Count(hist, "print('fixed')") != 1 || !strings.Contains(hist, strings.TrimSpace(after[2])) {
		t.Fatalf("transcript after the rerun:\n%s", hist)
	}

	path := filepath.Join(t.TempDir(), "ip.ipynb")
	if res := s.call("save_notebook", map[string]any{"session_id": "ip", "path": path}); res.IsError {
		t.Fatal(text(res))
	}
	if n := len(notebookCells(t, path)); n != 6 {
		t.Fatalf("the notebook holds %d cells; want 6", n)
	}
}

// A rerun stops at the first block that fails, as Run All does; the blocks
// after it keep their earlier outputs and the result says so.
func TestRerunInPlaceStopsAtError(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("ie", "a = 1")
	s.run("ie", "print(a)")
	s.run("ie", "print('after')")
	// Without its first block, the history's new first block fails in a
	// fresh kernel where it printed 1 before.
	s.call("delete_history", map[string]any{"session_id": "ie", "blocks": []int{1}})
	res := s.call("rerun_code", map[string]any{"session_id": "ie"})
	got := text(res)
	if !res.IsError || !strings.HasPrefix(got, "Stopped at block [1]: NameError") ||
		!strings.Contains(got, "1 of 2 blocks ran; outputs differ in [1].") || !strings.Contains(got, "The blocks after [1] did not run and keep their earlier outputs.") {
		t.Fatalf("rerun_code:\n%s", got)
	}
	if n := s.historyCount("ie"); n != 2 {
		t.Fatalf("history has %d blocks; want 2", n)
	}
	hist := text(s.call("get_history", map[string]any{"session_id": "ie"}))
	if !strings.Contains(hist, "NameError") || !strings.Contains(hist, "[2] print('after')\nafter") || !strings.HasPrefix(hist, "[1] print(a)\n") || strings.Contains(hist, "[3]") {
		t.Fatalf("transcript:\n%s", hist)
	}
}

func notebookCells(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	return nb.Cells
}

// While rerun_code runs, the hand-off status says which block it is at.
func TestRerunProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("pg", "a = 1")
	res, _ := s.run("pg", "name = input('name? ')", "background", true)
	st := structured[runState](t, res)
	st = s.waitRunUntil("pg", st.RunID, "the question", func(p runState) bool { return p.Status == "input_requested" })
	s.call("send_input", map[string]any{"session_id": "pg", "run_id": st.RunID, "text": "x"})
	var texts []string
	s.waitRunDone("pg", st.RunID, &texts)
	s.run("pg", "b = 2")

	res = s.call("rerun_code", map[string]any{"session_id": "pg", "background": true})
	id := structured[runState](t, res).RunID
	s.waitRunUntil("pg", id, "the question", func(p runState) bool { return p.Status == "input_requested" })
	progress := structured[struct {
		Progress string `json:"progress"`
	}](t, s.call("wait_run", map[string]any{"session_id": "pg", "run_id": id, "wait": 0})).Progress
	if progress != "block 2 of 3" {
		t.Fatalf("wait_run's progress while block 2 asks: %q", progress)
	}
	if st := text(s.call("session_status", map[string]any{"session_id": "pg"})); !strings.Contains(st, "at block 2 of 3") {
		t.Fatalf("session_status:\n%s", st)
	}
	s.call("send_input", map[string]any{"session_id": "pg", "run_id": id, "text": "y"})
	texts = nil
	if res, fin := s.waitRunDone("pg", id, &texts); fin.Status != "ok" || !strings.Contains(text(res), "3 of 3 ran") {
		t.Fatalf("rerun: %+v\n%s", fin, text(res))
	}
	if n := s.historyCount("pg"); n != 3 {
		t.Fatalf("history has %d blocks; want 3", n)
	}
}

// delete_history takes the transcript's numbers and echoes what it removed;
// bad input deletes nothing.
func TestDeleteHistoryByBlockNumber(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []string{"a = 1", "b = 2\nprint(b)", "c = 3", "\n# the fourth\nd = 4", "e = 5"} {
		s.run("db", c)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"blocks": []int{2, 6}}, "no block [6]: session \"db\" has blocks [1] to [5]; nothing was deleted"},
		{map[string]any{"blocks": []int{0}}, "no block [0]"},
		{map[string]any{"blocks": []int{2, 2}}, "block [2] is named twice"},
		{map[string]any{"blocks": []int{}}, "no blocks given"},
		{map[string]any{"blocks": []int{2}, "start": 1}, "not both"},
		{map[string]any{}, "needs start"},
	} {
		bad.args["session_id"] = "db"
		res := s.call("delete_history", bad.args)
		if !res.IsError || !strings.Contains(text(res), bad.want) {
			t.Errorf("delete_history %v: %s; want an error with %q", bad.args, text(res), bad.want)
		}
	}
	if n := s.historyCount("db"); n != 5 {
		t.Fatalf("bad input deleted blocks: %d left", n)
	}
	res := s.call("delete_history", map[string]any{"session_id": "db", "blocks": []int{4, 2}})
	want := "Deleted 2 block(s) from session \"db\"; 3 remain.\n[2] b = 2\n[4] # the fourth"
	if res.IsError || text(res) != want {
		t.Fatalf("delete_history [4, 2]:\n%s\nwant:\n%s", text(res), want)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(raw), `"path"`) || strings.Contains(string(raw), `"bytes"`) ||
		!strings.Contains(string(raw), `"removed":[{"block":2,"first_line":"b = 2"},{"block":4,"first_line":"# the fourth"}]`) {
		t.Fatalf("structured content: %s", raw)
	}
	if hist := text(s.call("get_history", map[string]any{"session_id": "db"})); !strings.Contains(hist, "[1] a = 1\n\n[2] c = 3\n\n[3] e = 5") {
		t.Fatalf("history after the delete:\n%s", hist)
	}
	// The slice form echoes too.
	if res := s.call("delete_history", map[string]any{"session_id": "db", "start": -1}); text(res) != "Deleted 1 block(s) from session \"db\"; 2 remain.\n[3] e = 5" {
		t.Fatalf("delete_history start -1: %s", text(res))
	}
}

// save_notebook skip_errors leaves out the blocks that failed and says how
// many.
func TestSaveNotebookSkipErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("se", "x = 1")
	s.run("se", "1/0")
	s.run("se", "undefined_name")
	s.run("se", "import time\ntime.sleep(30)", "timeout", 0.5)
	s.run("se", "print(x)")
	path := filepath.Join(t.TempDir(), "clean.ipynb")
	res := s.call("save_notebook", map[string]any{"session_id": "se", "path": path, "skip_errors": true})
	if res.IsError || !strings.Contains(text(res), "Saved 2 block(s)") || !strings.Contains(text(res), "Left out 3 block(s) that failed (status error, timeout or interrupted).") {
		t.Fatalf("save_notebook skip_errors: %s", text(res))
	}
	cells := notebookCells(t, path)
	if len(cells) != 2 {
		t.Fatalf("notebook cells: %d, want 2", len(cells))
	}
	for _, c := range cells {
		if src, _ := json.Marshal(c["source"]); strings.Contains(string(src), "1/0") || strings.Contains(string(src), "undefined_name") || strings.Contains(string(src), "sleep") {
			t.Fatalf("a failed block is in the notebook: %s", src)
		}
	}
	// The cells kept are still named for their blocks: cell-5 is [5].
	if cells[0]["id"] != "cell-1" || cells[1]["id"] != "cell-5" {
		t.Errorf("cell ids %v and %v, want cell-1 and cell-5 (blocks [1] and [5])", cells[0]["id"], cells[1]["id"])
	}
	// Without it, every block is there.
	if res := s.call("save_notebook", map[string]any{"session_id": "se", "path": path}); res.IsError || len(notebookCells(t, path)) != 5 {
		t.Fatalf("save_notebook: %s", text(res))
	}
}

// Run ids go on from the history's after a restart on the same state dir:
// a history never holds two r1s.
func TestRunIDsUniqueAcrossRestarts(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	s.run("ids", "a = 1")
	s.run("ids", "b = 2")
	s.close()

	s2 := startServer(t, "--state-dir", state)
	res, _ := s2.run("ids", "c = 3")
	if id := structured[runState](t, res).RunID; id != "r3" {
		t.Fatalf("the first run after the restart is %q; want r3", id)
	}
	runs, _ := historyFile(t, state, "ids")
	if strings.Join(runs, ",") != "r1,r2,r3" {
		t.Fatalf("history file's run ids: %q", runs)
	}
}

// rerun_code's progress notifications say which block runs.
func TestRerunProgressNotifications(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.run("pn", "a = 1")
	s.run("pn", "import time\nfor i in range(5):\n    print('step', i, flush=True)\n    time.sleep(0.5)")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "rerun_code", Arguments: map[string]any{"session_id": "pn"}}
	params.SetProgressToken("tok-rerun")
	if res, err := s.cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("rerun_code: %v %v", err, res)
	}
	// The notifications were sent before the result, but the client may
	// hand them over after it: wait for the one that names the block.
	var msgs []string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-s.progress:
			msgs = append(msgs, p.Message)
			if strings.HasPrefix(p.Message, "block 2 of 2: step") {
				return
			}
			continue
		case <-deadline:
		}
		break
	}
	t.Fatalf("no progress notification names the block during a 2.5 s block: %q", msgs)
}
