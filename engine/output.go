package engine

import (
	"bytes"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// The output a run delivers to the calls that wait on it (wait_run), and
// what of it a result may leave out.

// HandOff takes the output so far, for a call that returns before the run
// ends.
func (r *Run) HandOff() (RunView, string) {
	r.mu.Lock()
	out := r.takeOutputLocked()
	// A question handed off is the assistant's to answer from now on:
	// calls queued behind it stop waiting for the user.
	unElicited := r.input != nil && r.input.elicited
	if unElicited {
		r.input.elicited = false
	}
	r.mu.Unlock()
	if unElicited {
		r.ss.signalAsked()
	}
	return r.View(), out
}

// StreamShown is what of a block's stream output earlier calls already
// returned: its first n bytes, and their SHA-256 to find them again.
type StreamShown struct {
	n   int
	sum []byte
}

// ConsumeShown is called when a block's result is rendered: it returns the
// stream output already delivered for this block (so the result need not
// repeat it) and starts afresh for the next block. Output not yet delivered
// is in the rendered result, so it is dropped here.
func (r *Run) ConsumeShown() StreamShown {
	if r == nil {
		return StreamShown{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := StreamShown{n: r.shown}
	if r.shown > 0 {
		sh.sum = r.shownSum.Sum(nil)
	}
	if r.shown < 0 {
		sh.n = -1
	}
	r.shown = 0
	r.shownSum.Reset()
	r.pending, r.tail, r.omitted, r.overflow = r.pending[:0], r.tail[:0], 0, false
	return sh
}

// SkipFor works out how many bytes of a result's stream text (in output
// order) the result may leave out: those already delivered, if they are
// still the output's beginning. clear_output or a cut stream can make them
// differ; then nothing is left out and ok reports the repetition.
func (sh StreamShown) SkipFor(stream []string) (skip int, repeated bool) {
	if sh.n == 0 {
		return 0, false
	}
	if sh.n < 0 {
		return 0, true
	}
	h := newStreamHash()
	left := sh.n
	for _, t := range stream {
		if left == 0 {
			break
		}
		n := min(left, len(t))
		h.Write([]byte(t[:n]))
		left -= n
	}
	if left > 0 || !bytes.Equal(h.Sum(nil), sh.sum) {
		return 0, true
	}
	return sh.n, false
}

// takeOutput returns the output that arrived since the last take, as plain
// text, and marks it delivered.
func (r *Run) TakeOutput() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeOutputLocked()
}

func (r *Run) takeOutputLocked() string {
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
