//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// soakWorker drives one session: a sequence of what users do, with the
// faults the injector asks of it mixed in. It keeps the model the
// invariants are checked against: the markers of the runs it was told had
// ended, in order.
type soakWorker struct {
	s       *soak
	key     string // unique: markers are SOAK-<key>-<n>
	sid     string // the session id, shared with other users' and servers' sessions
	srv     *soakServer
	primary *slot
	alt     *slot // another connection of the same user, or nil
	rng     *rand.Rand
	caps    map[string]bool
	// files is the folder a relative path of a tool names, where it is not
	// the server's working directory (the hub leg's person's server root).
	files string

	faultReq  chan string
	epoch     atomic.Int64 // bumped by every fault that touches the session from outside
	needCheck atomic.Bool
	recoverGW atomic.Bool // the gateway came back: run until a run works
	// impaired is set while the session's own kernel server is down (the
	// hub leg's person's server, killed or stopped): its calls' failures
	// are the fault's until a run works again (recover).
	impaired atomic.Bool

	n        int
	expected []string // markers of ended runs, in history order
	exists   bool     // the session exists on the server
	lastPure string   // marker of the last block, if it is a plain cell that can be re-run
	// unsettled is set when a call failed: a run it started may go on, and
	// the next op waits for it first.
	unsettled atomic.Bool
	// opFaulted is set once a fault touched a call of the current op: the
	// op's later calls may see its effects (variables lost to a server
	// restart) though no fault touched them.
	opFaulted atomic.Bool

	mu    sync.Mutex
	calls []string // the last calls, for failure reports
}

func (w *soakWorker) init() {
	if w.faultReq == nil {
		w.faultReq = make(chan string, 1)
	}
}

func (w *soakWorker) recent() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.calls...)
}

func (w *soakWorker) note(format string, args ...any) {
	w.mu.Lock()
	w.calls = append(w.calls, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	if len(w.calls) > 25 {
		w.calls = w.calls[len(w.calls)-25:]
	}
	w.mu.Unlock()
}

// marker is the next unique marker and the Python expression that prints
// it without the code containing it (so a transcript's code never matches).
func (w *soakWorker) marker() (string, string) {
	w.n++
	m := fmt.Sprintf("SOAK-%s-%d", w.key, w.n)
	return m, fmt.Sprintf("print('SO' + 'AK-%s-%d', flush=True)", w.key, w.n)
}

// fence is a snapshot of everything that can fault under a call.
type fence struct{ srv, slot, sess int64 }

func (w *soakWorker) fence(sl *slot) fence {
	return fence{w.srv.gen.Load(), sl.gen.Load(), w.epoch.Load()}
}

// call makes one tool call on a slot and checks what every call must
// hold: an answer within the bound, no protocol error unless a fault
// explains it, no marker of another session.
func (w *soakWorker) call(sl *slot, tool string, args map[string]any) (soakRes, bool, error) {
	if args == nil {
		args = map[string]any{}
	}
	if _, ok := args["session_id"]; !ok && tool != "list_sessions" {
		args["session_id"] = w.sid
	}
	impaired := w.srv.impaired.Load() || w.impaired.Load()
	f := w.fence(sl)
	for w.srv.down.Load() || sl.down.Load() {
		w.srv.waitUp()
		for sl.down.Load() {
			time.Sleep(50 * time.Millisecond) // polling a flag the injector clears
		}
		f = w.fence(sl)
	}
	conn, _ := sl.get()
	bound := w.s.cfg.maxWait + 5*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), bound+60*time.Second)
	defer cancel()
	start := time.Now()
	res, err := conn.call(ctx, tool, args)
	d := time.Since(start)
	faulted := impaired || w.fence(sl) != f || w.srv.down.Load() || w.srv.impaired.Load() || w.impaired.Load() || sl.down.Load()
	if faulted {
		w.opFaulted.Store(true)
	}
	faulted = faulted || w.opFaulted.Load()
	w.s.mu.Lock()
	w.s.calls[tool]++
	w.s.slowest = max(w.s.slowest, d)
	w.s.mu.Unlock()
	outcome := fmt.Sprintf("status=%s isError=%v %.160q", res.str("status"), res.IsError, res.Text)
	if err != nil {
		outcome = "error: " + err.Error()
	}
	w.note("%s %s %s -> %v %s", sl.name, tool, jsonString(args), d.Round(time.Millisecond), outcome)
	w.s.check(invBound)
	if d > bound && !sl.temp {
		w.s.fail(invBound, fmt.Sprintf("%s on %s took %v", tool, sl.name, d.Round(time.Millisecond)), w)
	}
	if err != nil {
		w.s.check(invProtocol)
		w.unsettled.Store(true)
		if !faulted {
			w.s.fail(invProtocol, fmt.Sprintf("%s on %s: %v", tool, sl.name, err), w)
			if errors.Is(err, errConnGone) && !sl.temp {
				// Go on with a new connection, so one failure is not ten.
				w.s.reconnect(sl, true)
			}
		}
		return res, faulted, err
	}
	w.s.check(invCross)
	for _, m := range markerRe.FindAllStringSubmatch(res.Text, -1) {
		if m[1] != w.key && !w.mayList(tool, m[1]) {
			w.s.fail(invCross, fmt.Sprintf("%s of session %s (%s) shows %s, a marker of %s", tool, w.key, w.sid, m[0], m[1]), w, w.s.worker(m[1]))
		}
	}
	// A task client's output, only in list_sessions of its own user on its
	// own server.
	for _, m := range taskMarkerRe.FindAllStringSubmatch(res.Text, -1) {
		tc := w.s.taskClient(m[1])
		if tool != "list_sessions" || tc == nil || tc.srv != w.srv || tc.user != w.primary.user {
			w.s.fail(invCross, fmt.Sprintf("%s of session %s (%s) shows %s, a marker of task client %s", tool, w.key, w.sid, m[0], m[1]), w)
		}
	}
	return res, faulted, nil
}

