package mcpserver

import (
	"context"
	"encoding/json"
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
// with params.task. Either way a task is a run: tasks.Manager keeps its
// record, which names the run, its status follows the run's, and its
// result is the one wait_run returns (taskResult). This file is what both
// share.

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
	s.tasks.Watch(rec.ID, r)
	res := &mcp.CallToolResult{Meta: mcp.Meta{s.taskKey: rec.ID}}
	return res, handoff(r.View(), ""), nil
}

// taskResult is the result a task of run r ends with, as JSON: the one
// wait_run returns (a handler's Go error as a tool error), and the note
// that says what became of the session.
func taskResult(r *engine.Run) (json.RawMessage, string, error) {
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
	note := ""
	if o, ok := out.(RunOutput); ok {
		note = o.Note
	} else if err != nil {
		note = err.Error() // why the run ended without a result: a cancelled kernel start says what was lost
	}
	b, err := json.Marshal(res)
	return b, note, err
}

// answerTask gives the run's open question the answer in resp (an
// elicitation result keyed by inputRequestID). Answers to keys not open
// are ignored, as SEP-2663 asks; an accept without its answer field leaves
// the question open.
func (s *Server) answerTask(r *engine.Run, key string, resp *mcp.ElicitResult) {
	q := r.PendingQuestion()
	if q == nil || key != inputRequestID(q.Seq) || resp == nil {
		return
	}
	if ans, ok := replyOf(resp); ok {
		r.Answer(q.Seq, ans)
	}
}
