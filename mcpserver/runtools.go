package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runTool runs fn as a run of ss in this call's turn and waits for it at
// most Config.MaxWait (not at all when background is set). A run not done
// by then is handed off: the call returns handoff's output and a text with
// the run's id, state and output so far, and the run goes on.
//
// A call that retries after answering the run's question (MCP multi
// round-trip, see attend) carries the run in its request state: it resumes
// waiting on that run instead of starting another.
func runTool[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, ss *Session, background bool,
	fn func(ctx context.Context, r *run) (*mcp.CallToolResult, Out, error),
	handoff func(v RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	if req.Params.RequestState != "" {
		s.releaseTicket(ss.id, req.Params.Meta)
		r, err := s.resume(req)
		if err != nil {
			return errResult[Out]("%v", err)
		}
		return attend(s, ctx, req, r, s.cfg.MaxWait, nil, handoff)
	}
	r, err := s.startRun(ctx, req, ss, req.Params.Name, func(ctx context.Context, r *run) (*mcp.CallToolResult, any, error) {
		return fn(ctx, r)
	})
	if err != nil {
		return errResult[Out]("%v", err)
	}
	// A foreground call whose wait for its turn used up --max-wait still
	// gives its run a moment, and is told it was handed off, not that it
	// asked for the background (a wait of 0 means that below).
	wait := max(s.maxWaitLeft(ctx), time.Second)
	if background {
		wait = 0
		// A run whose turn has come is about to start: say it runs, not
		// that it waits behind earlier calls.
		r.awaitStart(ctx)
	}
	// Not handed off yet: cancelling the call stops the run, as a cancelled
	// call always did.
	cancelled := func() { r.cancel() }
	return attend(s, ctx, req, r, wait, cancelled, handoff)
}

// attend waits up to wait for the run on behalf of a call. It returns the
// run's result if it ends; if the run asks for input and the client
// declared elicitation, the question as an MCP input request (the client
// asks the user and calls again with the answer); otherwise it hands the
// run off. When ctx ends first, cancelled (if any) runs.
func attend[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, r *run, wait time.Duration, cancelled func(), handoff func(v RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	var zero Out
	switch r.await(ctx, wait, attachmentOf(req)) {
	case awaitDone:
		res, out, err := r.final()
		o, _ := out.(Out)
		return res, o, err
	case awaitCancelled:
		if cancelled != nil {
			cancelled()
			return errResult[Out]("cancelled: run %s in session %q was stopped (interrupted if it had started)", r.id, r.ss.id)
		}
		return errResult[Out]("cancelled; run %s in session %q goes on", r.id, r.ss.id)
	case awaitInput:
		// The SDK carries an input request to a client of an older protocol
		// version itself, but once per call: a second question in the same
		// call is handed off instead.
		if in := r.pendingQuestion(); in != nil && canElicit(req) && (req.Params.RequestState == "" || multiRoundTrip(req)) {
			return inputRequest(r, in), zero, nil
		}
	}
	if isClosed(r.done) { // it ended as the wait did
		res, out, err := r.final()
		o, _ := out.(Out)
		return res, o, err
	}
	v, output := r.handOff()
	// One cut for the text and the structured output alike.
	output, _ = history.CutMiddle(output, s.cfg.OutputLimit)
	label := "Output so far:"
	if req.Params.Name == "wait_run" {
		label = "Output since the last call:"
	}
	return handoffResult(r.ss, v, label, output, wait == 0), handoff(v, output), nil
}

// canElicit reports whether the calling client declared elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// multiRoundTrip reports whether the client speaks MCP multi round-trip
// requests itself (protocol 2026-07-28 and later).
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// inputRequest is a result that asks the user the run's question through
// the client (elicitation as an MCP multi round-trip input request; the
// SDK sends it as elicitation/create to clients of older protocol
// versions). The request state names the question, so that the call that
// comes back with the answer gives it to that question only.
func inputRequest(r *run, in *pendingInput) *mcp.CallToolResult {
	prompt := strings.TrimSpace(in.req.Prompt)
	what, desc := "input()", "The line the code receives."
	if in.req.Password {
		what, desc = "getpass()", "A secret: it goes to the code only, never into outputs or history."
	}
	msg := fmt.Sprintf("The code running in session %q (run %s) asks, through %s: %s", r.ss.id, r.id, what, prompt)
	if prompt == "" {
		msg = fmt.Sprintf("The code running in session %q (run %s) waits for a line of input (%s).", r.ss.id, r.id, what)
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputRequestID(in.seq): &mcp.ElicitParams{
			Mode:    "form",
			Message: msg,
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"answer": map[string]any{"type": "string", "title": "Answer", "description": desc}},
				"required":   []string{"answer"},
			},
		}},
		RequestState: fmt.Sprintf("%s %s %d", r.ss.id, r.id, in.seq),
	}
}

func inputRequestID(seq int) string { return fmt.Sprintf("input-%d", seq) }

