package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runTool runs fn as a run of ss in this call's turn and waits for it at
// most Config.MaxWait (not at all when background is set). A run not done
// by then is handed off: the call returns handoff's output and a text with
// the run's id, state and output so far, and the run goes on.
func runTool[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, ss *Session, background bool,
	fn func(ctx context.Context, r *run) (*mcp.CallToolResult, Out, error),
	handoff func(v RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	r, err := s.startRun(ctx, req, ss, req.Params.Name, func(ctx context.Context, r *run) (*mcp.CallToolResult, any, error) {
		return fn(ctx, r)
	})
	if err != nil {
		return errResult[Out]("%v", err)
	}
	wait := s.cfg.MaxWait
	if background {
		wait = 0
	}
	switch r.await(ctx, wait, attachmentOf(req)) {
	case awaitDone:
		res, out, err := r.final()
		o, _ := out.(Out)
		return res, o, err
	case awaitCancelled:
		// Not handed off yet: cancelling the call stops the run, as a
		// cancelled call always did.
		r.cancel()
		return errResult[Out]("cancelled: run %s in session %q was stopped (interrupted if it had started)", r.id, ss.id)
	}
	v, output := r.handOff()
	return handoffResult(s, ss, v, output), handoff(v, output), nil
}

// handOff marks the run handed off and takes the output so far.
func (r *run) handOff() (RunView, string) {
	r.mu.Lock()
	r.handoff = true
	out := r.takeOutputLocked()
	r.mu.Unlock()
	return r.view(), out
}

// handoffResult is the text of a call that returns before its run ends.
func handoffResult(s *Server, ss *Session, v RunView, output string) *mcp.CallToolResult {
	ref := fmt.Sprintf(`{"session_id": %q, "run_id": %q}`, ss.id, v.RunID)
	var b strings.Builder
	switch v.Status {
	case runQueued:
		fmt.Fprintf(&b, "Run %s is queued in session %q behind earlier calls; it starts when they end. Call wait_run %s for its output and result.", v.RunID, ss.id, ref)
	case runInputRequested:
		what := "input()"
		if v.Password {
			what = "getpass()"
		}
		fmt.Fprintf(&b, "Run %s in session %q waits for input: the code called %s with the prompt %q. Answer with send_input {\"session_id\": %q, \"run_id\": %q, \"text\": \"...\"}, then call wait_run %s; interrupt_session stops the run instead.", v.RunID, ss.id, what, v.Prompt, ss.id, v.RunID, ref)
	default:
		fmt.Fprintf(&b, "Run %s in session %q is still running after %v; it goes on in the kernel. Call wait_run %s for more output and the result; interrupt_session stops it.", v.RunID, ss.id, (time.Duration(v.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond), ref)
	}
	if output != "" {
		out, _ := history.CutMiddle(output, s.cfg.OutputLimit)
		b.WriteString("\nOutput so far:\n")
		b.WriteString(strings.TrimRight(out, "\n"))
	}
	return textResult(b.String())
}

// final returns the run's result, as the call that started it would have.
func (r *run) final() (*mcp.CallToolResult, any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finals++
	return r.res, r.out, r.err
}

// streamShown is what of a block's stream output earlier calls already
// returned: its first n bytes, and their SHA-256 to find them again.
type streamShown struct {
	n   int
	sum []byte
}

// consumeShown is called when a block's result is rendered: it returns the
// stream output already delivered for this block (so the result need not
// repeat it) and starts afresh for the next block. Output not yet delivered
// is in the rendered result, so it is dropped here.
func (r *run) consumeShown() streamShown {
	if r == nil {
		return streamShown{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := streamShown{n: r.shown}
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

// skipFor works out how many bytes of a result's stream text (in output
// order) the result may leave out: those already delivered, if they are
// still the output's beginning. clear_output or a cut stream can make them
// differ; then nothing is left out and ok reports the repetition.
func (sh streamShown) skipFor(stream []string) (skip int, repeated bool) {
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

// WaitRunInput is the input of wait_run.
type WaitRunInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	RunID     string   `json:"run_id,omitempty" jsonschema:"the run, as a call that handed it off named it (default: the session's latest run)"`
	Wait      *float64 `json:"wait,omitempty" jsonschema:"seconds to wait for the run to end (default and most: the server's max wait)"`
}

// SendInputInput is the input of send_input.
type SendInputInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	RunID     string `json:"run_id,omitempty" jsonschema:"the run waiting for input (default: the session's latest run)"`
	Text      string `json:"text" jsonschema:"the line to answer with, without a trailing newline"`
	Password  bool   `json:"password,omitempty" jsonschema:"the text is a secret: it is never shown in outputs or history (getpass answers never are)"`
}

// WaitRunProgress is wait_run's structured content while the run goes on;
// once it has ended, wait_run returns the run's own result instead.
type WaitRunProgress struct {
	SessionID string `json:"session_id"`
	RunView
	// Output is what the run printed since the previous call for it.
	Output string `json:"output"`
	// Queued counts the session's runs waiting behind the one running.
	Queued int    `json:"queued"`
	Note   string `json:"note,omitempty"`
}

func (s *Server) addRunTools() {
	addTool(s, &mcp.Tool{Name: "wait_run", Description: "Wait for a run that a call handed off (status running, queued or input_requested) and get what it printed since the previous call, then its final result exactly as run_code gives it (text, images, structured content, isError on an exception). Waits at most `wait` seconds (default and most: the server's max wait) and returns early when the run needs input."}, s.waitRun)
	addTool(s, &mcp.Tool{Name: "send_input", Description: "Answer the input() or getpass() a run is waiting on (status input_requested). The text goes to the code as the line typed; a getpass answer is never shown in outputs or history."}, s.sendInput)
}

func (s *Server) waitRun(ctx context.Context, req *mcp.CallToolRequest, in WaitRunInput) (*mcp.CallToolResult, any, error) {
	wait := s.cfg.MaxWait
	var note string
	if in.Wait != nil {
		w := *in.Wait
		switch {
		case math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
			return errResult[any]("invalid wait %v: give seconds >= 0, at most %v", w, s.cfg.MaxWait.Seconds())
		case time.Duration(w*float64(time.Second)) > s.cfg.MaxWait:
			note = fmt.Sprintf("wait %v s is more than the server's max wait; waited at most %v s (--max-wait).", w, s.cfg.MaxWait.Seconds())
		default:
			wait = time.Duration(w * float64(time.Second))
		}
	}
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[any]("%v", err)
	}
	r, err := ss.findRun(in.RunID)
	if err != nil {
		return errResult[any]("%v", err)
	}
	if r.await(ctx, wait, attachmentOf(req)) == awaitDone {
		res, out, err := r.final()
		if err != nil {
			return errResult[any]("run %s: %v", r.id, err)
		}
		if note != "" {
			res = withLead(res, note)
		}
		return res, out, nil
	}
	if ctx.Err() != nil {
		return errResult[any]("wait_run cancelled; run %s goes on", r.id)
	}
	output := r.takeOutput()
	v := r.view()
	p := WaitRunProgress{SessionID: ss.id, RunView: v, Output: output, Note: note}
	if v.Status == runRunning || v.Status == runInputRequested {
		p.Queued = ss.queuedRuns()
	}
	res := handoffResult(s, ss, v, output)
	if output == "" && v.Status == runRunning {
		res = withTail(res, "(no new output)")
	}
	if note != "" {
		res = withLead(res, note)
	}
	return res, p, nil
}

func (s *Server) sendInput(ctx context.Context, req *mcp.CallToolRequest, in SendInputInput) (*mcp.CallToolResult, MessageOutput, error) {
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	r, err := ss.findRun(in.RunID)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	ir, ok := r.answer(in.Text)
	if !ok {
		v := r.view()
		return errResult[MessageOutput]("run %s in session %q is not waiting for input (it is %s); nothing was sent", r.id, ss.id, v.Status)
	}
	what := "input()"
	if ir.Password {
		what = "getpass()"
	}
	msg := fmt.Sprintf("Answered %s (prompt %q) of run %s; call wait_run {\"session_id\": %q, \"run_id\": %q} for what follows.", what, ir.Prompt, r.id, ss.id, r.id)
	return textResult(msg), MessageOutput{SessionID: ss.id, Message: msg}, nil
}

// withLead puts a line before a result's content.
func withLead(res *mcp.CallToolResult, line string) *mcp.CallToolResult {
	c := *res
	c.Content = append([]mcp.Content{&mcp.TextContent{Text: line}}, res.Content...)
	return &c
}

// withTail puts a line after a result's content.
func withTail(res *mcp.CallToolResult, line string) *mcp.CallToolResult {
	c := *res
	c.Content = append(append([]mcp.Content{}, res.Content...), &mcp.TextContent{Text: line})
	return &c
}
