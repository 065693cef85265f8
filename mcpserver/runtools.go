package mcpserver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
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
func runTool[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, ss *engine.Session, background bool,
	fn func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, Out, error),
	handoff func(v engine.RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	if req.Params.RequestState != "" {
		s.releaseTicket(ss.ID(), req.Params.Meta)
		r, note, err := s.resume(req)
		if err != nil {
			return errResult[Out]("%v", err)
		}
		res, out, err := attend(s, ctx, req, r, s.cfg.MaxWait, nil, handoff)
		if note != "" && res != nil {
			res = withLead(res, note)
		}
		return res, out, err
	}
	r, err := s.eng.StartRun(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta), req.Params.Name, func(ctx context.Context, r *engine.Run) (any, error) {
		res, out, err := fn(ctx, r)
		return toolResult{res: res, out: out}, err
	})
	if err != nil {
		return errResult[Out]("%v", err)
	}
	if mode := s.taskModeOf(req); mode != noTask {
		return taskOrResult(s, ctx, req, r, mode, background, handoff)
	}
	s.watchProgress(r)
	// A foreground call whose wait for its turn used up --max-wait still
	// gives its run a moment, and is told it was handed off, not that it
	// asked for the background (a wait of 0 means that below).
	wait := max(s.maxWaitLeft(ctx), time.Second)
	if background {
		wait = 0
		// A run whose turn has come is about to start: say it runs, not
		// that it waits behind earlier calls.
		r.AwaitStart(ctx)
	}
	// Not handed off yet: cancelling the call stops the run, as a cancelled
	// call always did.
	cancelled := r.Cancel
	return attend(s, ctx, req, r, wait, cancelled, handoff)
}

// attend waits up to wait for the run on behalf of a call. It returns the
// run's result if it ends; if the run asks for input and the client
// declared elicitation, the question as an MCP input request (the client
// asks the user and calls again with the answer); otherwise it hands the
// run off. When ctx ends first, cancelled (if any) runs.
func attend[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, r *engine.Run, wait time.Duration, cancelled func(), handoff func(v engine.RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	var zero Out
	detach := s.attach(r, attachmentOf(ctx, req))
	elicits := canElicit(req) && (req.Params.RequestState == "" || multiRoundTrip(req))
	stopEliciting := func() {}
	if elicits {
		stopEliciting = r.Eliciting()
	}
	awaited := r.Await(ctx, wait)
	stopEliciting()
	detach()
	switch awaited {
	case engine.AwaitDone:
		return final[Out](r)
	case engine.AwaitCancelled:
		if cancelled != nil {
			cancelled()
			return errResult[Out]("cancelled: run %s in session %q was stopped (interrupted if it had started)", r.ID(), r.Session().ID())
		}
		r.HandOff() // nobody elicits its question any more
		return errResult[Out]("cancelled; run %s in session %q goes on", r.ID(), r.Session().ID())
	case engine.AwaitInput:
		// The SDK carries an input request to a client of an older protocol
		// version itself, but once per call: a second question in the same
		// call is handed off instead.
		// A question whose answer just came without its answer field is
		// handed off, not asked again: send_input answers it.
		if in := r.PendingQuestion(); in != nil && elicits && !answerMissing(req, in.Seq) {
			r.Elicit(in.Seq)
			return inputRequest(r, in), zero, nil
		}
	}
	if r.Ended() { // it ended as the wait did
		return final[Out](r)
	}
	v, output := r.HandOff()
	// One cut for the text and the structured output alike.
	output, _ = history.CutMiddle(output, s.cfg.OutputLimit)
	label := "Output so far:"
	if req.Params.Name == "wait_run" || req.Params.Name == "send_input" {
		label = "Output since the last call:"
	}
	blocked := ""
	if v.Status == engine.StatusQueued {
		blocked = r.BlockedBy()
	}
	return textResult(toolresult.Handoff(r.Session().ID(), v, label, output, wait == 0, blocked)), handoff(v, output), nil
}

// toolResult is what a run started by a tool keeps as its result: the
// rendered result and the structured output, so that every call returning
// the run (the first, or a wait_run) returns the same.
type toolResult struct {
	res *mcp.CallToolResult
	out any
}

// RunStatus is the status the run's run_finished event carries: the
// block's for a run of code, error for a result that is one.
func (t toolResult) RunStatus() string {
	if t.res == nil {
		return "" // it failed to run; the event's Err says why
	}
	switch o := t.out.(type) {
	case RunOutput:
		return o.Status
	}
	if t.res != nil && t.res.IsError {
		return "error"
	}
	return "ok"
}

// final returns the run's result, as the call that started it would have.
// Each call gets a copy of its own: the SDK writes the structured content
// (and may add content) into the result it is handed, and several calls
// can return one run's result at once.
func final[Out any](r *engine.Run) (*mcp.CallToolResult, Out, error) {
	v, err := r.Result()
	tr, _ := v.(toolResult)
	o, _ := tr.out.(Out)
	if b, ok := v.(*engine.Block); ok && err == nil {
		// A run no tool started: a cell the person ran in the web view.
		return textResult(fmt.Sprintf("Run %s in session %q was the person's, from the web view; it ended %s. get_history shows its code and output.", b.Run, b.Session, b.Status)), o, nil
	}
	if tr.res == nil {
		return nil, o, err
	}
	c := *tr.res
	c.Content = slices.Clone(tr.res.Content)
	return &c, o, err
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
func inputRequest(r *engine.Run, in *engine.Question) *mcp.CallToolResult {
	prompt := strings.TrimSpace(in.Req.Prompt)
	what, desc := "input()", "The line the code receives."
	if in.Req.Password {
		what, desc = "getpass()", "A secret: it goes to the code only, never into outputs or history."
	}
	msg := fmt.Sprintf("The code running in session %q (run %s) asks, through %s: %s", r.Session().ID(), r.ID(), what, prompt)
	if prompt == "" {
		msg = fmt.Sprintf("The code running in session %q (run %s) waits for a line of input (%s).", r.Session().ID(), r.ID(), what)
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputRequestID(in.Seq): &mcp.ElicitParams{
			Mode:    "form",
			Message: msg,
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"answer": map[string]any{"type": "string", "title": "Answer", "description": desc}},
				"required":   []string{"answer"},
			},
		}},
		RequestState: fmt.Sprintf("%s %s %d", r.Session().ID(), r.ID(), in.Seq),
	}
}

