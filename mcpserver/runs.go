package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Long runs. An MCP client gives up on a call after its own timeout (60 s in
// the official TypeScript SDK) and then cancels it. So every execution is a
// run with an id that belongs to its session, not to the call or the
// connection: the call that starts it waits at most Config.MaxWait, then
// hands the run off with the output so far, and wait_run picks it up from any
// connection. Before the hand-off, cancelling the call interrupts the run as
// it always did; after it, only interrupt_session and the run's own timeout
// stop it.

// Run states.
const (
	runQueued         = "queued"
	runRunning        = "running"
	runInputRequested = "input_requested"
	runDone           = "done"
)

// keepRuns is how many finished runs a session remembers for wait_run.
const keepRuns = 32

// maxPendingOutput bounds the output a run keeps between two wait_run calls;
// beyond it the middle is left out (the final result still has all that
// history keeps).
const maxPendingOutput = 1 << 20

// runFunc does a run's work in its turn. ctx ends when the run is
// interrupted by its caller's cancellation (before hand-off) or the server
// stopping.
type runFunc func(ctx context.Context, r *run) (*mcp.CallToolResult, any, error)

// run is one execution queued in a session.
type run struct {
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
	listeners []*attachment // calls waiting on the run, oldest first; the newest listens
	input     *pendingInput
	inputSeq  int
	res       *mcp.CallToolResult
	out       any
	err       error
}

// attachment is the call now waiting on a run: progress notifications and
// elicitation go to it.
type attachment struct {
	session *mcp.ServerSession
	token   any // progress token; nil when the call asked for none
	ticks   int
}

// pendingInput is a question the code asked through input() or getpass().
type pendingInput struct {
	req      kernel.InputRequest
	seq      int              // the run's questions are numbered from 1
	answer   chan inputAnswer // capacity 1: the first answer wins
	answered bool             // an answer is on its way to the code
}

type inputAnswer struct {
	text string
	err  error
}

var (
	errInputDeclined  = errors.New("the user declined to answer")
	errInputCancelled = errors.New("the user dismissed the question")
)

func attachmentOf(req *mcp.CallToolRequest) *attachment {
	if req == nil || req.Session == nil {
		return nil
	}
	return &attachment{session: req.Session, token: req.Params.GetProgressToken()}
}

// startRun joins the call's place in the session's queue and starts fn as a
// run in its turn. The run is the session's from now on: it goes on whatever
// happens to the call, unless the call cancels it before hand-off.
func (s *Server) startRun(ctx context.Context, req *mcp.CallToolRequest, ss *Session, tool string, fn runFunc) (*run, error) {
	j, err := s.join(ctx, ss, req.Params.Meta)
	if err != nil {
		return nil, fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", ss.id, err)
	}
	rctx, cancel := context.WithCancel(s.ctx)
	r := &run{ss: ss, tool: tool, job: j, ctx: rctx, cancel: cancel, done: make(chan struct{}),
		created: time.Now(), state: runQueued, changed: make(chan struct{}), shownSum: newStreamHash()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		ss.leave(j)
		return nil, errors.New("server is shutting down")
	}
	s.runs.Add(1)
	s.mu.Unlock()
	ss.mu.Lock()
	ss.runSeq++
	r.id = fmt.Sprintf("r%d", ss.runSeq)
	ss.runs = append(ss.runs, r)
	ss.forgetOldRuns()
	ss.mu.Unlock()
	go r.execute(s, fn)
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

func (r *run) execute(s *Server, fn runFunc) {
	defer s.runs.Done()
	defer r.cancel()
	select {
	case <-r.job.turn:
	case <-r.ctx.Done():
	}
	if r.ctx.Err() != nil {
		r.ss.leave(r.job)
		r.finish(nil, nil, fmt.Errorf("run %s was cancelled before it started (it was queued behind earlier calls in session %q); nothing ran", r.id, r.ss.id))
		return
	}
	if err := r.ss.checkRegistered(); err != nil {
		r.ss.leave(r.job)
		r.finish(nil, nil, err)
		return
	}
	r.mu.Lock()
	r.state, r.started = runRunning, time.Now()
	r.signal()
	r.mu.Unlock()
	r.ss.mu.Lock()
	r.ss.current = r
	r.ss.mu.Unlock()
	res, out, err := fn(r.ctx, r)
	r.ss.mu.Lock()
	if r.ss.current == r {
		r.ss.current = nil
	}
	r.ss.mu.Unlock()
	r.ss.leave(r.job)
	r.finish(res, out, err)
}

func (r *run) finish(res *mcp.CallToolResult, out any, err error) {
	r.mu.Lock()
	r.res, r.out, r.err = res, out, err
	r.state, r.ended = runDone, time.Now()
	r.signal()
	r.mu.Unlock()
	close(r.done)
}

// signal wakes whoever waits on the run. Call with r.mu held.
func (r *run) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// event records a kernel event for wait_run and progress notifications.
func (r *run) event(e kernel.Event) {
	if e.Kind != "stream" || e.Output.Text == "" {
		return
	}
	text := e.Output.Text
	line := lastLine(text)
	r.mu.Lock()
	defer r.mu.Unlock()
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

// lastLine is the last non-empty line of a stream text, for list_sessions.
func lastLine(s string) string {
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

// takeOutput returns the output that arrived since the last take, as plain
// text, and marks it delivered.
func (r *run) takeOutput() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeOutputLocked()
}

func (r *run) takeOutputLocked() string {
	if len(r.pending) == 0 && !r.overflow {
		return ""
	}
	text := history.PlainText(string(r.pending))
	if r.overflow {
		text += fmt.Sprintf("\n[... %d bytes of output left out ...]\n", r.omitted) + history.PlainText(string(r.tail))
		r.shown = -1 // what was delivered is no longer a prefix of the output
	} else if r.shown >= 0 {
		r.shownSum.Write(r.pending)
		r.shown += len(r.pending)
	}
	r.pending, r.tail, r.omitted, r.overflow = r.pending[:0], r.tail[:0], 0, false
	return text
}

// attach makes a call the run's listener until detach. Calls waiting on
// one run at once (a run_code and a wait_run from another connection) stack:
// the newest listens, and when it leaves, the one before it again.
func (r *run) attach(a *attachment) (detach func()) {
	if a == nil {
		return func() {}
	}
	r.mu.Lock()
	r.listeners = append(r.listeners, a)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.listeners = slices.DeleteFunc(r.listeners, func(l *attachment) bool { return l == a })
		r.mu.Unlock()
	}
}

// listenerLocked is the call that gets the run's progress: the newest
// waiting, or nil.
func (r *run) listenerLocked() *attachment {
	if n := len(r.listeners); n > 0 {
		return r.listeners[n-1]
	}
	return nil
}

// awaitResult is why await returned.
type awaitResult int

const (
	awaitDone      awaitResult = iota // the run finished
	awaitInput                        // the run waits for an answer
	awaitTimeout                      // d passed
	awaitCancelled                    // ctx ended
)

// await waits up to d for the run to finish. It returns early when the run
// asks for input: the caller puts the question to the user or hands the run
// off for send_input.
func (r *run) await(ctx context.Context, d time.Duration, a *attachment) awaitResult {
	detach := r.attach(a)
	defer detach()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		r.mu.Lock()
		changed, asking := r.changed, r.input != nil && !r.input.answered
		r.mu.Unlock()
		if isClosed(r.done) {
			return awaitDone
		}
		if asking {
			return awaitInput
		}
		select {
		case <-r.done:
			return awaitDone
		case <-changed:
		case <-t.C:
			return awaitTimeout
		case <-ctx.Done():
			return awaitCancelled
		}
	}
}

// awaitStart waits, when the run's turn has come, until it has left the
// queued state (it starts, or fails to start). A run still behind earlier
// calls is not waited for.
func (r *run) awaitStart(ctx context.Context) {
	if !isClosed(r.job.turn) {
		return
	}
	for {
		r.mu.Lock()
		state, changed := r.state, r.changed
		r.mu.Unlock()
		if state != runQueued {
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

// progress sends notifications/progress with the newest output line, every
// second, to the call attached to the run, when it asked for progress.
func (r *run) progress() (stop func()) {
	stopc, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopc:
				return
			case <-t.C:
			}
			r.mu.Lock()
			a, line, started := r.listenerLocked(), r.lastLine, r.started
			if a != nil {
				a.ticks++
			}
			r.mu.Unlock()
			if a == nil || a.token == nil {
				continue
			}
			msg := line
			if msg == "" {
				msg = fmt.Sprintf("running for %d s", int(time.Since(started).Seconds()))
			}
			nctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
			a.session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: a.token, Progress: float64(a.ticks), Message: msg})
			cancel()
		}
	}()
	return func() {
		close(stopc)
		<-done
	}
}