// mayList reports whether tool may show another session's marker: the
// last output list_sessions shows of each of the caller's own sessions on
// the same server (never another user's).
func (w *soakWorker) mayList(tool, key string) bool {
	o := w.s.worker(key)
	return tool == "list_sessions" && o != nil && o.srv == w.srv && o.primary.user == w.primary.user
}

func (s *soak) taskClient(key string) *taskClient {
	for _, tc := range s.taskClients {
		if tc.key == key {
			return tc
		}
	}
	return nil
}

func (s *soak) worker(key string) *soakWorker {
	for _, w := range s.workers {
		if w.key == key {
			return w
		}
	}
	return nil
}

// expect fails the result invariant unless a fault explains it.
func (w *soakWorker) expect(ok bool, faulted bool, what string, res soakRes) bool {
	w.s.check(invResult)
	if ok {
		return true
	}
	if !faulted {
		w.s.fail(invResult, fmt.Sprintf("%s: status %q isError=%v: %.400s", what, res.str("status"), res.IsError, res.Text), w)
	}
	return false
}

// finish follows a handed-off run with wait_run (on sl) until it ends,
// returning the joined texts and the final result.
func (w *soakWorker) finish(sl *slot, res soakRes, faulted bool, err error) (soakRes, string, bool, error) {
	all := res.Text
	runID := res.str("run_id")
	for i := 0; err == nil && res.going() && i < 200; i++ {
		if res.str("status") == "input_requested" {
			return res, all, faulted, nil
		}
		var f bool
		res, f, err = w.call(sl, "wait_run", map[string]any{"run_id": runID})
		faulted = faulted || f
		all += "\n" + res.Text
	}
	return res, all, faulted, err
}

// record notes a run the client was told ended with its marker shown.
func (w *soakWorker) record(markers ...string) {
	w.expected = append(w.expected, markers...)
}

func (w *soakWorker) loop(deadline time.Time) {
	w.init()
	for time.Now().Before(deadline) && w.s.nfail.Load() < 10 {
		if w.recoverGW.Swap(false) {
			w.recover()
		}
		w.opFaulted.Store(false)
		if w.unsettled.Swap(false) {
			w.settle()
		}
		if w.needCheck.Swap(false) {
			w.settle()
			w.checkHistory("after a server restart")
		}
		select {
		case kind := <-w.faultReq:
			w.fault(kind)
			continue
		default:
		}
		w.op()
	}
}

