package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// Manager binds a store's tasks to the engine's runs: while a task's run
// goes on, the task's status is the run's (working, or input_required while
// its code waits on input()); once the run ends, the record keeps how it
// ended, whether or not anyone asked. It knows no wire form: the adapter
// gives it the run's final result as the protocol returns it, and hears of
// each change of a task's status.
type Manager struct {
	*Store
	eng *engine.Engine
	// result is a run's final result as JSON, and the note that says what
	// became of its session (a cancelled task's message ends with it).
	result func(*engine.Run) (json.RawMessage, string, error)
	// changed is told that a task's status may have changed; nil: nobody.
	changed func(id string)

	mu       sync.Mutex
	stopping bool
	stop     chan struct{} // closed by Stop: the watchers return
	watchers sync.WaitGroup
}

// NewManager manages st's tasks, whose runs are eng's. result and changed
// are described on Manager; result must not be nil.
func NewManager(st *Store, eng *engine.Engine, result func(*engine.Run) (json.RawMessage, string, error), changed func(id string)) *Manager {
	return &Manager{Store: st, eng: eng, result: result, changed: changed, stop: make(chan struct{})}
}

// View is a task as it is now.
type View struct {
	Record Record
	// Status is the record's once the task is over, else the run's.
	Status  Status
	Message string
	// Question is the run's open input() while Status is InputRequired.
	Question *engine.Question
	// Run is the run the task follows; nil once the record alone says how
	// it ended.
	Run *engine.Run
}

// Task returns task id as it is now, recording its end if its run ended.
func (m *Manager) Task(id string) (View, error) {
	rec, err := m.Get(id)
	if err != nil {
		return View{}, err
	}
	if rec.Status.Terminal() {
		return View{Record: rec, Status: rec.Status, Message: rec.Message}, nil
	}
	r := m.runOf(rec)
	if r == nil {
		msg := fmt.Sprintf("run %s of session %q is gone (the session was deleted or reset); its output, if any, is in the history", rec.Run, rec.Session)
		ej, _ := json.Marshal(map[string]any{"code": -32603, "message": msg})
		rec, err = m.Finish(id, Failed, nil, ej, msg)
		if err != nil {
			return View{}, err
		}
		return View{Record: rec, Status: rec.Status, Message: rec.Message}, nil
	}
	if r.Ended() {
		if rec, err = m.finish(id, r); err != nil {
			return View{}, err
		}
		return View{Record: rec, Status: rec.Status, Message: rec.Message}, nil
	}
	v := View{Record: rec, Status: Working, Run: r}
	if q := r.PendingQuestion(); q != nil {
		v.Status, v.Question = InputRequired, q
		v.Message = fmt.Sprintf("run %s in session %q waits for input: %q", r.ID(), rec.Session, strings.TrimSpace(q.Req.Prompt))
		return v, nil
	}
	rv := r.View()
	v.Message = fmt.Sprintf("run %s in session %q is %s", r.ID(), rec.Session, rv.Status)
	if rv.ElapsedMS > 0 {
		v.Message += fmt.Sprintf(" (%v)", (time.Duration(rv.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	if rv.Progress != "" {
		v.Message += ", at " + rv.Progress
	}
	if rv.LastLine != "" {
		v.Message += "; last output: " + rv.LastLine
	}
	if rec.CancelRequested {
		v.Message += "; cancelling"
	}
	return v, nil
}

// runOf is the run a task follows; nil when the engine no longer knows it.
func (m *Manager) runOf(rec Record) *engine.Run {
	ss, err := m.eng.Lookup(rec.Session)
	if err != nil {
		return nil
	}
	r, err := ss.FindRun(rec.Run)
	if err != nil {
		return nil
	}
	return r
}

// finish records how the task's ended run ended: completed with its
// result, or cancelled when its client cancelled it (saying whether the
// namespace was kept).
func (m *Manager) finish(id string, r *engine.Run) (Record, error) {
	b, note, err := m.result(r)
	if err != nil {
		return Record{}, err
	}
	rec, err := m.Get(id)
	if err != nil {
		return Record{}, err
	}
	if rec.CancelRequested {
		msg := fmt.Sprintf("cancelled (tasks/cancel): run %s in session %q was interrupted.", r.ID(), rec.Session)
		if note != "" {
			msg += " " + note
		} else if !r.Started() {
			msg += " It had not started; nothing ran, and the namespace is as it was."
		}
		return m.Finish(id, Cancelled, b, nil, msg)
	}
	return m.Finish(id, Completed, b, nil, "")
}

// Watch records the task's end as soon as its run ends, so that the result
// survives a restart even if nobody polled for it, and tells changed of
// each change of the run meanwhile. The watcher ends with Stop: a run the
// server's stop cuts short is ended as such by the next server (Open).
func (m *Manager) Watch(id string, r *engine.Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return
	}
	m.watchers.Go(func() { m.follow(id, r) })
}

// follow tells changed of the task's status changes until its run ends
// (then records the end) or Stop.
func (m *Manager) follow(id string, r *engine.Run) {
	notify := func() {
		if m.changed != nil {
			m.changed(id)
		}
	}
	for {
		ch := r.Changed()
		notify()
		select {
		case <-r.Done():
			if _, err := m.finish(id, r); err != nil && !errors.Is(err, ErrExpired) {
				m.eng.Config().Logger.Warn("recording a task's end", "task", id, "err", err)
			}
			notify()
			return
		case <-ch:
		case <-m.stop:
			return
		}
	}
}

// Stop ends the watchers and starts no more: call it before the engine
// closes, so that a run the stop cuts short stays live in its record.
func (m *Manager) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopping {
		close(m.stop)
	}
	m.stopping = true
}

// Stopped is closed by Stop.
func (m *Manager) Stopped() <-chan struct{} { return m.stop }

// Wait waits for the watchers to return (after Stop).
func (m *Manager) Wait() { m.watchers.Wait() }

// Cancel interrupts the task's run (a queued one never starts). The task
// ends cancelled once the run stops. ok is false for a task already over.
func (m *Manager) Cancel(id string) (ok bool, err error) {
	rec, ok, err := m.RequestCancel(id)
	if err != nil || !ok {
		return ok, err
	}
	if r := m.runOf(rec); r != nil {
		r.Cancel()
	}
	return true, nil
}

// AwaitEnd waits, at most d, until the task's run has ended and the task is
// recorded as over.
func (m *Manager) AwaitEnd(ctx context.Context, id string, d time.Duration) (View, error) {
	v, err := m.Task(id)
	if err != nil || v.Run == nil {
		return v, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-v.Run.Done():
	case <-t.C:
	case <-ctx.Done():
	}
	return m.Task(id)
}
