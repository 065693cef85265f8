package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Reads during a run. While a run executes, get_value, list_variables,
// inspect, complete and session_status's probe need not wait for its end:
// on a kernel with subshells (JEP 91, ipykernel 7) they run on a subshell of
// the session's own, a thread of the kernel that shares the namespace. Each
// session has at most one, created on the first read during a run; it dies
// with its kernel process. What changes the session (runs, the data tools
// that define names, resets) still queues.
//
// A read on the subshell runs silently (no execution count, no history):
// the helper's reply comes back through user_expressions, and the cell
// itself (py/subshell_guard.py) makes IPython skip its pre/post_execute
// hooks on the reading thread, so that matplotlib's inline backend never
// shows or closes the run's figures from there.

// SubshellReadWait bounds a read on the subshell. Code holding the GIL in
// native code (a C extension, a long regular expression) stops every thread
// of the kernel, subshells included: the read gives up after this long, says
// so, and nothing is interrupted.
const SubshellReadWait = 5 * time.Second

// subshellCreateWait bounds create_subshell_request: a kernel that
// advertises subshells behind a server that does not pass the request on
// never answers it, and reads then queue as on a kernel without subshells.
const subshellCreateWait = 3 * time.Second

// subshellState is a session's subshell on one kernel process.
type subshellState struct {
	k   *kernel.Kernel
	gen int // the session's kernel generation it belongs to
	sub *kernel.Subshell
	// none says why reads cannot go beside a run on this kernel process;
	// they queue then. With retry set it holds only for noneRun: through a
	// gateway, an unanswered create_subshell_request is tried again during
	// a later run.
	none    string
	retry   bool
	noneRun *Run
	// creating is closed when the create_subshell_request in flight is
	// answered or given up; nil when none is.
	creating chan struct{}
	// slot is held while a request is in the subshell. Requests run in
	// order within a subshell, so one that the kernel has not answered
	// (stalled behind native code) would hold up every later one: reads
	// send nothing while it is there.
	slot chan struct{}
	// dropped is set when the session forgot st (its kernel is being
	// closed): a create answered after that deletes what it made.
	dropped bool
}

// Beside is a read that runs beside the session's run in progress, on the
// session's subshell.
type Beside struct {
	ss  *Session
	st  *subshellState
	sub *kernel.Subshell
	run *Run
	// place is the caller's place in the session's order, given up once
	// the read has the subshell (ReadBeside).
	place Place
	once  sync.Once
	// waited is how long the read waited for the run's kernel to start
	// (what), before it could go beside the run.
	waited time.Duration
	what   string
}

// Release gives the caller's place up, if the read still holds it: once
// the read has been sent, or when it is not sent at all.
func (b *Beside) Release() {
	b.once.Do(func() {
		if b.place != nil {
			b.place.Done()
		}
	})
}

// RunID is the run the read went beside.
func (b *Beside) RunID() string { return b.run.id }

// Note is what a result read beside the run says about itself.
func (b *Beside) Note() string {
	note := fmt.Sprintf("Read during run %s, which is still going: values may change.", b.run.id)
	if b.what != "" {
		note += fmt.Sprintf(" The read first waited %v for %s.", b.waited.Round(100*time.Millisecond), b.what)
	}
	return note
}

// readiness is what a read that would go beside a run waits on while the
// run's kernel is not ready for a subshell request: starting, restarting,
// or not yet prepared (guardParent).
type readiness struct {
	mu sync.Mutex
	// changed is closed, and replaced, when the session's kernel, its
	// preparation or the job holding its turn may have changed.
	changed    chan struct{}
	restarting bool // restartKernel is giving the session a fresh process
	// waiting counts the reads waiting now.
	waiting atomic.Int32
}

// signal wakes the reads waiting on rd.
func (rd *readiness) signal() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.changed != nil {
		close(rd.changed)
		rd.changed = nil
	}
}

// next is closed at the next signal.
func (rd *readiness) next() <-chan struct{} {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.changed == nil {
		rd.changed = make(chan struct{})
	}
	return rd.changed
}

func (rd *readiness) setRestarting(on bool) {
	rd.mu.Lock()
	rd.restarting = on
	rd.mu.Unlock()
	rd.signal()
}