type soakOp struct {
	name   string
	weight int
	cap    string
	run    func(w *soakWorker)
}

var soakOps = []soakOp{
	{"cell", 20, "", (*soakWorker).opCell},
	{"loop", 8, "", (*soakWorker).opLoop},
	{"plot", 5, "data", (*soakWorker).opPlot},
	{"dataframe", 6, "data", (*soakWorker).opDataFrame},
	{"long_run", 4, "", (*soakWorker).opLongRun},
	{"input", 5, "", (*soakWorker).opInput},
	{"values", 6, "", (*soakWorker).opValues},
	{"export", 5, "", (*soakWorker).opExport},
	{"run_notebook", 3, "notebook", (*soakWorker).opRunNotebook},
	{"rerun", 3, "", (*soakWorker).opRerun},
	{"reset_session", 1, "", (*soakWorker).opResetSession},
	{"reset_run_context", 2, "", (*soakWorker).opResetRunContext},
	{"delete_session", 1, "", (*soakWorker).opDelete},
	{"check_history", 4, "", func(w *soakWorker) { w.checkHistory("during the run") }},
}

func (w *soakWorker) op() {
	total := 0
	for _, o := range soakOps {
		if o.cap == "" || w.caps[o.cap] {
			total += o.weight
		}
	}
	r := w.rng.Intn(total)
	for _, o := range soakOps {
		if o.cap != "" && !w.caps[o.cap] {
			continue
		}
		if r < o.weight {
			if !w.exists && (o.name == "reset_session" || o.name == "reset_run_context" || o.name == "delete_session" || o.name == "rerun" || o.name == "values" || o.name == "export") {
				w.opCell()
				return
			}
			o.run(w)
			return
		}
		r -= o.weight
	}
}

// runCell runs code ending in a marker print and records the marker when
// the run ended ok and showed it.
func (w *soakWorker) runCell(what, code, m string, wantImage bool, extra map[string]any) bool {
	args := map[string]any{"code": code}
	for k, v := range extra {
		args[k] = v
	}
	res, faulted, err := w.call(w.primary, "run_code", args)
	var all string
	res, all, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil {
		w.lastPure = ""
		return false
	}
	w.exists = true
	ok := res.str("status") == "ok" && !res.IsError && strings.Contains(all, m) && (!wantImage || res.Images > 0)
	if !w.expect(ok, faulted, what, res) {
		w.lastPure = ""
		return false
	}
	if ok {
		w.record(m)
	}
	return ok
}

func (w *soakWorker) opCell() {
	m, p := w.marker()
	code := fmt.Sprintf("soak_x = sum(range(%d))\n%s\nsoak_x", w.rng.Intn(100000), p)
	if w.runCell("a short cell", code, m, false, nil) {
		w.lastPure = m
	}
}

func (w *soakWorker) opLoop() {
	m, p := w.marker()
	code := fmt.Sprintf("for i in range(%d):\n    print('line', i)\n%s", 50+w.rng.Intn(400), p)
	if w.runCell("a printing loop", code, m, false, nil) {
		w.lastPure = m
	}
}

func (w *soakWorker) opPlot() {
	m, p := w.marker()
	code := fmt.Sprintf("import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2))\nplt.plot([1, 3, 2, %d])\n%s\nplt.show()", w.rng.Intn(10), p)
	w.runCell("a plot", code, m, true, nil)
	w.lastPure = ""
}

func (w *soakWorker) opDataFrame() {
	m, _ := w.marker()
	// The DataFrame's display shows the marker, in the result rather than stdout.
	code := fmt.Sprintf("import pandas as pd\nsoak_df = pd.DataFrame({'n': range(%d), 'tag': 'SO' + 'AK-%s-%d'})\nsoak_df.head(3)", 3+w.rng.Intn(50), w.key, w.n)
	if !w.runCell("a DataFrame", code, m, false, nil) {
		return
	}
	w.lastPure = ""
	res, faulted, err := w.call(w.primary, "get_value", map[string]any{"expression": "soak_df['tag'][0]"})
	if err == nil {
		w.expect(!res.IsError && strings.Contains(res.Text, m), faulted, "get_value of the DataFrame's tag", res)
	}
}

