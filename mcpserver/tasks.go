package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call that starts a run can become an MCP task: the client polls
// the task instead of calling wait_run. Two designs exist on the wire (see
// tasks_wire.go): the io.modelcontextprotocol/tasks extension (SEP-2663)
// for clients of protocol 2026-07-28 that declare it on the call, where the
// server alone decides; and the 2025-11-25 tasks, where the client asks
// with params.task. Either way a task is a run: its record (package tasks)
// names the run, its status follows the run's, and its result is the one
// wait_run returns. This file is what both share.

// taskTools are the tools whose calls may become tasks: those whose work is
// a run (runTool).
var taskTools = map[string]bool{
	"run_code": true, "run_file": true, "rerun_code": true, "run_notebook": true, "install_package": true,
	"load_data": true, "describe_data": true, "estimate_ols": true, "plot_data": true,
}

// taskMode is the task design a call may become a task under.
type taskMode int

const (
	noTask     taskMode = iota
	sepTask             // SEP-2663, protocol 2026-07-28: the server decides
	legacyTask          // 2025-11-25: the client asked with params.task
)

const (
	tasksExtension      = "io.modelcontextprotocol/tasks"
	metaProtocol        = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
	metaRelatedTask     = "io.modelcontextprotocol/related-task"
	protocolSEPTasks    = "2026-07-28"
	protocolOldTasks    = "2025-11-25"
	taskPollInterval    = time.Second
	metaTaskPrefix      = "kernel-mcp/task-"
	metaTaskParamPrefix = "kernel-mcp/task-param-"
	metaTaskRun         = "kernel-mcp/run"
)

// protocolOf is the protocol version a request speaks: the one in its own
// _meta (2026-07-28 and later name it on every request), else the one the
// session negotiated at initialize.
func protocolOf(meta mcp.Meta, ss *mcp.ServerSession) string {
	if v, ok := meta[metaProtocol].(string); ok && v != "" {
		return v
	}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil {
			return p.ProtocolVersion
		}
	}
	return ""
}

// declaresTasks reports whether a request's per-request client
// capabilities declare the tasks extension.
func declaresTasks(meta mcp.Meta) bool {
	caps, _ := meta[metaClientCaps].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[tasksExtension]
	return ok
}

// taskModeOf says whether the call may become a task, and under which
// design. A call resuming a multi round-trip exchange never does.
func (s *Server) taskModeOf(req *mcp.CallToolRequest) taskMode {
	if s.tasks == nil || req == nil || req.Params == nil || req.Params.RequestState != "" || !taskTools[req.Params.Name] {
		return noTask
	}
	v := protocolOf(req.Params.Meta, req.Session)
	switch {
	case v >= protocolSEPTasks:
		if declaresTasks(req.Params.Meta) {
			return sepTask
		}
	case v >= protocolOldTasks:
		// OrderedTransport moved params.task, which the SDK drops, here.
		if _, ok := req.Params.Meta[s.taskParamKey]; ok {
			return legacyTask
		}
	}
	return noTask
}

// taskOrResult waits for the run of a call that may become a task. A run
// that ends within Config.TaskWait returns its result as today; one that
// goes on (or asks for input) becomes a task: the call returns a marker
// that tasksMiddleware turns into the protocol's CreateTaskResult. A
// 2025-11-25 client asked for a task, so it gets one at once.
func taskOrResult[Out any](s *Server, ctx context.Context, req *mcp.CallToolRequest, r *engine.Run, mode taskMode, background bool, handoff func(v engine.RunView, output string) Out) (*mcp.CallToolResult, Out, error) {
	if mode == sepTask && !background {
		switch r.Await(ctx, min(s.cfg.TaskWait, s.maxWaitLeft(ctx))) {
		case engine.AwaitDone:
			return final[Out](r)
		case engine.AwaitCancelled:
			r.Cancel()
			return errResult[Out]("cancelled: run %s in session %q was stopped (interrupted if it had started)", r.ID(), r.Session().ID())
		}
	}
	rec, err := s.tasks.Create(tasks.Record{Session: r.Session().ID(), Run: r.ID(), Tool: r.Tool(), Protocol: protocolOf(req.Params.Meta, req.Session)})
	if err != nil {
		// Not durable, so no task: the hand-off still works.
		s.cfg.Logger.Warn("a task could not be recorded; the call hands its run off instead", "err", err)
		return attend(s, ctx, req, r, 0, nil, handoff)
	}
	r.MarkTask()
	if mode == legacyTask {
		p, _ := req.Params.Meta[s.taskParamKey].(map[string]any)
		conn, _ := p["conn"].(string)
		s.noticeTo(rec.ID, conn)
	}
	s.watchTask(rec.ID, r)
	res := &mcp.CallToolResult{Meta: mcp.Meta{s.taskKey: rec.ID}}
	return res, handoff(r.View(), ""), nil
}

// taskView is a task as both designs show it.
type taskView struct {
	rec     tasks.Record
	status  tasks.Status
	message string
	// question is the run's open input() while status is input_required.
	question *engine.Question
	run      *engine.Run // nil once the record alone says how it ended
}

