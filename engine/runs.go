package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Long runs. A client gives up on a call after its own timeout (60 s in
// the official TypeScript SDK) and then cancels it. So every execution is a
// run with an id that belongs to its session, not to the call or the
// connection: the call that starts it waits at most Config.MaxWait, then
// hands the run off with the output so far, and wait_run picks it up from any
// connection. Before the hand-off, cancelling the call interrupts the run as
// it always did; after it, only interrupt_session and the run's own timeout
// stop it.

// Run states.
const (
	StatusQueued         = "queued"
	StatusRunning        = "running"
	StatusInputRequested = "input_requested"
	StatusDone           = "done"
)

// keepRuns is how many finished runs a session remembers for wait_run.
const keepRuns = 32

// maxPendingOutput bounds the output a run keeps between two wait_run calls;
// beyond it the middle is left out (the final result still has all that
// history keeps).
const maxPendingOutput = 1 << 20

// Work does a run's work in its turn and returns its result, a value the
// caller gives meaning to (the adapter keeps the rendered result there, so
// that every call returning the run returns the same). ctx ends when the
// run is cancelled (Cancel) or the engine stops.
type Work func(ctx context.Context, r *Run) (any, error)

// Run is one execution queued in a session.
type Run struct {
	id      string
	ss      *Session
	tool    string
	job     *job
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{} // closed when the result is set
	created time.Time

	mu        sync.Mutex
	state     string
	started   time.Time
	ended     time.Time
	changed   chan struct{} // closed and replaced when state or input changes
	pending   []byte        // stream text not yet delivered (its first half, once omitted > 0)
	tail      []byte        // the newest stream text, once omitted > 0
	omitted   int           // bytes left out between pending and tail
	overflow  bool          // pending filled up since the last delivery
	shown     int           // stream bytes delivered so far
	shownSum  hash.Hash     // of those bytes, to find them again in the result
	lastLine  string
	executing bool // a block is in the kernel (RunBlock)
	inBlock   bool // a block began and is not recorded yet (runview.go)
	input     *Question
	inputSeq  int
	eliciting int // callers waiting on the run that elicit its questions (Eliciting)
	result    any
	err       error
	// What a viewer follows (runview.go): the outputs as they arrived, the
	// current block's code and execution count, the blocks recorded.
	log       viewLog
	code      string // the block running now, or the last one run
	execCount int
	blocks    []int
	replacing int    // the history index the current block re-runs in place; -1 for a new block
	progress  string // "block 7 of 11" while a run of several blocks goes on (SetProgress)
	// startNote says how the start of the server the run's kernel needs is
	// going (userserver.go), while it goes on; it is the run's progress then.
	startNote string
	by        string // who wrote the code (history.Entry.By); "" the assistant
	intended  string // the code it was started with, before its first block
	task      bool   // followed as an MCP task (MarkTask)
}

// SetBy says who wrote the run's code, for the history entries RunBlock
// records: history.ByPerson for a cell the person ran from the web view.
// Call it before the run's work runs blocks (in the work itself, or right
// after StartRun returns); blocks already recorded keep what they had.
func (r *Run) SetBy(by string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.by = by
}

// By is who wrote the run's code, as SetBy set it; "" is the assistant.
func (r *Run) By() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by
}

// Code is the code of the block the run executes now (or executed last);
// before its first block, the code it was started with (WithCode), or "".
func (r *Run) Code() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.codeLocked()
}

func (r *Run) codeLocked() string {
	if r.code == "" {
		return r.intended
	}
	return r.code
}

// RunOption sets what is known of a run before it is queued, so that its
// run_queued event and views of it while it waits show it.
type RunOption func(*Run)

// SetProgress says that a run of n blocks (rerun_code, run_notebook) is at
// its k-th, 1-based: views of the run show "block k of n" until it ends.
func (r *Run) SetProgress(k, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = fmt.Sprintf("block %d of %d", k, n)
}

// WithCode is the code the run will execute (shown while it is queued).
func WithCode(code string) RunOption { return func(r *Run) { r.intended = code } }

// WrittenBy is SetBy before the run is queued.
func WrittenBy(by string) RunOption { return func(r *Run) { r.by = by } }