func (w *soakWorker) opValues() {
	m, _ := w.marker()
	res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": fmt.Sprintf("soak_v = 'SO' + 'AK-%s-%d'", w.key, w.n)})
	res, _, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil || !w.expect(res.str("status") == "ok", faulted, "setting soak_v", res) {
		return
	}
	w.lastPure = ""
	sl := w.primary
	if w.alt != nil && w.rng.Intn(2) == 0 {
		sl = w.alt
	}
	res, faulted, err = w.call(sl, "get_value", map[string]any{"expression": "soak_v"})
	if err == nil {
		w.expect(!res.IsError && strings.Contains(res.Text, m), faulted, "get_value soak_v", res)
	}
	res, faulted, err = w.call(sl, "list_variables", nil)
	if err == nil {
		w.expect(!res.IsError && strings.Contains(res.Text, "soak_v"), faulted, "list_variables", res)
	}
}

// opLongRun hands a run off past --max-wait and picks it up with wait_run,
// from the user's other connection when there is one.
func (w *soakWorker) opLongRun() {
	m, p := w.marker()
	secs := w.s.cfg.maxWait.Seconds() + 1 + float64(w.rng.Intn(3))
	code := fmt.Sprintf("import time\nfor i in range(%d):\n    print('tick', i, flush=True)\n    time.sleep(0.5)\n%s", int(secs*2), p)
	args := map[string]any{"code": code}
	if w.rng.Intn(2) == 0 {
		args["background"] = true
	}
	res, faulted, err := w.call(w.primary, "run_code", args)
	if err != nil {
		w.lastPure = ""
		return
	}
	w.exists = true
	if !w.expect(res.going() || res.str("status") == "ok", faulted, "a long run's hand-off", res) {
		return
	}
	sl := w.primary
	if w.alt != nil {
		sl = w.alt
	}
	var all string
	res, all, faulted, err = w.finish(sl, res, faulted, err)
	all = res.Text + all
	w.lastPure = ""
	if err != nil {
		return
	}
	ok := res.str("status") == "ok" && strings.Contains(all, m)
	if w.expect(ok, faulted, "a long run picked up with wait_run", res) && ok {
		w.record(m)
	}
}

// opInput runs input(), answered with send_input.
func (w *soakWorker) opInput() {
	w.n++
	answer := fmt.Sprintf("%s-%d", w.key, w.n)
	m := "SOAK-" + answer
	code := "soak_answer = input('soak? ')\nprint('SO' + 'AK-' + soak_answer, flush=True)"
	res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": code})
	w.lastPure = ""
	if err != nil {
		return
	}
	w.exists = true
	res, _, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil || !w.expect(res.str("status") == "input_requested", faulted, "input() waits for send_input", res) {
		w.settle()
		return
	}
	sl := w.primary
	if w.alt != nil && w.rng.Intn(2) == 0 {
		sl = w.alt
	}
	res, f, err := w.call(sl, "send_input", map[string]any{"run_id": res.str("run_id"), "text": answer})
	var all string
	res, all, faulted, err = w.finish(sl, res, faulted || f, err)
	if err != nil {
		w.settle()
		return
	}
	ok := res.str("status") == "ok" && strings.Contains(all, m)
	if w.expect(ok, faulted, "input() answered by send_input", res) && ok {
		w.record(m)
	}
	if !ok {
		w.settle()
	}
}

func (w *soakWorker) opExport() {
	w.lastPure = ""
	switch w.rng.Intn(3) {
	case 0:
		res, faulted, err := w.call(w.primary, "export_history", map[string]any{"path": "soak-" + w.key + ".txt"})
		if err == nil {
			w.expect(!res.IsError, faulted, "export_history", res)
		}
	case 1:
		res, faulted, err := w.call(w.primary, "save_script", map[string]any{"path": "soak-" + w.key + ".py"})
		if err == nil {
			w.expect(!res.IsError, faulted, "save_script", res)
		}
	default:
		w.checkNotebook()
	}
	w.lastPure = ""
}

