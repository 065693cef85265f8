package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Block is what one code block's execution came to: the kernel's result,
// how it ended, the notes the user must read (a fresh kernel, a death, a
// timeout), and when it ran. It is the domain result of a run of code; the
// adapter renders it.
type Block struct {
	Session string
	Run     string
	Code    string
	Source  string // "" for code sent as is; "file:PATH", "rerun", "notebook:PATH"
	// Result is the kernel's: outputs in order, the error. Never nil.
	Result *kernel.ExecuteResult
	// Status is ok, error, timeout or interrupted.
	Status string
	// Note is what the user must be told about this run beyond its
	// outputs, one line per matter; "" when nothing.
	Note       string
	Start, End time.Time
	Generation int // the kernel process it ran in (history.Entry.Generation)
	// Shown is what of the block's stream output earlier hand-offs of the
	// run already delivered (see StreamShown.SkipFor).
	Shown StreamShown
	// HistoryUnsaved is set when the block could not be written to the
	// history file (a full disk): it is in memory, and written once the
	// disk has room. Note says so too.
	HistoryUnsaved *HistoryBacklog
}

// RunStatus is the block's status, for the run_finished event ("" for
// none: a run whose work returned a nil block with its error).
func (b *Block) RunStatus() string {
	if b == nil {
		return ""
	}
	return b.Status
}

// Elapsed is how long the block ran.
func (b *Block) Elapsed() time.Duration { return b.End.Sub(b.Start) }

// RunBlock executes one block as (part of) run r, whose execution right it
// holds, and records it in the session's history. The session's kernel is
// started if none runs; a death, a timeout or an ignored interrupt is
// reported in the block, and the session stays usable. The error is for
// failures to run at all (no kernel could be started).
func (r *Run) RunBlock(ctx context.Context, code, source string, timeout time.Duration) (*Block, error) {
	return r.runBlock(ctx, code, source, timeout, -1, nil)
}

// RerunBlock executes the code block at history index i again as (part of)
// run r, which holds the session's execution right, and records the new
// execution in its place: the history keeps one copy of each block, as a
// notebook's Run All does. The block keeps its source and author. It
// returns the entry it replaced too, to compare outputs with. Like
// RunBlock, a failure of the code is in the block; the error is for
// failures to run at all, or for an index that holds no code block.
func (r *Run) RerunBlock(ctx context.Context, i int, timeout time.Duration) (*Block, history.Entry, error) {
	ss := r.ss
	ss.mu.Lock()
	if i < 0 || i >= len(ss.hist) {
		n := len(ss.hist)
		ss.mu.Unlock()
		return nil, history.Entry{}, fmt.Errorf("session %q has no block at index %d (it has %d)", ss.id, i, n)
	}
	old := ss.hist[i]
	ss.mu.Unlock()
	if !old.IsCode() {
		return nil, old, fmt.Errorf("block [%d] of session %q is a %s cell, not code", i+1, ss.id, old.CellType)
	}
	b, err := r.runBlock(ctx, old.Code, old.Source, timeout, i, &old)
	return b, old, err
}

