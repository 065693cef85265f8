package engine

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// A run's viewer log. A view that follows a run (the MCP App's cell, a web
// page) asks again and again for what arrived after its cursor, while
// wait_run hands the model its own plain-text deltas: the two never take
// from each other. The log keeps the run's outputs as they arrived, in
// history's output shape, clear_output included; it is append-only, so a
// cursor (an index into it) stays valid whatever other viewers read.

// Viewer log bounds: at most MaxOutputs outputs since the last clear_output
// (counted as a notebook counts them: the chunks of one stream that follow
// each other are one output) and maxViewBytes in all, each entry charged at
// least viewEntryCost. Past either bound the log stops growing and says it
// was truncated; the run's recorded history is unaffected.
const (
	maxViewBytes  = 2 * HistoryDataLimit
	viewEntryCost = 64
)

// clearOutputType is the output_type of a clear_output entry. Its Metadata
// holds {"wait": true} when the clear waits for the next output.
const clearOutputType = "clear_output"

// RunSnapshot is what a viewer learns about a run at one moment: its state,
// the code of its current block, the outputs logged since a cursor and the
// cursor to ask from next time, and the history blocks it recorded.
type RunSnapshot struct {
	View RunView
	// Code is the current (or, once done, the last) block's code.
	Code string
	// Outputs are the outputs that arrived since the cursor, in order.
	// Stream text is cut where a snapshot was taken: the next snapshot
	// may start with more of the same stream. A clear_output is an
	// output of type "clear_output", with Metadata {"wait": true} when
	// it waits for the next output. A block after the first starts with
	// a clear_output (wait false): the view shows one block at a time.
	// A display_data with a display id carries it in Transient; an
	// update_display_data is an output of that type naming the display
	// it replaces (the view replaces it in place).
	Outputs []history.Output
	// Cursor is where the next ViewSince continues.
	Cursor int
	// Truncated is set once the log reached its bounds and stopped
	// growing: the recorded blocks still have the outputs history keeps.
	Truncated bool
	// Blocks are the 0-based history indices of the entries the run
	// recorded, in order; a delete_history after the run may shift them
	// (Session.RunCells finds a finished run's blocks by its id).
	Blocks []int
	// ExecutionCount is the current block's, 0 while unknown.
	ExecutionCount int
	// InBlock is set from a block's start until it is recorded: Code is
	// then not in the history yet.
	InBlock bool
	// Replacing is the history index the current block re-runs in place
	// (RerunBlock), -1 for a block that will be appended.
	Replacing int
}

// ViewSince returns the run's state and the outputs logged from cursor on
// (a cursor of 0 gives them all; one past the end gives none). It takes
// nothing from what wait_run delivers.
func (r *Run) ViewSince(cursor int) RunSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := &r.log
	l.seal()
	cursor = min(max(cursor, 0), len(l.outs))
	return RunSnapshot{
		View:           r.viewLocked(),
		Code:           r.codeLocked(),
		Outputs:        slices.Clone(l.outs[cursor:]),
		Cursor:         len(l.outs),
		Truncated:      l.truncated,
		Blocks:         slices.Clone(r.blocks),
		ExecutionCount: r.execCount,
		InBlock:        r.inBlock,
		Replacing:      r.replacing,
	}
}