// onInput waits for the answer to the code's input() or getpass(): from
// the user through elicitation (see attend) or from send_input. The run
// reads as input_requested meanwhile.
func (r *run) onInput(ctx context.Context, ir kernel.InputRequest) (string, error) {
	r.mu.Lock()
	r.inputSeq++
	in := &pendingInput{req: ir, seq: r.inputSeq, answer: make(chan inputAnswer, 1)}
	r.input = in
	r.state = runInputRequested
	r.signal()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.input == in {
			r.input = nil
		}
		if r.state == runInputRequested {
			r.state = runRunning
		}
		r.signal()
		r.mu.Unlock()
	}()
	select {
	case ans := <-in.answer:
		return ans.text, ans.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// answer gives the waiting question its reply; seq 0 answers whichever is
// open (send_input), another only that question (an elicitation's answer).
func (r *run) answer(seq int, ans inputAnswer) (kernel.InputRequest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.input
	if in == nil || in.answered || (seq != 0 && in.seq != seq) {
		return kernel.InputRequest{}, false
	}
	in.answered = true
	in.answer <- ans // never blocks: the first answer is the only one
	if r.state == runInputRequested {
		r.state = runRunning
	}
	r.signal()
	return in.req, true
}

// pendingQuestion is the open question, if any.
func (r *run) pendingQuestion() *pendingInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.input == nil || r.input.answered {
		return nil
	}
	return r.input
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
	Prompt    string `json:"prompt,omitempty"`
	Password  bool   `json:"password,omitempty"`
}