// runBlock is RunBlock, and with at >= 0 RerunBlock: the entry recorded
// replaces old, at index at.
func (r *Run) runBlock(ctx context.Context, code, source string, timeout time.Duration, at int, old *history.Entry) (*Block, error) {
	ss, s := r.ss, r.ss.eng
	// A server started for the kernel reports its progress as the run's.
	k, _, err := ss.Kernel(withRun(ctx, r))
	if err != nil {
		return nil, fmt.Errorf("session %q: cannot start a kernel: %v", ss.id, err)
	}
	out := &Block{Session: ss.id, Run: r.id, Code: code, Source: source}
	gen := ss.Generation()
	var notes []string
	// A cell the person ran shows the notes for a fresh kernel too, but
	// leaves them for the assistant's next run: the assistant must learn
	// that its variables are gone.
	person := r.By() == history.ByPerson
	if note := ss.restoreNoteFor(!person); note != "" {
		notes = append(notes, note)
	}
	if lost := ss.unreportedFor(!person); lost != nil {
		notes = append(notes, lostNote(lost, ss.EarlierBlocks()))
	}

	runCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ss.mu.Lock()
	ss.lastInterrupt = time.Time{} // the debounce is per run
	ss.mu.Unlock()
	ss.guardParent(runCtx, k, gen)
	r.beginBlock(code, at)
	by := r.By()
	start := time.Now()
	r.setExecuting(true)
	res, err := k.Execute(runCtx, code, kernel.ExecuteOptions{
		OnEvent:        r.event,
		OnInput:        r.onInput,
		MaxStreamBytes: max(4*s.cfg.OutputLimit, 2*HistoryTextLimit),
		MaxOutputs:     MaxOutputs,
	})
	r.setExecuting(false)
	// The block's widget changes are published before its run ends.
	ss.flushWidgets()
	end := time.Now()
	out.Start, out.End, out.Generation = start, end, gen

	var (
		execErr  *kernel.ExecError
		protoErr *kernel.ProtocolError
	)
	switch {
	case err == nil:
		out.Status = "ok"
	case errors.As(err, &execErr) && !res.Interrupted:
		out.Status = "error"
	case s.ctx.Err() != nil && (errors.Is(err, kernel.ErrKernelDied) || errors.Is(err, kernel.ErrClosed) || errors.Is(err, context.Canceled)):
		// The server is stopping: the run is cut short, and recorded with
		// what it printed so far.
		out.Status = "interrupted"
		notes = append(notes, "The server stopped during this run; its kernel was shut down.")
		if res == nil {
			res = &kernel.ExecuteResult{}
		}
		res.Error = nil
	case errors.As(err, &protoErr):
		// The kernel broke the protocol (a message over the size
		// limit): the kernel package stopped it. Like an interrupt, the
		// run is cut short by the server, not failed by its code.
		out.Status = "interrupted"
		ss.MarkDead(k, err)
		notes = append(notes, protocolNote(protoErr))
		if res == nil {
			res = &kernel.ExecuteResult{}
		}
		res.Error = nil
	case errors.Is(err, kernel.ErrKernelDied):
		out.Status = "error"
		ss.MarkDead(k, err)
		notes = append(notes, fmt.Sprintf("%v — variables lost, history kept. The next call starts a fresh kernel.", err))
		if res == nil {
			res = &kernel.ExecuteResult{}
		}
		if res.Error == nil {
			res.Error = &kernel.ExecError{EName: "KernelDied", EValue: err.Error()}
		}
	case errors.Is(err, kernel.ErrNotStarted):
		// The kernel was busy with something else (a status probe) and
		// never took this request up before the cancellation.
		out.Status = statusFor(runCtx, ctx)
		notes = append(notes, "The run was stopped before the kernel started it; the kernel may still run it once it is free. The namespace was kept.")
		if res == nil {
			res = &kernel.ExecuteResult{}
		}
		res.Error = nil
	case errors.Is(err, kernel.ErrNoReply):
		out.Status = "interrupted"
		if ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
			out.Status = "timeout"
		}
		notes = append(notes, "The kernel ended this run without a reply (an interrupt arrived while it was handling another). The namespace was kept.")
		res.Error = nil
	case errors.Is(err, kernel.ErrInterruptIgnored):
		out.Status = statusFor(runCtx, ctx)
		rerr := ss.ForceRestart(context.WithoutCancel(ctx))
		msg := fmt.Sprintf("The kernel ignored the interrupt for %v, so it was restarted: all variables were lost (history is kept).", s.cfg.InterruptGrace)
		if rerr != nil {
			msg = fmt.Sprintf("The kernel ignored the interrupt for %v and could not be restarted (%v); the next call starts a fresh kernel. All variables were lost (history is kept).", s.cfg.InterruptGrace, rerr)
		}
		notes = append(notes, runStopped(out.Status, timeout)+" "+msg)
	case res != nil && res.Interrupted:
		out.Status = statusFor(runCtx, ctx)
		notes = append(notes, runStopped(out.Status, timeout)+" The namespace was kept: variables defined before the interruption still exist.")
		res.Error = nil // the KeyboardInterrupt is ours, not the code's
	default:
		return nil, fmt.Errorf("session %q: %v", ss.id, err)
	}
	out.Note = strings.Join(notes, "\n")
	if res == nil {
		res = &kernel.ExecuteResult{}
	}
	out.Result = res
	out.Shown = r.ConsumeShown()
	e := historyEntry(code, source, res, out.Status, out.Note, gen, start, end)
	e.By, e.Run = by, r.id
	ss.recMu.Lock()
	if old != nil {
		e.By = old.By // who wrote the code, not who re-ran it
		behind, err := s.replace(ss, at, e)
		if err != nil {
			out.Note = strings.TrimSpace(out.Note + "\nThe block's new outputs are in memory, but the history file could not be rewritten: " + err.Error())
		}
		out.HistoryUnsaved = behind
		r.endBlock(at, res.ExecutionCount)
	} else {
		i, behind := s.record(ss, e)
		out.HistoryUnsaved = behind
		r.endBlock(i, res.ExecutionCount)
	}
	ss.recMu.Unlock()
	if out.HistoryUnsaved != nil {
		out.Note = strings.TrimSpace(out.Note + "\n" + out.HistoryUnsaved.Note())
	}
	return out, nil
}

// statusFor tells a timeout (the run's own deadline) from a cancellation by
// the client.
func statusFor(runCtx, callCtx context.Context) string {
	if callCtx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return "timeout"
	}
	return "interrupted"
}

func runStopped(status string, timeout time.Duration) string {
	if status == "timeout" {
		return fmt.Sprintf("Execution timed out after %v and was interrupted.", timeout)
	}
	return "Execution was cancelled and interrupted."
}

// protocolNote says what a kernel that broke the protocol cost: the run,
// the variables, nothing more.
func protocolNote(e *kernel.ProtocolError) string {
	return fmt.Sprintf("The server stopped this kernel because it %s (--max-message-size). Its variables are lost; the history is kept, and the next call starts a fresh kernel. No other session was affected.", strings.TrimPrefix(e.Error(), "the kernel "))
}