// StartRun joins the caller's place in the session's queue and starts work
// as a run in its turn. The run is the session's from now on: it goes on
// whatever happens to the caller, unless the caller cancels it (Cancel).
// tool names what started it (run_code, load_data, ...).
func (s *Engine) StartRun(ctx context.Context, ss *Session, place Place, tool string, work Work, opts ...RunOption) (*Run, error) {
	j := newJob()
	j.run = true
	if err := s.join(ctx, ss, place, j); err != nil {
		return nil, fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", ss.id, err)
	}
	rctx, cancel := context.WithCancel(s.ctx)
	r := &Run{ss: ss, tool: tool, job: j, ctx: rctx, cancel: cancel, done: make(chan struct{}),
		created: time.Now(), state: StatusQueued, changed: make(chan struct{}), shownSum: newStreamHash(), replacing: -1}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		ss.leave(j)
		return nil, errShuttingDown
	}
	s.runs.Add(1)
	s.mu.Unlock()
	ss.mu.Lock()
	ss.runSeq++
	if err := s.runIDs.take(ss.id, ss.runSeq); err != nil {
		s.cfg.Logger.Warn("cannot reserve run ids in the state folder; after a crash, ids of runs cut short may be given again", "session", ss.id, "error", err)
	}
	r.id = fmt.Sprintf("r%d", ss.runSeq)
	ss.runs = append(ss.runs, r)
	ss.forgetOldRuns()
	for _, o := range opts {
		o(r)
	}
	s.events.Publish(Event{Kind: RunQueued, Session: ss.id, Run: r.id, Tool: tool})
	ss.mu.Unlock()
	ss.rd.signal() // a read that found the run's job before the run
	go r.execute(s, work)
	return r, nil
}

// newStreamHash hashes the stream output a run delivered (see streamShown).
func newStreamHash() hash.Hash { return sha256.New() }

// forgetOldRuns drops the oldest finished runs beyond keepRuns. Call with
// ss.mu held.
func (ss *Session) forgetOldRuns() {
	for len(ss.runs) > keepRuns {
		i := -1
		for n, r := range ss.runs {
			if isClosed(r.done) {
				i = n
				break
			}
		}
		if i < 0 {
			return
		}
		ss.runs = append(ss.runs[:i], ss.runs[i+1:]...)
	}
}

func (r *Run) execute(s *Engine, work Work) {
	defer s.runs.Done()
	defer r.cancel()
	select {
	case <-r.job.turn:
	case <-r.ctx.Done():
	}
	if r.ctx.Err() != nil {
		r.finish(nil, fmt.Errorf("run %s was cancelled before it started (it was queued behind earlier calls in session %q); nothing ran", r.id, r.ss.id))
		return
	}
	if err := r.ss.checkTurn(); err != nil {
		r.finish(nil, err)
		return
	}
	r.mu.Lock()
	r.state, r.started = StatusRunning, time.Now()
	r.signal()
	r.mu.Unlock()
	s.events.Publish(Event{Kind: RunStarted, Session: r.ss.id, Run: r.id, Tool: r.tool})
	r.ss.mu.Lock()
	r.ss.current = r
	r.ss.mu.Unlock()
	res, err := work(r.ctx, r)
	r.ss.mu.Lock()
	if r.ss.current == r {
		r.ss.current = nil
	}
	r.ss.mu.Unlock()
	r.finish(res, err)
}

// finish sets the run's result and publishes it, then gives the session's
// execution right on: the next run's events come after this one's
// run_finished. The status is that of the result when it has one (a
// *Block, or the adapter's result).
func (r *Run) finish(res any, err error) {
	r.mu.Lock()
	r.result, r.err = res, err
	r.state, r.ended = StatusDone, time.Now()
	r.signal()
	r.mu.Unlock()
	e := Event{Kind: RunFinished, Session: r.ss.id, Run: r.id, Tool: r.tool, Result: res, Err: err}
	if b, ok := res.(interface{ RunStatus() string }); ok {
		e.Status = b.RunStatus()
	}
	r.ss.eng.events.Publish(e)
	r.ss.leave(r.job)
	close(r.done)
}