func (r *run) view() RunView {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := RunView{RunID: r.id, Tool: r.tool, Status: r.state, LastLine: r.lastLine}
	if !r.started.IsZero() {
		v.StartedAt = r.started.UTC().Format(time.RFC3339Nano)
		end := r.ended
		if end.IsZero() {
			end = time.Now()
		}
		v.ElapsedMS = end.Sub(r.started).Milliseconds()
	}
	if r.input != nil && !r.input.answered {
		v.Prompt, v.Password = r.input.req.Prompt, r.input.req.Password
	}
	return v
}

// currentRun is the run holding the session's execution right, if any.
func (ss *Session) currentRun() *run {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.current
}

// findRun returns the run with id, or the session's latest when id is "".
func (ss *Session) findRun(id string) (*run, error) {
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

// askingRun is the session's oldest run with an unanswered question, or
// nil: the one send_input answers when no run is named.
func (ss *Session) askingRun() *run {
	ss.mu.Lock()
	runs := append([]*run(nil), ss.runs...)
	ss.mu.Unlock()
	for _, r := range runs {
		if r.pendingQuestion() != nil {
			return r
		}
	}
	return nil
}

// queuedRuns counts the session's runs waiting for their turn.
func (ss *Session) queuedRuns() int {
	ss.mu.Lock()
	runs := append([]*run(nil), ss.runs...)
	ss.mu.Unlock()
	n := 0
	for _, r := range runs {
		r.mu.Lock()
		if r.state == runQueued {
			n++
		}
		r.mu.Unlock()
	}
	return n
}