// task returns the task id as it is now, recording its end if its run
// ended.
func (s *Server) task(id string) (taskView, error) {
	rec, err := s.tasks.Get(id)
	if err != nil {
		return taskView{}, err
	}
	if rec.Status.Terminal() {
		return taskView{rec: rec, status: rec.Status, message: rec.Message}, nil
	}
	r := s.runOf(rec)
	if r == nil {
		msg := fmt.Sprintf("run %s of session %q is gone (the session was deleted or reset); its output, if any, is in the history", rec.Run, rec.Session)
		ej, _ := json.Marshal(map[string]any{"code": -32603, "message": msg})
		rec, err = s.tasks.Finish(id, tasks.Failed, nil, ej, msg)
		if err != nil {
			return taskView{}, err
		}
		return taskView{rec: rec, status: rec.Status, message: rec.Message}, nil
	}
	if r.Ended() {
		if rec, err = s.finishTask(id, r); err != nil {
			return taskView{}, err
		}
		return taskView{rec: rec, status: rec.Status, message: rec.Message}, nil
	}
	v := taskView{rec: rec, status: tasks.Working, run: r}
	if q := r.PendingQuestion(); q != nil {
		v.status, v.question = tasks.InputRequired, q
		v.message = fmt.Sprintf("run %s in session %q waits for input: %q", r.ID(), rec.Session, strings.TrimSpace(q.Req.Prompt))
		return v, nil
	}
	rv := r.View()
	v.message = fmt.Sprintf("run %s in session %q is %s", r.ID(), rec.Session, rv.Status)
	if rv.ElapsedMS > 0 {
		v.message += fmt.Sprintf(" (%v)", (time.Duration(rv.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	if rv.Progress != "" {
		v.message += ", at " + rv.Progress
	}
	if rv.LastLine != "" {
		v.message += "; last output: " + rv.LastLine
	}
	if rec.CancelRequested {
		v.message += "; cancelling"
	}
	return v, nil
}

// runOf is the run a task follows; nil when the server no longer knows it.
func (s *Server) runOf(rec tasks.Record) *engine.Run {
	ss, err := s.eng.Lookup(rec.Session)
	if err != nil {
		return nil
	}
	r, err := ss.FindRun(rec.Run)
	if err != nil {
		return nil
	}
	return r
}

// finishTask records how the task's ended run ended: completed with the
// result wait_run returns, or cancelled when its client cancelled it
// (saying whether the namespace was kept).
func (s *Server) finishTask(id string, r *engine.Run) (tasks.Record, error) {
	res, out, err := final[any](r)
	if err != nil || res == nil {
		msg := "the run failed"
		if err != nil {
			msg = err.Error()
		}
		// A handler's Go error reaches the client as a tool error.
		res, out = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	if res.StructuredContent == nil && out != nil {
		res.StructuredContent = out
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		return tasks.Record{}, jerr
	}
	rec, gerr := s.tasks.Get(id)
	if gerr != nil {
		return tasks.Record{}, gerr
	}
	if rec.CancelRequested {
		msg := fmt.Sprintf("cancelled (tasks/cancel): run %s in session %q was interrupted.", r.ID(), rec.Session)
		if o, ok := out.(RunOutput); ok && o.Note != "" {
			msg += " " + o.Note
		} else if !r.Started() {
			msg += " It had not started; nothing ran, and the namespace is as it was."
		}
		return s.tasks.Finish(id, tasks.Cancelled, b, nil, msg)
	}
	return s.tasks.Finish(id, tasks.Completed, b, nil, "")
}

// watchTask records the task's end as soon as its run ends, so that the
// result survives a restart even if nobody polled for it. The watcher stops
// with the server: a run the server's stop cuts short is ended as such by
// the next server (tasks.Open).
func (s *Server) watchTask(id string, r *engine.Run) {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if s.closing {
		return
	}
	s.progress.Go(func() { s.followTask(id, r) })
}

// cancelTask interrupts the task's run (a queued one never starts). The
// task ends cancelled once the run stops. ok is false for a task already
// over.
func (s *Server) cancelTask(id string) (ok bool, err error) {
	rec, ok, err := s.tasks.RequestCancel(id)
	if err != nil || !ok {
		return ok, err
	}
	if r := s.runOf(rec); r != nil {
		r.Cancel()
	}
	return true, nil
}

// awaitTaskEnd waits, at most d, until the task's run has ended and the
// task is recorded as over.
func (s *Server) awaitTaskEnd(ctx context.Context, id string, d time.Duration) (taskView, error) {
	v, err := s.task(id)
	if err != nil || v.run == nil {
		return v, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-v.run.Done():
	case <-t.C:
	case <-ctx.Done():
	}
	return s.task(id)
}

// answerTask gives the run's open question the answer in resp (an
// elicitation result keyed by inputRequestID). Answers to keys not open
// are ignored, as SEP-2663 asks.
func (s *Server) answerTask(r *engine.Run, key string, resp *mcp.ElicitResult) {
	q := r.PendingQuestion()
	if q == nil || key != inputRequestID(q.Seq) || resp == nil {
		return
	}
	var ans engine.Reply
	switch resp.Action {
	case "accept":
		text, ok := resp.Content["answer"].(string)
		if !ok {
			return // no answer field: the question stays open
		}
		ans.Text = text
	case "decline":
		ans.Err = engine.ErrInputDeclined
	default:
		ans.Err = engine.ErrInputCancelled
	}
	r.Answer(q.Seq, ans)
}