// signal wakes whoever waits on the run. Call with r.mu held.
func (r *Run) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// event records a kernel event for wait_run and the run's viewers, and
// publishes its output.
func (r *Run) event(e kernel.Event) {
	o := e.Output
	if e.Kind == "clear_output" {
		// Published as an output of its own type, as the viewer log keeps
		// it, so that a live view clears too.
		o = kernel.Output{Type: "clear_output"}
		if e.Wait {
			o.Metadata = map[string]json.RawMessage{"wait": json.RawMessage("true")}
		}
	}
	if e.Kind == "update_display_data" {
		// Of its own type too, so that a live view replaces the display
		// that has its DisplayID instead of adding one.
		o.Type = "update_display_data"
	}
	r.ss.eng.events.Publish(Event{Kind: RunOutput, Session: r.ss.id, Run: r.id, Output: &o})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logEvent(e)
	if e.Kind != "stream" || e.Output.Text == "" {
		return
	}
	text := e.Output.Text
	line := LastLine(text)
	if line != "" {
		r.lastLine = line
	}
	if !r.overflow && len(r.pending)+len(text) <= maxPendingOutput {
		r.pending = append(r.pending, text...)
		return
	}
	// Too much between two deliveries: keep the first half and the newest
	// half, and count what is left out between them.
	half := maxPendingOutput / 2
	if !r.overflow {
		r.overflow = true
		if len(r.pending) > half {
			r.tail = append(r.tail[:0], r.pending[half:]...)
			r.pending = r.pending[:half]
		} else {
			n := min(half-len(r.pending), len(text))
			r.pending = append(r.pending, text[:n]...)
			text = text[n:]
		}
	}
	if len(text) >= half {
		r.omitted += len(r.tail) + len(text) - half
		r.tail = append(r.tail[:0], text[len(text)-half:]...)
		return
	}
	if drop := len(r.tail) + len(text) - half; drop > 0 {
		r.omitted += drop
		r.tail = append(r.tail[:0], r.tail[drop:]...)
	}
	r.tail = append(r.tail, text...)
}

// LastLine is the last non-empty line of a stream text, for list_sessions.
func LastLine(s string) string {
	if len(s) > 4096 {
		s = s[len(s)-4096:]
	}
	s = strings.TrimRight(history.PlainText(s), "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// FollowLines subscribes to run r's events and returns follow, which
// calls tick every interval while one of r's blocks is in the kernel, with
// the newest line r printed, until r finishes or the engine closes. It
// subscribes first, so follow first catches up from the run's state, and
// again whenever its buffer overflowed.
func (s *Engine) FollowLines(r *Run) (follow func(every time.Duration, tick func(line string))) {
	sid, rid := r.Session().ID(), r.ID()
	sub := s.Events().Subscribe(64, func(e *Event) bool {
		return e.Session == sid && e.Run == rid && (e.Kind == RunFinished ||
			(e.Kind == RunOutput && e.Output.Type == kernel.OutputStream))
	})
	return func(every time.Duration, tick func(line string)) {
		defer sub.Close()
		v := r.View()
		line := v.LastLine
		if v.Status == StatusDone {
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case _, open := <-sub.Ready():
				for {
					e, ok := sub.TryNext()
					if !ok {
						break
					}
					switch e.Kind {
					case RunOutput:
						if l := LastLine(e.Output.Text); l != "" {
							line = l
						}
					case RunFinished:
						return
					case Missed:
						v := r.View()
						if v.Status == StatusDone {
							return
						}
						line = v.LastLine
					}
				}
				if !open {
					return
				}
			case <-t.C:
				if r.Executing() {
					tick(line)
				}
			}
		}
	}
}

// AwaitResult is why await returned.
type AwaitResult int

const (
	AwaitDone      AwaitResult = iota // the run finished
	AwaitInput                        // the run waits for an answer
	AwaitTimeout                      // d passed
	AwaitCancelled                    // ctx ended
	AwaitBlocked                      // the run is queued behind one that waits for input
)

// await waits up to d for the run to finish. It returns early when the run
// asks for input: the caller puts the question to the user or hands the run
// off for send_input; and when the run is queued behind one that waits for
// input, which holds the turn until someone answers.
func (r *Run) Await(ctx context.Context, d time.Duration) AwaitResult {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		asked := r.ss.askedSignal()
		r.mu.Lock()
		changed, asking, queued := r.changed, r.input != nil && !r.input.answered, r.state == StatusQueued
		r.mu.Unlock()
		if isClosed(r.done) {
			return AwaitDone
		}
		if asking {
			return AwaitInput
		}
		if !queued {
			asked = nil
		} else if a, _ := r.ss.askingAhead(r.job); a != nil {
			return AwaitBlocked
		}
		select {
		case <-r.done:
			return AwaitDone
		case <-changed:
		case <-asked:
		case <-t.C:
			return AwaitTimeout
		case <-ctx.Done():
			return AwaitCancelled
		}
	}
}