func inputRequestID(seq int) string { return fmt.Sprintf("input-%d", seq) }

// answerMissing reports whether req carries an accepted answer to question
// seq without its answer field.
func answerMissing(req *mcp.CallToolRequest, seq int) bool {
	resp, ok := req.Params.InputResponses[inputRequestID(seq)].(*mcp.ElicitResult)
	if !ok {
		return false
	}
	_, ok = replyOf(resp)
	return !ok
}

// resume finds the run a retried call (multi round-trip) waits on and gives
// its question the user's answer. The request state is only a pointer: a
// forged one can do no more than send_input could. An accepted answer
// without its answer field (the SDKs check content against the schema only
// when there is content) is no answer: the question stays open, and note
// says so.
func (s *Server) resume(req *mcp.CallToolRequest) (r *engine.Run, note string, err error) {
	var sid, rid string
	var seq int
	if n, err := fmt.Sscanf(req.Params.RequestState, "%s %s %d", &sid, &rid, &seq); n != 3 || err != nil {
		return nil, "", fmt.Errorf("unknown request state %q", req.Params.RequestState)
	}
	ss, err := s.eng.Lookup(sid)
	if err != nil {
		return nil, "", err
	}
	r, err = ss.FindRun(rid)
	if err != nil {
		return nil, "", err
	}
	if resp, ok := req.Params.InputResponses[inputRequestID(seq)].(*mcp.ElicitResult); ok {
		ans, ok := replyOf(resp)
		if !ok {
			if q := r.PendingQuestion(); q == nil || q.Seq != seq {
				return r, "", nil // answered meanwhile (send_input): no note
			}
			return r, fmt.Sprintf("The answer to the question of run %s came without an answer field, so the code was given nothing and still waits.", r.ID()), nil
		}
		r.Answer(seq, ans) // a question answered meanwhile keeps its answer
	}
	return r, "", nil
}

// replyOf is the reply an elicitation result gives the code's question.
// ok is false for an accept without its answer field, which is no answer.
func replyOf(resp *mcp.ElicitResult) (ans engine.Reply, ok bool) {
	switch resp.Action {
	case "accept":
		ans.Text, ok = resp.Content["answer"].(string)
		return ans, ok
	case "decline":
		ans.Err = engine.ErrInputDeclined
	default:
		ans.Err = engine.ErrInputCancelled
	}
	return ans, true
}

// releaseTicket gives back the ordering ticket of a call that joins no
// queue.
func (s *Server) releaseTicket(session string, meta mcp.Meta) {
	if tk, ok := s.ticketOf(session, meta); ok {
		s.turns.Done(tk)
	}
}

// WaitRunInput is the input of wait_run.
type WaitRunInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	RunID     string   `json:"run_id,omitempty" jsonschema:"run id from the hand-off (default: the latest)"`
	Wait      *float64 `json:"wait,omitempty" jsonschema:"seconds to wait (default and most: the max wait)"`
}

// SendInputInput is the input of send_input.
type SendInputInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	RunID     string   `json:"run_id,omitempty" jsonschema:"run id (default: the one waiting for input)"`
	Text      string   `json:"text" jsonschema:"the line typed, no newline; never shown or kept"`
	Wait      *float64 `json:"wait,omitempty" jsonschema:"seconds to wait for the run after (default the max wait; 0: answer only)"`
}

// WaitRunProgress is wait_run's structured content while the run goes on;
// once it has ended, wait_run returns the run's own result instead.
type WaitRunProgress struct {
	SessionID string `json:"session_id"`
	engine.RunView
	// Output is what the run printed since the previous call for it.
	Output string `json:"output"`
	// Queued counts the session's runs waiting behind the one running.
	Queued int    `json:"queued"`
	Note   string `json:"note,omitempty"`
}