// headRun is the run holding the session's execution right, or waiting to
// take it up: a read can go beside it whether it executes a block, starts
// or restarts its kernel, or is between two blocks. pending is set when the
// head of the queue is a run's job whose run StartRun has not registered
// yet. Nil when the queue is empty or other work (a reset, a query) holds it.
func (ss *Session) headRun() (r *Run, pending bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.queue) == 0 || !ss.queue[0].run {
		return nil, false
	}
	j := ss.queue[0]
	for _, r := range ss.runs {
		if r.job == j {
			return r, false
		}
	}
	return nil, true
}

// kernelReady is the run a read may go beside and the kernel process it
// would read from (k, gen). When that kernel cannot take a subshell
// request yet, what says what the read waits for instead; r is nil when no
// run holds the turn.
func (ss *Session) kernelReady() (r *Run, k *kernel.Kernel, gen int, what string) {
	r, pending := ss.headRun()
	if pending {
		return nil, nil, 0, "the run to start"
	}
	if r == nil {
		return nil, nil, 0, ""
	}
	ss.rd.mu.Lock()
	restarting := ss.rd.restarting
	ss.rd.mu.Unlock()
	ss.mu.Lock()
	k, gen, starting := ss.k, ss.gen, ss.starting
	ss.mu.Unlock()
	switch {
	case restarting:
		return r, nil, 0, "the session's kernel to restart"
	case starting || k == nil:
		// A run that holds the turn without a kernel is about to start
		// one, or ends (and the read then takes its turn).
		return r, nil, 0, "the session's kernel to start"
	}
	if down, _ := kernelDown(k); down {
		// The run finds it dead, and starts the next one or ends.
		return r, nil, 0, "the session's kernel to start"
	}
	if k.HasSubshells() && !k.Attached() {
		// A kernel this server started is prepared as part of its start
		// (Session.prepare). One it attached to is prepared by the run's
		// first block: a read before that waits for the run (besideOn).
		ss.subMu.Lock()
		g := ss.parent
		ss.subMu.Unlock()
		if g.k != k || g.gen != gen {
			return r, nil, 0, "the session's kernel to start"
		}
	}
	return r, k, gen, ""
}

// awaitKernel waits, at most Config.MaxWait, until the run holding the
// session's turn has a kernel that can take a subshell request, or no run
// holds the turn any more (r is nil then): it waits for the kernel's start,
// never for the run. With wait unset it only looks: r is nil unless the
// kernel is ready now. waited and what say how long it waited, and for
// what; err says it gave up.
func (ss *Session) awaitKernel(ctx context.Context, wait bool) (r *Run, k *kernel.Kernel, gen int, waited time.Duration, what string, err error) {
	begun := time.Now()
	var t *time.Timer
	for {
		changed := ss.rd.next()
		r, k, gen, w := ss.kernelReady()
		if w == "" {
			if t != nil {
				waited = time.Since(begun)
			}
			return r, k, gen, waited, what, nil
		}
		if !wait {
			return nil, nil, 0, 0, "", nil
		}
		what = w
		if t == nil {
			t = time.NewTimer(ss.eng.cfg.MaxWait)
			defer t.Stop()
			ss.rd.waiting.Add(1)
			defer ss.rd.waiting.Add(-1)
		}
		select {
		case <-changed:
		case <-t.C:
			held := "the run ahead of it"
			if r != nil {
				held = "run " + r.id
			}
			return nil, nil, 0, time.Since(begun), what, fmt.Errorf("session %q: the read waited %v for %s (for %s), and gave up; nothing was read. "+
				"A read waits for the kernel's start, not for the run: once the kernel is up it reads beside the run at once. Try again shortly",
				ss.id, ss.eng.cfg.MaxWait, what, held)
		case <-ctx.Done():
			return nil, nil, 0, time.Since(begun), what, fmt.Errorf("session %q: the read was cancelled while it waited for %s (%v)", ss.id, what, ctx.Err())
		case <-ss.eng.ctx.Done():
			return nil, nil, 0, time.Since(begun), what, errShuttingDown
		}
	}
}

// Beside returns a Beside for a read while a run holds the session's turn
// (executing a block, between two, or before its first) and its kernel has
// subshells, creating the session's subshell on first use. While that
// kernel starts or restarts, it waits for it (at most Config.MaxWait), not
// for the run. Otherwise it returns nil, and why (empty when no run holds
// the turn). err is set when the read can neither go beside the run nor
// usefully wait for it: the kernel's start outlasted Config.MaxWait, or the
// kernel does not answer at all (code holding the GIL).
func (ss *Session) Beside(ctx context.Context) (*Beside, string, error) {
	return ss.beside(ctx, true)
}