// awaitStart waits, when the run's turn has come, until it has left the
// queued state (it starts, or fails to start). A run still behind earlier
// calls is not waited for.
func (r *Run) AwaitStart(ctx context.Context) {
	if !isClosed(r.job.turn) {
		return
	}
	for {
		r.mu.Lock()
		state, changed := r.state, r.changed
		r.mu.Unlock()
		if state != StatusQueued {
			return
		}
		select {
		case <-changed:
		case <-r.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// RunView describes a run in progress for list_sessions, session_status and
// wait_run.
type RunView struct {
	RunID     string `json:"run_id"`
	Tool      string `json:"tool"`
	Status    string `json:"status"` // queued, running, input_requested or done
	StartedAt string `json:"started_at,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms"`
	LastLine  string `json:"last_output_line,omitempty"`
	// Progress is where a run of several blocks is: "block 7 of 11".
	Progress string `json:"progress,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Password bool   `json:"password,omitempty"`
	// Task is set for a run that a client follows as an MCP task.
	Task bool `json:"task,omitempty"`
}

func (r *Run) View() RunView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.viewLocked()
}

func (r *Run) viewLocked() RunView {
	v := RunView{RunID: r.id, Tool: r.tool, Status: r.state, LastLine: r.lastLine, Task: r.task}
	if r.state != StatusDone {
		v.Progress = r.progress
		if r.startNote != "" {
			v.Progress = r.startNote
		}
	}
	if !r.started.IsZero() {
		v.StartedAt = r.started.UTC().Format(time.RFC3339Nano)
		end := r.ended
		if end.IsZero() {
			end = time.Now()
		}
		v.ElapsedMS = end.Sub(r.started).Milliseconds()
	}
	if r.input != nil && !r.input.answered {
		v.Prompt, v.Password = r.input.Req.Prompt, r.input.Req.Password
	}
	return v
}

// currentRun is the run holding the session's execution right, if any.
func (ss *Session) CurrentRun() *Run {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.current
}

// findRun returns the run with id, or the session's latest when id is "".
func (ss *Session) FindRun(id string) (*Run, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.runs) == 0 {
		return nil, fmt.Errorf("session %q has no runs yet: run_code starts one", ss.id)
	}
	if id == "" {
		return ss.runs[len(ss.runs)-1], nil
	}
	for _, r := range ss.runs {
		if r.id == id {
			return r, nil
		}
	}
	ids := make([]string, len(ss.runs))
	for i, r := range ss.runs {
		ids[i] = r.id
	}
	return nil, fmt.Errorf("no run %q in session %q; its runs: %s (the last %d are kept)", id, ss.id, strings.Join(ids, ", "), keepRuns)
}

// Runs returns the runs the session remembers, oldest first: those queued
// or running, and the last finished ones (wait_run can still return them).
func (ss *Session) Runs() []*Run {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]*Run(nil), ss.runs...)
}

// askingRun is the session's oldest run with an unanswered question, or
// nil: the one send_input answers when no run is named.
func (ss *Session) AskingRun() *Run {
	ss.mu.Lock()
	runs := append([]*Run(nil), ss.runs...)
	ss.mu.Unlock()
	for _, r := range runs {
		if r.PendingQuestion() != nil {
			return r
		}
	}
	return nil
}

// queuedRuns counts the session's runs waiting for their turn.
func (ss *Session) QueuedRuns() int {
	ss.mu.Lock()
	runs := append([]*Run(nil), ss.runs...)
	ss.mu.Unlock()
	n := 0
	for _, r := range runs {
		r.mu.Lock()
		if r.state == StatusQueued {
			n++
		}
		r.mu.Unlock()
	}
	return n
}

func (r *Run) setExecuting(on bool) {
	r.mu.Lock()
	r.executing = on
	r.mu.Unlock()
}

// Executing reports whether one of the run's blocks is in the kernel now
// (not starting a kernel, not rendering), or the run waits for the server
// its kernel runs on to start: progress is reported then.
func (r *Run) Executing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.executing || r.startNote != ""
}

// setStartNote sets the run's start note ("" when the start is over).
func (r *Run) setStartNote(note string) {
	r.mu.Lock()
	r.startNote = note
	r.mu.Unlock()
}