// opRunNotebook writes a two-cell notebook into the session's working
// directory and runs it into the history.
func (w *soakWorker) opRunNotebook() {
	w.lastPure = ""
	res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": "import os\nos.getcwd()"})
	res, _, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil || !w.expect(res.str("status") == "ok", faulted, "os.getcwd()", res) {
		return
	}
	w.exists = true
	var cwd string
	if json.Unmarshal([]byte(strings.ReplaceAll(strings.Trim(res.str("result"), "'"), `\`, `\\`)), &cwd); cwd == "" {
		cwd = strings.Trim(res.str("result"), "'")
	}
	m1, p1 := w.marker()
	m2, p2 := w.marker()
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{},
		"cells": []any{
			map[string]any{"cell_type": "code", "id": "a", "metadata": map[string]any{}, "outputs": []any{}, "execution_count": nil, "source": p1},
			map[string]any{"cell_type": "markdown", "id": "b", "metadata": map[string]any{}, "source": "a note"},
			map[string]any{"cell_type": "code", "id": "c", "metadata": map[string]any{}, "outputs": []any{}, "execution_count": nil, "source": "x_nb = 2\n" + p2},
		},
	}
	name := fmt.Sprintf("soaknb-%s-%d.ipynb", w.key, w.n)
	b, _ := json.Marshal(nb)
	if err := os.WriteFile(filepath.Join(cwd, name), b, 0o644); err != nil {
		w.s.fail(invResult, fmt.Sprintf("writing %s into the session's cwd %q: %v", name, cwd, err), w)
		return
	}
	defer os.Remove(filepath.Join(cwd, name))
	res, faulted, err = w.call(w.primary, "run_notebook", map[string]any{"path": name})
	var all string
	res, all, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil {
		return
	}
	ok := !res.IsError && strings.Contains(all, m1) && strings.Contains(all, m2)
	if w.expect(ok, faulted, "run_notebook", res) && ok {
		w.record(m1, m2)
	}
}

// opRerun restarts the kernel and re-runs the last block, when it is a
// plain cell: its output is the same marker again, in place.
func (w *soakWorker) opRerun() {
	if w.lastPure == "" {
		w.opCell()
		return
	}
	m := w.lastPure
	res, faulted, err := w.call(w.primary, "rerun_code", map[string]any{"start": -1})
	var all string
	res, all, faulted, err = w.finish(w.primary, res, faulted, err)
	if err != nil {
		w.lastPure = ""
		return
	}
	// The result says whether the outputs changed; the history check
	// finds the marker again.
	_ = m
	if !w.expect(!res.IsError && strings.Contains(all, "1 of 1 ran"), faulted, "rerun_code of the last cell", res) {
		w.lastPure = ""
	}
}

func (w *soakWorker) opResetSession() {
	w.lastPure = ""
	res, faulted, err := w.call(w.primary, "reset_session", nil)
	if err != nil || faulted {
		w.expected = nil // cannot know whether it happened
	}
	if err == nil && w.expect(!res.IsError, faulted, "reset_session", res) {
		w.expected = nil
	}
}

func (w *soakWorker) opResetRunContext() {
	w.lastPure = ""
	res, faulted, err := w.call(w.primary, "reset_run_context", nil)
	if err == nil {
		w.expect(!res.IsError, faulted, "reset_run_context", res)
	}
}

// opDelete deletes the session; its kernel must be gone soon after.
func (w *soakWorker) opDelete() {
	w.lastPure = ""
	pid := 0
	if w.caps["pid"] {
		pid = w.pid()
	}
	res, faulted, err := w.call(w.primary, "delete_session", nil)
	if err != nil || faulted {
		w.expected = nil
		w.exists = true // unknown: the next op creates it or finds it
		return
	}
	if !w.expect(!res.IsError, faulted, "delete_session", res) {
		return
	}
	w.expected = nil
	w.exists = false
	w.s.check(invLeak)
	if pid > 0 && !waitGone(w.s.t, pid, 20*time.Second) {
		w.s.fail(invLeak, fmt.Sprintf("kernel %d of deleted session %s still runs 20 s later", pid, w.key), w)
	}
}

// pid is the session's kernel pid from list_sessions (0 when unknown).
func (w *soakWorker) pid() int {
	res, _, err := w.call(w.primary, "list_sessions", nil)
	if err != nil {
		return 0
	}
	return sessionPid(res, w.sid)
}

// sessionPid is session sid's kernel pid in a list_sessions result (0 when
// it has none).
func sessionPid(res soakRes, sid string) int {
	rows, _ := res.Structured["sessions"].([]any)
	for _, r := range rows {
		row, _ := r.(map[string]any)
		if row["session_id"] == sid {
			f, _ := row["pid"].(float64)
			return int(f)
		}
	}
	return 0
}

// recover runs a cell until one works on the restarted gateway (its first
// calls may meet the old kernel's death), then ends the fault's window.
func (w *soakWorker) recover() {
	for i := 0; i < 20; i++ {
		res, _, err := w.call(w.primary, "run_code", map[string]any{"code": "'back'"})
		if err == nil && res.str("status") == "ok" {
			break
		}
	}
	w.srv.impaired.Store(false)
	w.impaired.Store(false)
	w.epoch.Add(1)
	w.lastPure = ""
}

// settle waits (with wait_run) for whatever the session still runs, and
// interrupts a run left waiting for input.
func (w *soakWorker) settle() {
	for i := 0; i < 20; i++ {
		res, _, err := w.call(w.primary, "wait_run", nil)
		if err != nil || res.IsError || !res.going() {
			return
		}
		if res.str("status") == "input_requested" {
			w.call(w.primary, "interrupt_session", nil)
		}
	}
}

// checkHistory reads the whole history back and checks that the markers
// of every ended run are in it, in order. It pages through the history: a
// result longer than the output limit is cut in the middle.
func (w *soakWorker) checkHistory(when string) {
	var transcript strings.Builder
	faulted := false
	const page = 5
	for start, total := 0, 1; start < total; {
		res, f, err := w.call(w.primary, "get_history", map[string]any{"full": true, "start": start, "end": start + page})
		faulted = faulted || f
		if err != nil {
			return
		}
		if res.IsError {
			w.s.check(invHistory)
			if len(w.expected) > 0 && !faulted {
				w.s.fail(invHistory, fmt.Sprintf("%s: get_history of %s failed with %d ended runs expected: %.300s", when, w.key, len(w.expected), res.Text), w)
			}
			return
		}
		t, _ := res.Structured["total"].(float64)
		total = int(t)
		text := res.str("transcript")
		if strings.Contains(text, "characters omitted]") {
			// One block at a time, then; a block longer than the limit
			// would be cut anyway (no soak block is).
			for i := start; i < min(start+page, total); i++ {
				one, f, err := w.call(w.primary, "get_history", map[string]any{"full": true, "start": i, "end": i + 1})
				faulted = faulted || f
				if err != nil {
					return
				}
				transcript.WriteString(one.str("transcript"))
			}
		} else {
			transcript.WriteString(text)
		}
		start += page
	}
	w.s.check(invHistory)
	w.matchMarkers(when+": get_history", transcript.String(), faulted)
}

func (w *soakWorker) matchMarkers(what, text string, faulted bool) {
	var got []string
	for _, m := range markerRe.FindAllStringSubmatch(text, -1) {
		if m[1] == w.key {
			got = append(got, m[0])
		} else {
			w.s.fail(invCross, fmt.Sprintf("%s of %s shows %s, a marker of %s", what, w.key, m[0], m[1]), w, w.s.worker(m[1]))
		}
	}
	i := 0
	for _, g := range got {
		if i < len(w.expected) && g == w.expected[i] {
			i++
		}
	}
	if i < len(w.expected) && !faulted {
		w.s.fail(invHistory, fmt.Sprintf("%s: %d of %d ended runs found in order; the first missing is %s (expected %v, history has %v)", what, i, len(w.expected), w.expected[i], tail(w.expected, 12), tail(got, 12)), w)
	}
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// checkNotebook saves the history as a notebook, validates it with
// nbformat and checks its outputs hold the ended runs' markers.
func (w *soakWorker) checkNotebook() {
	name := "soak-" + w.key + ".ipynb"
	res, faulted, err := w.call(w.primary, "save_notebook", map[string]any{"path": name})
	if err != nil {
		return
	}
	w.s.check(invNotebook)
	if res.IsError {
		if w.exists && len(w.expected) > 0 && !faulted {
			w.s.fail(invNotebook, "save_notebook: "+res.Text, w)
		}
		return
	}
	path := res.str("path")
	if w.files != "" && !filepath.IsAbs(path) {
		path = filepath.Join(w.files, path)
	}
	outs, err := notebookMarkers(path)
	if err != nil {
		if !faulted {
			w.s.fail(invNotebook, fmt.Sprintf("%s: %v", path, err), w)
		}
		return
	}
	w.matchMarkers("save_notebook "+path, outs, faulted)
}

// fault injects a fault the injector asked of this session.
func (w *soakWorker) fault(kind string) {
	w.lastPure = ""
	w.s.count(w.s.faults, kind)
	w.note("FAULT %s", kind)
	switch kind {
	case "kernel_os_exit":
		_, p := w.marker()
		res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": p + "\nimport os\nos._exit(1)"})
		res, _, faulted, err = w.finish(w.primary, res, faulted, err)
		if err == nil {
			w.expect(res.IsError && strings.Contains(res.Text, "died"), faulted, "os._exit(1) reports the kernel died", res)
		}
	case "frame_bomb":
		// The kernel announces a 2^50-byte frame on its connections: the
		// server stops that kernel, and nothing else notices.
		res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": ipytest.FrameBomb})
		res, _, faulted, err = w.finish(w.primary, res, faulted, err)
		if err == nil {
			w.exists = true
			w.expect(res.str("status") == "interrupted" && strings.Contains(res.Text, "broke the protocol"), faulted, "a kernel that announces a 2^50-byte frame is stopped", res)
		}
	case "kernel_sigkill":
		res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": "import time\nfor i in range(200):\n    time.sleep(0.05)", "background": true})
		if err != nil {
			return
		}
		w.exists = true
		if pid := w.pid(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		res, _, faulted, err = w.finish(w.primary, res, faulted, err)
		if err == nil {
			w.expect(!res.going(), faulted, "a SIGKILLed kernel's run ends", res)
		}
	case "sigint_ignored_timeout":
		code := "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ignoring', flush=True)\nwhile True:\n    pass"
		res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": code, "timeout": 1})
		res, _, faulted, err = w.finish(w.primary, res, faulted, err)
		if err == nil {
			w.exists = true
			w.expect(res.str("status") == "timeout", faulted, "a kernel ignoring SIGINT past its timeout", res)
		}
	case "interrupt_storm":
		res, faulted, err := w.call(w.primary, "run_code", map[string]any{"code": "import time\nfor i in range(200):\n    time.sleep(0.05)", "background": true})
		if err != nil {
			return
		}
		w.exists = true
		var wg sync.WaitGroup
		for g := 0; g < 3; g++ {
			sl := w.primary
			if g == 1 && w.alt != nil {
				sl = w.alt
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					w.call(sl, "interrupt_session", nil)
				}
			}()
		}
		wg.Wait()
		res, _, faulted, err = w.finish(w.primary, res, faulted, err)
		if err == nil {
			w.expect(!res.going(), faulted, "a run under an interrupt storm ends", res)
		}
	case "client_disconnect":
		w.disconnect()
	}
	w.settle()
	// The session works again.
	w.opCell()
}

// disconnect makes a call on a connection of its own and drops that
// connection mid-call: closed by the go-sdk client, its TCP torn down, or
// the TypeScript client killed.
func (w *soakWorker) disconnect() {
	sl := &slot{name: w.primary.user + "-temp", user: w.primary.user, ts: w.rng.Intn(3) == 0, srv: w.srv, temp: true}
	if err := w.s.connect(context.Background(), sl); err != nil {
		if w.srv.gen.Load() == sl.srv.gen.Load() {
			w.note("temp connection: %v", err)
		}
		return
	}
	conn, _ := sl.get()
	done := make(chan struct{})
	m, p := w.marker()
	_ = m
	go func() {
		defer close(done)
		w.call(sl, "run_code", map[string]any{"code": "import time\ntime.sleep(3)\n" + p})
	}()
	time.Sleep(time.Duration(300+w.rng.Intn(1500)) * time.Millisecond)
	sl.gen.Add(1)
	if w.rng.Intn(2) == 0 {
		conn.teardown()
	} else {
		conn.close()
	}
	<-done
	w.exists = true
	conn.teardown()
}
