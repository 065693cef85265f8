package engine

import (
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// ID is the session's id.
func (ss *Session) ID() string { return ss.id }

// Created is when the session was created (or first created, for one
// restored from the state dir).
func (ss *Session) Created() time.Time { return ss.created }

// Choice is what the session runs, as it was created.
func (ss *Session) Choice() Choice { return ss.choice }

// RunningKernel is the session's kernel, or nil when none runs; it starts
// none (Kernel does).
func (ss *Session) RunningKernel() *kernel.Kernel {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.k
}

// History is a copy of the session's history.
func (ss *Session) History() []history.Entry {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]history.Entry(nil), ss.hist...)
}

// Restored reports whether the history was read from the state directory
// at start-up and no kernel of this engine has run it yet.
func (ss *Session) Restored() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.restored
}

// RestoreNote says what restoring the session's history file had to leave
// out; "" when nothing.
func (ss *Session) RestoreNote() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.restoreNote
}

// ID is the run's id within its session ("r1", "r2", ...).
func (r *Run) ID() string { return r.id }

// Session is the session the run belongs to.
func (r *Run) Session() *Session { return r.ss }

// Tool names what started the run.
func (r *Run) Tool() string { return r.tool }

// Done is closed when the run has its result.
func (r *Run) Done() <-chan struct{} { return r.done }

// MarkTask says that the run is followed as an MCP task: its views (list
// sessions, the web view) say so.
func (r *Run) MarkTask() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.task = true
}

// Changed is closed when the run's state or its question next changes
// (it starts, asks, is answered, ends); call it again for the change after.
func (r *Run) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Started reports whether the run left the queue (it ran, or runs).
func (r *Run) Started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.started.IsZero()
}

// Cancel stops the run: interrupted if it has started, never started if
// it waits for its turn.
func (r *Run) Cancel() { r.cancel() }

// Result is what the run's work returned; nil, nil before it is done.
func (r *Run) Result() (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result, r.err
}

// Ended reports whether the run has its result.
func (r *Run) Ended() bool { return isClosed(r.done) }

// NotebookMeta describes the session's kernel for a notebook of its
// history (save_notebook, the web view's download): ipykernel's names
// until a kernel has said otherwise.
func (ss *Session) NotebookMeta() history.NotebookMeta {
	info := ss.KernelInfo()
	meta := history.NotebookMeta{KernelName: info.KernelName, Language: info.Language, LanguageVersion: info.Version}
	if meta.KernelName == "" {
		meta.KernelName = "python3"
	}
	if meta.Language == "" {
		meta.Language = "python"
	}
	meta.DisplayName = "Python 3 (ipykernel)"
	if meta.Language != "python" {
		meta.DisplayName = meta.KernelName
	}
	return meta
}