// BesideNow is Beside without the wait for a kernel that starts: b is nil
// then, and why empty.
func (ss *Session) BesideNow(ctx context.Context) (*Beside, string, error) {
	return ss.beside(ctx, false)
}

func (ss *Session) beside(ctx context.Context, wait bool) (*Beside, string, error) {
	r, k, gen, waited, what, err := ss.awaitKernel(ctx, wait)
	if err != nil || r == nil {
		return nil, "", err
	}
	b, why, err := ss.besideOn(ctx, r, k, gen)
	if b != nil && waited > 0 {
		b.waited, b.what = waited, what
	}
	return b, why, err
}

// besideOn is Beside once run r holds the turn and its kernel process (k,
// gen) can take a subshell request.
func (ss *Session) besideOn(ctx context.Context, r *Run, k *kernel.Kernel, gen int) (*Beside, string, error) {
	ss.subMu.Lock()
	defer ss.subMu.Unlock()
	st := ss.sub
	if st == nil || st.k != k || st.gen != gen {
		// A new kernel process: the old subshell went with the old one.
		st = &subshellState{k: k, gen: gen, slot: make(chan struct{}, 1)}
		ss.sub = st
	}
	if st.retry && st.noneRun != r && st.sub == nil {
		st.none, st.retry, st.noneRun = "", false, nil
	}
	if g := ss.parent; k.HasSubshells() && (g.k != k || g.gen != gen || g.err != "") {
		// A read on a subshell before py/subshell_parent.py is in place
		// would take the output of the run's threads from it.
		if g.k == k && g.gen == gen {
			return nil, fmt.Sprintf("this kernel could not be prepared for reads beside a run when the run started (%s)", g.err), nil
		}
		return nil, "the run started before this kernel was prepared for reads beside a run", nil
	}
	if st.sub == nil && st.none == "" && st.creating == nil {
		if !k.HasSubshells() {
			impl := k.Implementation()
			switch {
			case impl == "":
				st.none = "this kernel has no subshells (its kernel_info lists no \"kernel subshells\")"
			case strings.HasPrefix(impl, "ipython"):
				st.none = fmt.Sprintf("this kernel has no subshells: an ipykernel older than 7 (%s)", strings.Replace(impl, "ipython", "IPython", 1))
			default:
				st.none = fmt.Sprintf("this kernel has no subshells (%s)", impl)
			}
		} else {
			ss.createSubshell(st)
		}
	}
	if pending := st.creating; pending != nil && st.sub == nil && st.none == "" {
		t := time.NewTimer(subshellCreateWait)
		ss.subMu.Unlock()
		select {
		case <-pending:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		ss.subMu.Lock()
		switch {
		case st.sub != nil:
		case ctx.Err() != nil:
			return nil, "", fmt.Errorf("session %q: the read was cancelled (%v)", ss.id, ctx.Err())
		case st.creating == nil:
			// Answered, with an error: st.none says it.
		case k.GatewayURL() == "":
			// Over ZeroMQ the request reached the kernel: it does not
			// answer because its threads are stalled.
			return nil, "", stalledError(ss.id, r.id, "did not answer create_subshell_request within "+subshellCreateWait.String())
		default:
			// Through a gateway, the request may have been dropped. The
			// read waits for the run; should the answer come after all,
			// later reads go beside, and a later run tries again.
			st.retry, st.noneRun = true, r
			st.none = fmt.Sprintf("the kernel advertises subshells, but create_subshell_request got no answer through the gateway within %v (it may not pass subshell messages on, or the run holds the GIL)", subshellCreateWait)
		}
	}
	if st.sub == nil {
		return nil, st.none, nil
	}
	return &Beside{ss: ss, st: st, sub: st.sub, run: r}, "", nil
}

// createSubshell sends create_subshell_request for st, called with subMu
// held. The answer is waited for on a goroutine of its own until it comes
// or the kernel process ends: a kernel stalled by the run answers late, and
// a late answer still gives the session its subshell. Only through a
// gateway, which may drop the request, is the wait bounded (QueryTimeout).
func (ss *Session) createSubshell(st *subshellState) {
	done := make(chan struct{})
	st.creating = done
	go func() {
		defer close(done)
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if st.k.GatewayURL() != "" {
			ctx, cancel = context.WithTimeout(ctx, QueryTimeout)
		}
		defer cancel()
		sub, err := st.k.CreateSubshell(ctx)
		ss.subMu.Lock()
		st.creating = nil
		if err == nil && st.dropped {
			ss.subMu.Unlock()
			// The session forgot st while the kernel was being closed.
			// One this server attached to lives on, and so would the
			// subshell.
			if st.k.Attached() {
				dctx, dcancel := context.WithTimeout(context.Background(), subshellCreateWait)
				_ = st.k.DeleteSubshell(dctx, sub)
				dcancel()
			}
			return
		}
		defer ss.subMu.Unlock()
		switch {
		case err == nil:
			st.sub, st.none = sub, ""
		case errors.Is(err, context.DeadlineExceeded):
			st.retry, st.noneRun = true, nil
			st.none = fmt.Sprintf("the kernel advertises subshells, but create_subshell_request got no answer through the gateway in %v", QueryTimeout)
		default:
			st.none = fmt.Sprintf("the kernel could not create a subshell (%v)", err)
		}
	}()
}

// ReadBeside is for a read (get_value, list_variables) that may go beside
// the run in progress. It waits for the caller's place; then, when a run
// holds the session's turn, nothing else waits for the session, and the
// kernel has subshells, it returns b, which holds the place until the
// kernel has taken the read up or the read is over (b.Release). A kernel
// that the run starts or restarts is waited for (Beside), the place held
// meanwhile. Otherwise b is nil and the place is kept for the caller's
// WaitTurn; waited says why the read waits, when that is behind a run.
func (s *Engine) ReadBeside(ctx context.Context, ss *Session, place Place) (b *Beside, waited string, err error) {
	if place != nil {
		if err := place.Wait(ctx); err != nil {
			place.Done()
			return nil, "", fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", ss.id, err)
		}
	}
	// The caller's place has come: every earlier call has joined the
	// queue, so a queue of one is the run alone.
	if ss.queueLen() > 1 {
		if r, _ := ss.headRun(); r != nil {
			return nil, fmt.Sprintf("Waited for run %s to end: calls sent before it were queued behind the run.", r.id), nil
		}
		return nil, "", nil
	}
	b, why, err := ss.Beside(ctx)
	if b != nil {
		// The read gives the place up once it has the subshell, so that
		// nothing sent after it goes first.
		b.place = place
		return b, "", nil
	}
	if err != nil {
		if place != nil {
			place.Done()
		}
		return nil, "", err
	}
	r, _ := ss.headRun()
	if why == "" || r == nil {
		return nil, "", nil
	}
	return nil, fmt.Sprintf("Waited for run %s to end: %s.", r.id, why), nil
}

// errStalled is a read the kernel did not answer within SubshellReadWait;
// queued is set when an earlier read still held the subshell, running when
// the kernel had taken the read up (it is the read that is slow).
type errStalled struct{ queued, running bool }

func (errStalled) Error() string { return "stalled" }

// do runs f, which sends one request to the subshell, within
// SubshellReadWait. f runs on a goroutine of its own that outlives the
// call when the kernel is slow: it ends when the kernel answers or the
// kernel process ends; until then it holds the subshell (the kernel still
// holds the request), and later reads give up rather than queue behind it.
func (b *Beside) do(ctx context.Context, f func(ctx context.Context, started func()) error) error {
	t := time.NewTimer(SubshellReadWait)
	defer t.Stop()
	defer b.Release()
	select {
	case b.st.slot <- struct{}{}:
	case <-t.C:
		return errStalled{queued: true}
	case <-ctx.Done():
		return ctx.Err()
	}
	done := make(chan error, 1)
	var running atomic.Bool
	go func() {
		defer func() { <-b.st.slot }()
		done <- f(context.Background(), func() {
			running.Store(true)
			b.Release() // the kernel has the read
		})
	}()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errStalled{running: running.Load()}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errGone is a read whose subshell the kernel no longer has: the kernel
// was restarted by whoever owns it, or another client deleted the subshell.
var errGone = errors.New("subshell gone")

// subshellListWait bounds the list_subshell_request that tells apart why
// the kernel did not take a read up: the control channel answers it unless
// the run holds the GIL.
const subshellListWait = time.Second

// forget drops the session's subshell when the kernel no longer has it, so
// that the next read makes a new one.
func (b *Beside) forget() {
	b.ss.subMu.Lock()
	if b.st.sub == b.sub {
		b.st.sub = nil
	}
	b.ss.subMu.Unlock()
}

// gone reports whether err, or, for a read the kernel did not take up, the
// kernel's list of subshells, says that the session's subshell is gone;
// listed is set when the kernel answered that list.
func (b *Beside) gone(err error) (gone, listed bool) {
	var ee *kernel.ExecError
	if errors.Is(err, errGone) || (errors.As(err, &ee) && ee.EName == "UnknownSubshellError") {
		return true, false
	}
	var st errStalled
	if !errors.As(err, &st) || st.running {
		return false, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), subshellListWait)
	defer cancel()
	ids, lerr := b.st.k.ListSubshells(ctx)
	if lerr != nil {
		return false, false
	}
	return !slices.Contains(ids, b.sub.ID()), true
}

// fail says what went wrong with a read beside the run.
func (b *Beside) fail(err error) error {
	var st errStalled
	gone, listed := b.gone(err)
	switch {
	case gone:
		b.forget()
		return fmt.Errorf("session %q: the kernel no longer has the session's subshell (whoever owns the kernel restarted it, or another client deleted the subshell); nothing was read. Try the read again: it makes a new one", b.ss.id)
	case errors.As(err, &st) && !st.running && listed:
		what := "did not take the read up"
		if st.queued {
			what = "is still busy with an earlier read"
		}
		return fmt.Errorf("session %q: the session's subshell %s after %v, while the kernel still answers on its control channel (the run does not hold the GIL; an earlier read may be slow, or the machine loaded); nothing was interrupted. Try the read again, or call wait_run: once the run has ended, reads queue for their turn as usual", b.ss.id, what, SubshellReadWait)
	case errors.As(err, &st) && st.running:
		return fmt.Errorf("session %q: the read is still running after %v beside run %s (the expression itself is slow); the bound is on this wait, and the read goes on in the kernel. Nothing was interrupted, and interrupt_session would not stop the read (it runs beside the run, not on the main thread); reset_session does. Later reads wait for it or give up; call wait_run, and read once the run has ended", b.ss.id, SubshellReadWait, b.run.id)
	case errors.As(err, &st):
		what := "did not answer within " + SubshellReadWait.String()
		if st.queued {
			what = "is still busy with an earlier read after " + SubshellReadWait.String()
		}
		return stalledError(b.ss.id, b.run.id, what)
	case errors.Is(err, kernel.ErrSubshellGone), errors.Is(err, kernel.ErrKernelDied):
		return fmt.Errorf("session %q: the kernel restarted or died during the read (%v); nothing was read", b.ss.id, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("session %q: the read was cancelled (%v); the run goes on, nothing was interrupted", b.ss.id, err)
	}
	return fmt.Errorf("session %q: %v", b.ss.id, err)
}

// stalledError says that a read gave up on a kernel whose threads are
// stalled by the run.
func stalledError(session, run, what string) error {
	return fmt.Errorf("session %q: the kernel %s while run %s goes on: the run keeps the GIL from the kernel's other threads: native code holding it (a C extension, a long regular expression), or a loop that gives it up and takes it back at once, thousands of times a second (small file-system or socket calls, time.sleep(0)). Nothing was interrupted. Try the read again, or call wait_run: once the run has ended, reads queue for their turn as usual", session, what, run)
}

// noInput answers input() in a read with end of input. A read still sends
// allow_stdin: ipykernel keeps that flag for the whole kernel, and a read
// without it would make the run's later input() fail.
func noInput(context.Context, kernel.InputRequest) (string, error) {
	return "", errors.New("a read cannot ask for input")
}

// guardCode is the cell of every read on the subshell (py/subshell_guard.py,
// in a dict of its own). The read first waits in the kernel, at most 3 s,
// until the kernel's count of input() calls that returned reaches
// answered: the code has then taken every answer sent before the read.
func guardCode(answered int64) string {
	return "exec(compile(" + PyString(subshellGuard) + `, "<kernel-mcp>", "exec"), {"_km_answers": ` + strconv.FormatInt(answered, 10) + `})`
}

// answered is the count of the kernel's returned input() calls (as
// py/subshell_parent.py counts them) that every answer given so far makes:
// the count when the guard went in, plus the answers since. It is 0 when
// the kernel keeps no count (nothing to wait for).
func (b *Beside) answered() int64 {
	b.ss.subMu.Lock()
	g := b.ss.parent
	b.ss.subMu.Unlock()
	if g.k != b.st.k || g.gen != b.st.gen || g.inputs < 0 {
		return 0
	}
	return g.inputs + b.ss.answers.Load() - g.answers
}

// execute runs expr on the subshell, as the user_expression of a silent
// cell (no execution count, no history) that keeps IPython's hooks off the
// reading thread.
func (b *Beside) execute(ctx context.Context, expr string) (*kernel.ExecuteResult, error) {
	var res *kernel.ExecuteResult
	err := b.do(ctx, func(c context.Context, started func()) error {
		r, err := b.st.k.Execute(c, guardCode(b.answered()), kernel.ExecuteOptions{
			Silent: true, NoStoreHistory: true, Subshell: b.sub, OnInput: noInput, OnBusy: started,
			UserExpressions: map[string]string{"km": expr},
			MaxOutputs:      100, MaxStreamBytes: 64 << 10,
		})
		res = r
		return err
	})
	if err != nil {
		return nil, b.fail(err)
	}
	return res, nil
}

// Query is Session.Query beside the run: helper src runs on the subshell,
// its reply read through user_expressions.
func (b *Beside) Query(ctx context.Context, src string, args map[string]any) (json.RawMessage, error) {
	if lang := b.ss.Describe().Language; lang != "" && lang != "python" {
		return nil, fmt.Errorf("session %q runs %s; this tool needs a Python (IPython) kernel", b.ss.id, lang)
	}
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	expr := `(lambda d: (exec(compile(` + PyString(src) + `, "<kernel-mcp>", "exec"), d), d["_km_reply"])[1])({"_km_args": ` + PyString(string(a)) + `, "_km_ns": globals(), "_km_reply": None})`
	res, err := b.execute(ctx, expr)
	if err != nil {
		return nil, err
	}
	var ue struct {
		Status string                     `json:"status"`
		EName  string                     `json:"ename"`
		EValue string                     `json:"evalue"`
		Data   map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(res.UserExpressions["km"], &ue); err != nil {
		return nil, fmt.Errorf("session %q: bad reply from the kernel: %v", b.ss.id, err)
	}
	if ue.Status == "error" {
		return nil, &PyError{EName: ue.EName, EValue: history.PlainText(ue.EValue)}
	}
	if raw, ok := ue.Data[ResultMIME]; ok {
		return raw, nil
	}
	return nil, fmt.Errorf("session %q: the kernel gave no result", b.ss.id)
}

// Probe runs src (session_status's probe) on the subshell in a dict of its
// own, and returns what it printed.
func (b *Beside) Probe(ctx context.Context, src string) (string, error) {
	res, err := b.execute(ctx, `(lambda d: exec(compile(`+PyString(src)+`, "<kernel-mcp>", "exec"), d))({})`)
	if err != nil {
		return "", err
	}
	return StreamText(res, "stdout"), nil
}

// Complete asks the subshell for completions.
func (b *Beside) Complete(ctx context.Context, code string, cursorPos int) (*kernel.CompleteReply, error) {
	return ask(ctx, b, func(c context.Context, opts ...kernel.RequestOption) (*kernel.CompleteReply, string, error) {
		r, err := b.st.k.Complete(c, code, cursorPos, opts...)
		if err != nil {
			return nil, "", err
		}
		return r, r.Status, nil
	})
}

// ask sends one request with a status in its reply (complete, inspect) to
// the subshell: send makes it with the options that put it there. A reply
// with status "error" is errorReply's error.
func ask[R any](ctx context.Context, b *Beside, send func(ctx context.Context, opts ...kernel.RequestOption) (*R, string, error)) (*R, error) {
	var r *R
	err := b.do(ctx, func(c context.Context, started func()) error {
		reply, status, err := send(c, kernel.OnSubshell(b.sub), kernel.OnBusy(started))
		if err != nil {
			return err
		}
		if status == "error" {
			return b.errorReply()
		}
		r = reply
		return nil
	})
	if err != nil {
		return nil, b.fail(err)
	}
	return r, nil
}

// errorReply is the error of a complete or inspect reply with status
// "error" on the subshell: errGone when the kernel no longer lists the
// subshell (ipykernel answers UnknownSubshellError then).
func (b *Beside) errorReply() error {
	ctx, cancel := context.WithTimeout(context.Background(), subshellListWait)
	defer cancel()
	if ids, err := b.st.k.ListSubshells(ctx); err == nil && !slices.Contains(ids, b.sub.ID()) {
		return errGone
	}
	return errors.New("the kernel answered with an error")
}

// Inspect asks the subshell for the kernel's help on a name.
func (b *Beside) Inspect(ctx context.Context, code string, cursorPos, detailLevel int) (*kernel.InspectReply, error) {
	return ask(ctx, b, func(c context.Context, opts ...kernel.RequestOption) (*kernel.InspectReply, string, error) {
		r, err := b.st.k.Inspect(c, code, cursorPos, detailLevel, opts...)
		if err != nil {
			return nil, "", err
		}
		return r, r.Status, nil
	})
}

// dropSubshell forgets the session's subshell before its kernel k is
// closed. A kernel this server started takes its subshells with it; one it
// attached to may live on, so its subshell is deleted, unless a read still
// holds it (deleting a busy subshell waits for it, and would hold up the
// kernel's control channel).
func (ss *Session) dropSubshell(k *kernel.Kernel) {
	ss.subMu.Lock()
	st := ss.sub
	ss.sub = nil
	var sub *kernel.Subshell
	if st != nil {
		st.dropped = true
		sub = st.sub
	}
	ss.subMu.Unlock()
	if sub == nil || st.k != k || !k.Attached() {
		return
	}
	select {
	case st.slot <- struct{}{}:
		ctx, cancel := context.WithTimeout(context.Background(), subshellCreateWait)
		_ = k.DeleteSubshell(ctx, sub)
		cancel()
		<-st.slot
	default:
	}
}

// parentGuard is the kernel process (and session generation) on whose main
// shell py/subshell_parent.py ran, or why it could not.
type parentGuard struct {
	k   *kernel.Kernel
	gen int
	err string
	// inputs is the kernel's count of returned input() calls when the
	// guard went in (-1 when it keeps none), answers the session's count
	// of answers then.
	inputs, answers int64
}

// parentGuardCode installs py/subshell_parent.py, in a dict of its own.
var parentGuardCode = "exec(compile(" + PyString(subshellParent) + `, "<kernel-mcp>", "exec"), {})`

// guardParent readies a kernel with subshells for reads beside the run
// about to start, once per kernel process: it runs py/subshell_parent.py
// on the main shell, which is idle, before the run and so before any read
// beside it. A read on a subshell then leaves the kernel-wide parent of
// output and input to the run, and the output of the run's threads and of
// its subprocesses stays the run's. Reads go beside a run only once this
// has succeeded.
func (ss *Session) guardParent(ctx context.Context, k *kernel.Kernel, gen int) {
	if !k.HasSubshells() {
		return
	}
	ss.subMu.Lock()
	done := ss.parent.k == k && ss.parent.gen == gen && ss.parent.err == ""
	ss.subMu.Unlock()
	if done {
		return
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := k.Execute(c, parentGuardCode, kernel.ExecuteOptions{
		Silent: true, NoStoreHistory: true, MaxOutputs: 10, MaxStreamBytes: 4 << 10,
		UserExpressions: map[string]string{"ok": "get_ipython().kernel.set_parent._km_guard", "inputs": "get_ipython().kernel._km_inputs_done"},
	})
	answers := ss.answers.Load()
	why, inputs := "", int64(-1)
	if err != nil {
		why = err.Error()
	} else {
		var ue struct {
			Status string `json:"status"`
			EName  string `json:"ename"`
			EValue string `json:"evalue"`
		}
		if jerr := json.Unmarshal(res.UserExpressions["ok"], &ue); jerr != nil {
			why = "bad reply: " + jerr.Error()
		} else if ue.Status != "ok" {
			why = ue.EName + ": " + history.PlainText(ue.EValue)
		}
		inputs = inputCount(res.UserExpressions["inputs"])
	}
	ss.subMu.Lock()
	ss.parent = parentGuard{k: k, gen: gen, err: why, inputs: inputs, answers: answers}
	ss.subMu.Unlock()
	ss.rd.signal() // a read waiting for the kernel to be ready
}

// inputCount reads the user_expression of the kernel's count of returned
// input() calls: -1 when it has none.
func inputCount(raw json.RawMessage) int64 {
	var ue struct {
		Status string `json:"status"`
		Data   struct {
			Plain string `json:"text/plain"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &ue) != nil || ue.Status != "ok" {
		return -1
	}
	n, err := strconv.ParseInt(ue.Data.Plain, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