// ViewNews is the run's snapshot from cursor on; when it has nothing new
// and the run goes on, it waits up to wait for the run's next event (an
// output, a question, an answer, its end) and takes the snapshot again, so
// that the view shows output as it comes without polling fast; seen is the
// status the view last showed, and another one is news. It subscribes
// before the first snapshot: nothing between the two is lost.
func (s *Engine) ViewNews(ctx context.Context, r *Run, cursor int, seen string, wait time.Duration) RunSnapshot {
	if wait <= 0 {
		return r.ViewSince(cursor)
	}
	sid, rid := r.Session().ID(), r.ID()
	sub := s.Events().Subscribe(16, func(e *Event) bool { return e.Session == sid && e.Run == rid })
	defer sub.Close()
	snap := r.ViewSince(cursor)
	if len(snap.Outputs) > 0 || snap.View.Status == StatusDone || snap.View.Status != seen {
		return snap
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := sub.Next(wctx); err != nil {
		return snap // nothing new: the same snapshot, elapsed time updated
	}
	return r.ViewSince(snap.Cursor)
}

// beginBlock starts a block of the run: its code is the one viewers see,
// and the outputs of an earlier block are cleared for them. at is the
// history index it re-runs in place, -1 for a new block.
func (r *Run) beginBlock(code string, at int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code != "" || len(r.blocks) > 0 {
		// The earlier block's outputs stay in the log: a viewer that has
		// not read them yet still sees how that block ended.
		r.log.clear(false, false)
	}
	r.code, r.execCount, r.inBlock, r.replacing = code, 0, true, at
}

// endBlock notes a block recorded at history index i with its execution
// count.
func (r *Run) endBlock(i, execCount int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocks = append(r.blocks, i)
	r.inBlock, r.replacing = false, -1
	if execCount > 0 {
		r.execCount = execCount
	}
}

// logEvent adds a kernel event to the viewer log. Call with r.mu held.
func (r *Run) logEvent(e kernel.Event) {
	switch e.Kind {
	case "clear_output":
		r.log.clear(e.Wait, true)
	case "update_display_data":
		if e.Output.DisplayID != "" {
			r.log.update(viewOutput(e.Output, "update_display_data"))
		}
	default:
		if e.Output.ExecutionCount > 0 {
			r.execCount = e.Output.ExecutionCount
		}
		r.log.add(viewOutput(e.Output, e.Output.Type))
	}
}

// viewOutput is a kernel output as viewers read it: in history's shape,
// of type typ, with its display id.
func viewOutput(o kernel.Output, typ string) history.Output {
	h := historyOutput(o)
	h.OutputType = typ
	if o.DisplayID != "" {
		h.Transient = &history.Transient{DisplayID: o.DisplayID}
	}
	return h
}

// viewLog is a run's append-only log of outputs for viewers.
type viewLog struct {
	outs []history.Output
	// sealed counts the entries some viewer may have read: they never
	// change again. Entries after it may still be merged or dropped.
	sealed int
	// open is set when the last entry is a stream still growing; its text
	// is in buf until the next seal.
	open      bool
	buf       []byte
	bytes     int
	outputs   int // since the last clear
	truncated bool
}

// seal makes every entry final, so that a viewer may read it.
func (l *viewLog) seal() {
	l.closeStream()
	l.sealed = len(l.outs)
}

// closeStream ends the growing stream entry, if any: its text is final.
func (l *viewLog) closeStream() {
	if l.open {
		l.outs[len(l.outs)-1].Text = string(l.buf)
		l.buf, l.open = l.buf[:0], false
	}
}

func (l *viewLog) add(o history.Output) {
	if l.truncated {
		return
	}
	n := len(l.outs)
	if o.OutputType == kernel.OutputStream {
		if o.Text == "" {
			return
		}
		if l.open && l.outs[n-1].Name == o.Name {
			if !l.charge(len(o.Text)) {
				return
			}
			l.buf = append(l.buf, o.Text...)
			return
		}
	}
	l.closeStream()
	// A stream continuing one a viewer has already read is no new output.
	continues := o.OutputType == kernel.OutputStream && n > 0 && l.outs[n-1].OutputType == kernel.OutputStream && l.outs[n-1].Name == o.Name
	if !continues && l.outputs >= MaxOutputs {
		l.truncated = true
		return
	}
	if !l.charge(viewEntryCost + outputSize(o)) {
		return
	}
	if !continues {
		l.outputs++
	}
	if o.OutputType == kernel.OutputStream {
		l.buf = append(l.buf[:0], o.Text...)
		o.Text, l.open = "", true
	}
	l.outs = append(l.outs, o)
}

// update logs an update_display_data. It is no new output (MaxOutputs
// does not count it); an update of the same display that no viewer has
// read yet is replaced rather than kept, so that a display updated in a
// tight loop grows the log by one entry between two reads.
func (l *viewLog) update(o history.Output) {
	if l.truncated {
		return
	}
	if n := len(l.outs); n > l.sealed && !l.open {
		if last := l.outs[n-1]; last.OutputType == o.OutputType && last.Transient != nil && last.Transient.DisplayID == o.Transient.DisplayID {
			l.bytes -= viewEntryCost + outputSize(last)
			l.outs = l.outs[:n-1]
		}
	}
	l.closeStream()
	if l.charge(viewEntryCost + outputSize(o)) {
		l.outs = append(l.outs, o)
	}
}

// charge counts n more bytes, or marks the log truncated when they do not
// fit.
func (l *viewLog) charge(n int) bool {
	if l.bytes+n > maxViewBytes {
		l.truncated = true
		return false
	}
	l.bytes += n
	return true
}

// clear logs a clear_output. With drop, the entries no viewer has read
// yet are dropped: the clear hides them anyway, so a run that redraws its
// progress line again and again keeps a short log.
func (l *viewLog) clear(wait, drop bool) {
	if l.truncated {
		return
	}
	if drop {
		if l.open {
			l.bytes -= len(l.buf) // the open stream's text, charged as it came
			l.buf, l.open = l.buf[:0], false
		}
		for _, o := range l.outs[l.sealed:] {
			l.bytes -= viewEntryCost + outputSize(o)
		}
		l.outs = l.outs[:l.sealed]
	}
	l.closeStream()
	o := history.Output{OutputType: clearOutputType}
	if wait {
		o.Metadata = map[string]json.RawMessage{"wait": json.RawMessage("true")}
	}
	l.outputs = 0
	if l.charge(viewEntryCost + outputSize(o)) {
		l.outs = append(l.outs, o)
	}
}

// outputSize is about how many bytes an output holds.
func outputSize(o history.Output) int {
	n := len(o.Name) + len(o.Text) + len(o.EName) + len(o.EValue)
	for k, v := range o.Data {
		n += len(k) + len(v)
	}
	for k, v := range o.Metadata {
		n += len(k) + len(v)
	}
	for _, t := range o.Traceback {
		n += len(t)
	}
	return n
}
