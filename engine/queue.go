package engine

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Each session has one queue. Whatever executes in the kernel or changes the
// session (a run, a reset, a delete, a data tool's query) is a job in it,
// and only the job at its head runs: that is the session's execution right.
// Calls join the queue in the order they arrived (see OrderedTransport), so
// a describe_data sent after a load_data runs after it even when the
// load_data's call handed its run off long ago.

// job is one place in a session's queue.
type job struct {
	turn    chan struct{} // closed when the job reaches the head of the queue
	deletes bool          // delete_session's: the session goes when it runs
	run     bool          // a run's (StartRun): reads may go beside it
}

func newJob() *job { return &job{turn: make(chan struct{})} }

// enqueue puts j at the end of the session's queue; at the head, it holds
// the execution right at once and the idle timer stops.
func (ss *Session) enqueue(j *job) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.queue = append(ss.queue, j)
	if len(ss.queue) == 1 {
		ss.stopIdleTimer()
		close(j.turn)
	}
}

// leave takes j out of the queue, passing the execution right on if j held
// it. When the queue empties, the idle timer starts. Leaving twice is
// harmless.
func (ss *Session) leave(j *job) {
	ss.mu.Lock()
	i := slices.Index(ss.queue, j)
	if i < 0 {
		ss.mu.Unlock()
		return
	}
	ss.queue = slices.Delete(ss.queue, i, i+1)
	if i == 0 && len(ss.queue) > 0 {
		close(ss.queue[0].turn)
	}
	empty := len(ss.queue) == 0
	ss.mu.Unlock()
	if i == 0 {
		ss.rd.signal() // a read waiting beside the run that held the turn
	}
	if empty {
		ss.armIdleTimer()
	}
}

// tryHold takes the execution right only if nothing holds it or waits for
// it, for work that must not queue (the idle timer).
func (ss *Session) tryHold() (*job, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.queue) > 0 {
		return nil, false
	}
	j := newJob()
	ss.queue = append(ss.queue, j)
	close(j.turn)
	return j, true
}

// deleteQueued reports whether a delete_session holds or waits for the
// session.
func (ss *Session) deleteQueued() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return slices.ContainsFunc(ss.queue, func(j *job) bool { return j.deletes })
}

// queueLen is the number of jobs holding or waiting for the session.
func (ss *Session) queueLen() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.queue)
}

// Place is a caller's place in line, taken when its request arrived (the
// adapter's ordering of requests): Wait returns once every caller of the
// session that arrived earlier has joined the queue, and Done gives the
// place up so that later callers can join behind. A nil Place joins at
// once.
type Place interface {
	Wait(ctx context.Context) error
	Done()
}

// join puts a caller in its session's queue in the order it arrived: it
// waits for its place (callers that arrived earlier join first), joins, and
// gives the place up at once so that later callers can join behind it.
func (s *Engine) join(ctx context.Context, ss *Session, place Place, j *job) error {
	if place != nil {
		defer place.Done()
		if err := place.Wait(ctx); err != nil {
			return err
		}
	}
	ss.enqueue(j)
	return nil
}

// WaitTurn is for work that is not a run (resets, deletes, queries): it
// joins the queue and waits for the execution right, at most Config.MaxWait
// so that no call outlasts the client's patience behind a long run. A
// session deleted by a call ahead of this one is an error. The returned
// release gives the right back.
func (s *Engine) WaitTurn(ctx context.Context, ss *Session, place Place) (release func(), err error) {
	return s.waitTurnAs(ctx, ss, place, newJob())
}

// waitTurnAs is WaitTurn for a job the caller made.
func (s *Engine) waitTurnAs(ctx context.Context, ss *Session, place Place, j *job) (release func(), err error) {
	if err := s.join(ctx, ss, place, j); err != nil {
		return nil, fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", ss.id, err)
	}
	t := time.NewTimer(s.cfg.MaxWait)
	defer t.Stop()
	for {
		// A run ahead that waits for input holds the turn until someone
		// answers: the call says so at once instead of waiting it out.
		asked := ss.askedSignal()
		if r, q := ss.askingAhead(j); r != nil {
			ss.leave(j)
			return nil, fmt.Errorf("session %q %s; nothing was done. %s, then try again", ss.id, WaitsForInput(r, q), HowToAnswer(ss.id, r.id))
		}
		select {
		case <-j.turn:
			if err := ss.checkTurn(); err != nil {
				ss.leave(j)
				return nil, err
			}
			return func() { ss.leave(j) }, nil
		case <-asked:
		case <-ctx.Done():
			ss.leave(j)
			return nil, fmt.Errorf("cancelled while waiting for earlier calls in session %q: %v", ss.id, ctx.Err())
		case <-t.C:
			ss.leave(j)
			return nil, ss.busyError(s.cfg.MaxWait)
		}
	}
}

// askedSignal is closed when a run of the session next starts waiting for
// input.
func (ss *Session) askedSignal() <-chan struct{} {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.asked == nil {
		ss.asked = make(chan struct{})
	}
	return ss.asked
}

// signalAsked wakes the calls waiting on askedSignal.
func (ss *Session) signalAsked() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.asked != nil {
		close(ss.asked)
		ss.asked = nil
	}
}

// askingAhead is the run holding the turn ahead of job j that waits for
// input the assistant must give (send_input), and its question; nil when j
// has its turn, nothing ahead asks, or the user or the person answers it
// (then j waits as behind any run, woken by the answer).
func (ss *Session) askingAhead(j *job) (*Run, *Question) {
	if isClosed(j.turn) {
		return nil, nil
	}
	r := ss.CurrentRun()
	if r == nil || r.job == j {
		return nil, nil
	}
	q := r.questionForAssistant()
	if q == nil {
		return nil, nil
	}
	return r, q
}

// WaitsForInput says what run r waits for: "waits for input: run r1 called
// input() with the prompt \"Name? \"".
func WaitsForInput(r *Run, q *Question) string {
	what := "input()"
	if q.Req.Password {
		what = "getpass()"
	}
	return fmt.Sprintf("waits for input: run %s called %s with the prompt %q", r.id, what, q.Req.Prompt)
}

// HowToAnswer says how to answer run rid's question or stop the run.
func HowToAnswer(session, rid string) string {
	return fmt.Sprintf("Answer it with send_input {\"session_id\": %q, \"run_id\": %q, \"text\": \"...\"}, or stop the run with interrupt_session", session, rid)
}

// busyError says why a call gave up waiting for its turn, and what to do.
func (ss *Session) busyError(waited time.Duration) error {
	r := ss.CurrentRun()
	if r == nil {
		return fmt.Errorf("session %q stayed busy for %v with earlier calls; nothing was done. Try again later", ss.id, waited.Round(time.Millisecond))
	}
	v := r.View()
	return fmt.Errorf("session %q is busy with run %s (%s for %v, %d more queued); nothing was done. "+
		"Call wait_run {\"session_id\": %q, \"run_id\": %q} until it ends, or interrupt_session to stop it, then try again",
		ss.id, v.RunID, v.Status, time.Duration(v.ElapsedMS)*time.Millisecond, max(ss.queueLen()-1, 0), ss.id, v.RunID)
}

// BlockedBy says, for a run queued behind one that waits for input, which
// question holds it up and how to answer it; "" for any other run.
func (r *Run) BlockedBy() string {
	a, q := r.ss.askingAhead(r.job)
	if a == nil {
		return ""
	}
	return fmt.Sprintf("It cannot start yet: session %q %s. %s.", r.ss.id, WaitsForInput(a, q), HowToAnswer(r.ss.id, a.id))
}