func (s *Server) addRunTools() {
	addTool(s, &mcp.Tool{Name: "wait_run", Description: "Wait for a handed-off run: new output since the last call, then its result as run_code gives it."}, s.waitRun)
	addTool(s, &mcp.Tool{Name: "send_input", Description: "Answer the input() or getpass() a run waits on (status input_requested), then wait as wait_run does."}, s.sendInput)
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
	var r *engine.Run
	if req.Params.RequestState != "" {
		var err error
		var missing string
		if r, missing, err = s.resume(req); err != nil {
			return errResult[any]("%v", err)
		}
		note = strings.TrimSpace(missing + " " + note)
	} else {
		ss, err := s.eng.Lookup(sessionOr(in.SessionID))
		if err != nil {
			return errResult[any]("%v", err)
		}
		if r, err = ss.FindRun(in.RunID); err != nil {
			return errResult[any]("%v", err)
		}
	}
	return s.awaitRun(ctx, req, r, wait, note)
}

// awaitRun waits up to wait for a run on behalf of wait_run or send_input:
// the run's final result if it ends, else its progress since the previous
// call (a new question included), with note leading the text.
func (s *Server) awaitRun(ctx context.Context, req *mcp.CallToolRequest, r *engine.Run, wait time.Duration, note string) (*mcp.CallToolResult, any, error) {
	res, out, err := attend(s, ctx, req, r, wait, nil, func(v engine.RunView, output string) any {
		p := WaitRunProgress{SessionID: r.Session().ID(), RunView: v, Output: output, Note: note}
		if v.Status == engine.StatusRunning || v.Status == engine.StatusInputRequested {
			p.Queued = r.Session().QueuedRuns()
		}
		return p
	})
	if err != nil || res == nil || res.InputRequests != nil {
		return res, out, err
	}
	if p, ok := out.(WaitRunProgress); ok && p.Output == "" && p.Status == engine.StatusRunning {
		res = withTail(res, "(no new output)")
	}
	if note != "" {
		res = withLead(res, note)
	}
	return res, out, nil
}

// sendInput answers the run's question, then waits for the run as wait_run
// does: a run that ends soon after the answer returns its result in this
// call, one that asks again returns the new prompt.
func (s *Server) sendInput(ctx context.Context, req *mcp.CallToolRequest, in SendInputInput) (*mcp.CallToolResult, any, error) {
	// send_input holds its ordering ticket until the answer is given, so
	// that a call sent after it (get_value, run_code) finds the question
	// answered, not open.
	defer s.releaseTicket(sessionOr(in.SessionID), req.Params.Meta)
	if req.Params.RequestState != "" {
		// A retry with the answer to a question asked while this call waited.
		s.releaseTicket(sessionOr(in.SessionID), req.Params.Meta)
		r, note, err := s.resume(req)
		if err != nil {
			return errResult[any]("%v", err)
		}
		return s.awaitRun(ctx, req, r, s.cfg.MaxWait, note)
	}
	wait := s.cfg.MaxWait
	if in.Wait != nil {
		w := *in.Wait
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return errResult[any]("invalid wait %v: give seconds >= 0, at most %v; nothing was sent", w, s.cfg.MaxWait.Seconds())
		}
		if w < s.cfg.MaxWait.Seconds() { // compared in seconds: a huge wait would overflow a Duration
			wait = time.Duration(w * float64(time.Second))
		}
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[any]("%v", err)
	}
	var r *engine.Run
	if in.RunID == "" {
		r = ss.AskingRun()
	}
	if r == nil {
		if r, err = ss.FindRun(in.RunID); err != nil {
			return errResult[any]("%v", err)
		}
	}
	ir, ok := r.Answer(0, engine.Reply{Text: in.Text})
	s.releaseTicket(ss.ID(), req.Params.Meta) // answered or not: later calls may join
	if !ok {
		v := r.View()
		return errResult[any]("run %s in session %q is not waiting for input (it is %s); nothing was sent", r.ID(), ss.ID(), v.Status)
	}
	what := "input()"
	if ir.Password {
		what = "getpass()"
	}
	// The result is the run's, as wait_run gives it; the line that says
	// what was answered leads its text only, so the structured content
	// stays the run's own.
	if wait == 0 {
		// Answer only (the cell view, which follows the run itself): the
		// run's output stays for wait_run and the final result.
		return textResult(fmt.Sprintf("Answered %s (prompt %q) of run %s; it goes on (wait_run follows it).", what, ir.Prompt, r.ID())), nil, nil
	}
	res, out, err := s.awaitRun(ctx, req, r, wait, "")
	if err != nil || res == nil || res.InputRequests != nil {
		return res, out, err
	}
	return withLead(res, fmt.Sprintf("Answered %s (prompt %q) of run %s.", what, ir.Prompt, r.ID())), out, nil
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