// resume finds the run a retried call (multi round-trip) waits on and gives
// its question the user's answer. The request state is only a pointer: a
// forged one can do no more than send_input could.
func (s *Server) resume(req *mcp.CallToolRequest) (*run, error) {
	var sid, rid string
	var seq int
	if n, err := fmt.Sscanf(req.Params.RequestState, "%s %s %d", &sid, &rid, &seq); n != 3 || err != nil {
		return nil, fmt.Errorf("unknown request state %q", req.Params.RequestState)
	}
	ss, err := s.lookup(sid)
	if err != nil {
		return nil, err
	}
	r, err := ss.findRun(rid)
	if err != nil {
		return nil, err
	}
	if resp, ok := req.Params.InputResponses[inputRequestID(seq)].(*mcp.ElicitResult); ok {
		var ans inputAnswer
		switch resp.Action {
		case "accept":
			ans.text, _ = resp.Content["answer"].(string)
		case "decline":
			ans.err = errInputDeclined
		default:
			ans.err = errInputCancelled
		}
		r.answer(seq, ans) // a question answered meanwhile keeps its answer
	}
	return r, nil
}

// releaseTicket gives back the ordering ticket of a call that joins no
// queue.
func (s *Server) releaseTicket(session string, meta mcp.Meta) {
	if tk, ok := s.ticketOf(session, meta); ok {
		s.turns.done(tk)
	}
}

// handOff takes the output so far, for a call that returns before the run
// ends.
func (r *run) handOff() (RunView, string) {
	r.mu.Lock()
	out := r.takeOutputLocked()
	r.mu.Unlock()
	return r.view(), out
}

// handoffResult is the text of a call that returns before its run ends.
// background is set for a call that did not wait.
func handoffResult(ss *Session, v RunView, label, output string, background bool) *mcp.CallToolResult {
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
	case runRunning:
		if background {
			fmt.Fprintf(&b, "Run %s in session %q is running in the background. Call wait_run %s for its output and result; interrupt_session stops it.", v.RunID, ss.id, ref)
			break
		}
		fallthrough
	default:
		fmt.Fprintf(&b, "Run %s in session %q is still running after %v; it goes on in the kernel. Call wait_run %s for more output and the result; interrupt_session stops it.", v.RunID, ss.id, (time.Duration(v.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond), ref)
	}
	if output != "" {
		b.WriteString("\n" + label + "\n")
		b.WriteString(strings.TrimRight(output, "\n"))
	}
	return textResult(b.String())
}

// final returns the run's result, as the call that started it would have.
// Each call gets a copy of its own: the SDK writes the structured content
// (and may add content) into the result it is handed, and several calls
// can return one run's result at once.
func (r *run) final() (*mcp.CallToolResult, any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res == nil {
		return nil, r.out, r.err
	}
	c := *r.res
	c.Content = slices.Clone(r.res.Content)
	return &c, r.out, r.err
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
	RunID     string `json:"run_id,omitempty" jsonschema:"the run waiting for input (default: the session's run that waits for input)"`
	Text      string `json:"text" jsonschema:"the line to answer with, without a trailing newline; answers go to the code only, never into outputs or history"`
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
	addTool(s, &mcp.Tool{Name: "send_input", Description: "Answer the input() or getpass() a run is waiting on (status input_requested). The text goes to the code as the line typed; no answer is ever shown in outputs or history."}, s.sendInput)
}

func (s *Server) waitRun(ctx context.Context, req *mcp.CallToolRequest, in WaitRunInput) (*mcp.CallToolResult, any, error) {
	wait := s.cfg.MaxWait
	var note string
	if in.Wait != nil {
		w := *in.Wait
		switch {
		case math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
			return errResult[any]("invalid wait %v: give seconds >= 0, at most %v", w, s.cfg.MaxWait.Seconds())
		case w > s.cfg.MaxWait.Seconds():
			// Compared in seconds: a huge wait would overflow a Duration.
			note = fmt.Sprintf("wait %v s is more than the server's max wait; waited at most %v s (--max-wait).", w, s.cfg.MaxWait.Seconds())
		default:
			wait = time.Duration(w * float64(time.Second))
		}
	}
	var r *run
	if req.Params.RequestState != "" {
		var err error
		if r, err = s.resume(req); err != nil {
			return errResult[any]("%v", err)
		}
	} else {
		ss, err := s.lookup(sessionOr(in.SessionID))
		if err != nil {
			return errResult[any]("%v", err)
		}
		if r, err = ss.findRun(in.RunID); err != nil {
			return errResult[any]("%v", err)
		}
	}
	res, out, err := attend(s, ctx, req, r, wait, nil, func(v RunView, output string) any {
		p := WaitRunProgress{SessionID: r.ss.id, RunView: v, Output: output, Note: note}
		if v.Status == runRunning || v.Status == runInputRequested {
			p.Queued = r.ss.queuedRuns()
		}
		return p
	})
	if err != nil || res == nil || res.InputRequests != nil {
		return res, out, err
	}
	if p, ok := out.(WaitRunProgress); ok && p.Output == "" && p.Status == runRunning {
		res = withTail(res, "(no new output)")
	}
	if note != "" {
		res = withLead(res, note)
	}
	return res, out, nil
}

func (s *Server) sendInput(ctx context.Context, req *mcp.CallToolRequest, in SendInputInput) (*mcp.CallToolResult, MessageOutput, error) {
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	var r *run
	if in.RunID == "" {
		r = ss.askingRun()
	}
	if r == nil {
		if r, err = ss.findRun(in.RunID); err != nil {
			return errResult[MessageOutput]("%v", err)
		}
	}
	ir, ok := r.answer(0, inputAnswer{text: in.Text})
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
