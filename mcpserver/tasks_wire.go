package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kernel-mcp/kernel-mcp/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire forms of tasks. go-sdk v1.8.0 has none (its issue #626), so they
// are bound here: the methods as custom methods of the SDK's server, the
// task results and capabilities by a receiving middleware that rewrites
// what the handlers return.
//
// SEP-2663 (io.modelcontextprotocol/tasks, protocol 2026-07-28):
// server/discover lists the extension; a tools/call whose _meta declares it
// may get a CreateTaskResult (resultType "task"); tasks/get returns the task
// with its input requests, result or error inline; tasks/update answers
// input requests; tasks/cancel interrupts. tasks/result and tasks/list do
// not exist there (-32601), and tasks/* from a client that did not declare
// the extension get -32021.
//
// 2025-11-25: initialize lists capabilities.tasks; tools/list marks the
// tools that take tasks with execution.taskSupport "optional"; a tools/call
// with params.task gets a CreateTaskResult {task}; tasks/get, tasks/result
// (blocking; it asks the run's input() questions through elicitation),
// tasks/list (the caller's tasks: with --tokens-file each user has a store
// of their own) and tasks/cancel.

// addTasks registers the task methods and the middleware.
func (s *Server) addTasks() {
	mcp.AddReceivingCustomMethod(s.mcp, "tasks/get", s.tasksGet)
	mcp.AddReceivingCustomMethod(s.mcp, "tasks/update", s.tasksUpdate)
	mcp.AddReceivingCustomMethod(s.mcp, "tasks/cancel", s.tasksCancel)
	mcp.AddReceivingCustomMethod(s.mcp, "tasks/result", s.tasksResult)
	mcp.AddReceivingCustomMethod(s.mcp, "tasks/list", s.tasksList)
	s.mcp.AddReceivingMiddleware(s.tasksMiddleware)
}

// taskParams are the params of every tasks/* method.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
	Cursor         *string              `json:"cursor,omitempty"`
}

// taskEra is the task design a tasks/* request is answered in: sepTask,
// legacyTask, or an error for a request the client's protocol or
// capabilities do not allow. sepOnly and legacyOnly are the methods that
// exist in one design only.
func taskEra(method string, ss *mcp.ServerSession, p *taskParams) (taskMode, error) {
	var meta mcp.Meta
	if p != nil {
		meta = p.Meta
	}
	v := protocolOf(meta, ss)
	switch {
	case v >= protocolSEPTasks:
		if method == "tasks/result" || method == "tasks/list" {
			return noTask, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q does not exist in protocol %s: the tasks extension (SEP-2663) polls with tasks/get, whose task carries its result", method, v)}
		}
		if !declaresTasks(meta) {
			data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
			return noTask, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension declared in the request's _meta[%q].extensions", method, tasksExtension, metaClientCaps), Data: data}
		}
		return sepTask, nil
	case v >= protocolOldTasks:
		if method == "tasks/update" {
			return noTask, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q does not exist in protocol %s: answer a task's questions when tasks/result asks them", method, v)}
		}
		return legacyTask, nil
	}
	return noTask, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q: tasks need protocol %s or later (this client speaks %q)", method, protocolOldTasks, v)}
}

// taskErr maps the store's errors to JSON-RPC errors (-32602, as both
// designs ask, with the SEP's words).
func taskErr(err error) error {
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	case errors.Is(err, tasks.ErrExpired):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task has expired (it was kept for its ttl after it ended, then forgotten)"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// lookupTask checks the request and returns its task.
func (s *Server) lookupTask(method string, ss *mcp.ServerSession, p *taskParams) (taskMode, tasks.View, error) {
	mode, err := taskEra(method, ss, p)
	if err != nil {
		return mode, tasks.View{}, err
	}
	if p == nil || p.TaskID == "" {
		return mode, tasks.View{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": taskId is required"}
	}
	v, err := s.tasks.Task(p.TaskID)
	if err != nil {
		return mode, tasks.View{}, taskErr(err)
	}
	return mode, v, nil
}

func (s *Server) tasksGet(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	mode, v, err := s.lookupTask("tasks/get", ss, p)
	if err != nil {
		return nil, err
	}
	if mode == legacyTask {
		return &legacyTaskResult{oldTask: s.oldTaskOf(v)}, nil
	}
	return s.sepTaskOf(v, "complete", true), nil
}

func (s *Server) tasksUpdate(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	_, v, err := s.lookupTask("tasks/update", ss, p)
	if err != nil {
		return nil, err
	}
	if v.Run != nil {
		for key, resp := range p.InputResponses {
			er, _ := resp.(*mcp.ElicitResult)
			s.answerTask(v.Run, key, er)
		}
	}
	return &ackResult{ResultType: "complete"}, nil
}

func (s *Server) tasksCancel(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	mode, v, err := s.lookupTask("tasks/cancel", ss, p)
	if err != nil {
		return nil, err
	}
	if mode == sepTask {
		if _, err := s.tasks.Cancel(v.Record.ID); err != nil {
			return nil, taskErr(err)
		}
		return &ackResult{ResultType: "complete"}, nil
	}
	// 2025-11-25: a task already over is refused, and the answer is the
	// task as cancelled, so the run is waited for (at most --max-wait) to
	// say whether its namespace was kept.
	if v.Status.Terminal() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %s is already %s; it cannot be cancelled", v.Record.ID, v.Status)}
	}
	if _, err := s.tasks.Cancel(v.Record.ID); err != nil {
		return nil, taskErr(err)
	}
	v, err = s.tasks.AwaitEnd(ctx, v.Record.ID, s.cfg.MaxWait)
	if err != nil {
		return nil, taskErr(err)
	}
	lt := s.oldTaskOf(v)
	lt.Status = tasks.Cancelled
	if !v.Status.Terminal() {
		lt.StatusMessage = fmt.Sprintf("cancelled (tasks/cancel): run %s in session %q was interrupted and is still stopping", v.Record.Run, v.Record.Session)
	}
	return &legacyTaskResult{oldTask: lt}, nil
}

// tasksResult is 2025-11-25's blocking tasks/result: it waits until the
// task is over and returns what the call would have returned. A question
// the run asks meanwhile is put to the user through elicitation, tagged
// with the task, when the client can elicit; otherwise the run waits for
// send_input.
func (s *Server) tasksResult(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	_, v, err := s.lookupTask("tasks/result", ss, p)
	if err != nil {
		return nil, err
	}
	asked := -1
	for v.Run != nil {
		if q := v.Question; q != nil && q.Seq != asked && clientElicits(ss) {
			asked = q.Seq
			ir := inputRequest(v.Run, q).InputRequests[inputRequestID(q.Seq)].(*mcp.ElicitParams)
			ep := *ir
			ep.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": v.Record.ID}}
			resp, err := ss.Elicit(ctx, &ep)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				resp = &mcp.ElicitResult{Action: "cancel"}
			}
			s.answerTask(v.Run, inputRequestID(q.Seq), resp)
		} else {
			t := time.NewTimer(taskPollInterval / 4)
			select {
			case <-v.Run.Done():
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			t.Stop()
		}
		if v, err = s.tasks.Task(v.Record.ID); err != nil {
			return nil, taskErr(err)
		}
	}
	related := mcp.Meta{metaRelatedTask: map[string]any{"taskId": v.Record.ID}}
	if v.Status == tasks.Failed {
		var e jsonrpc.Error
		if json.Unmarshal(v.Record.Error, &e) != nil || e.Code == 0 {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: v.Record.Message}
		}
		return nil, &e
	}
	if len(v.Record.Result) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s is %s without a result: %s", v.Record.ID, v.Status, v.Record.Message)}
	}
	return &rawResult{body: v.Record.Result, meta: related}, nil
}

func (s *Server) tasksList(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	if _, err := taskEra("tasks/list", ss, p); err != nil {
		return nil, err
	}
	if p != nil && p.Cursor != nil && *p.Cursor != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tasks/list: invalid cursor %q (this server lists every task in one page)", *p.Cursor)}
	}
	out := &legacyListResult{Tasks: []oldTask{}}
	for _, rec := range s.tasks.List() {
		v, err := s.tasks.Task(rec.ID)
		if err != nil {
			continue // expired meanwhile
		}
		out.Tasks = append(out.Tasks, s.oldTaskOf(v))
	}
	return out, nil
}

// clientElicits reports whether the session's client declared elicitation.
func clientElicits(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// tasksMiddleware turns a handler's task marker into the CreateTaskResult
// of the call's design, and adds what the designs add to server/discover,
// initialize and tools/list.
func (s *Server) tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" && !taskTools[p.Name] {
			if _, asked := p.Meta[s.taskParamKey]; asked {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				if legacyEra(protocolOf(p.Meta, ss)) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q takes no task (tools/list gives it no execution.taskSupport): call it without params.task", p.Name)}
				}
			}
		}
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult:
			if id, ok := r.Meta[s.taskKey].(string); ok {
				return s.createTaskResult(id)
			}
		case *mcp.DiscoverResult:
			if r.Capabilities != nil {
				if r.Capabilities.Extensions == nil {
					r.Capabilities.Extensions = map[string]any{}
				}
				r.Capabilities.Extensions[tasksExtension] = map[string]any{}
			}
		case *mcp.InitializeResult:
			if legacyEra(r.ProtocolVersion) {
				return &legacyInitializeResult{r}, nil
			}
		case *mcp.ListToolsResult:
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && legacyEra(protocolOf(nil, ss)) {
				return &legacyToolsResult{r}, nil
			}
		}
		return res, err
	}
}

// legacyEra reports whether protocol version v has the 2025-11-25 tasks.
func legacyEra(v string) bool { return v >= protocolOldTasks && v < protocolSEPTasks }

// createTaskResult is the answer of a call that became task id.
func (s *Server) createTaskResult(id string) (mcp.Result, error) {
	v, err := s.tasks.Task(id)
	if err != nil {
		return nil, taskErr(err)
	}
	// The run the task follows, for a client or a view that follows runs
	// (the cell view, wait_run, get_value during the run).
	run := mcp.Meta{metaTaskRun: map[string]any{"session_id": v.Record.Session, "run_id": v.Record.Run}}
	if v.Record.Protocol >= protocolSEPTasks {
		t := s.sepTaskOf(v, "task", false)
		t.Meta = run
		return t, nil
	}
	lt := s.oldTaskOf(v)
	// 2025-11-25 tasks begin in working, whatever the run did meanwhile.
	lt.Status, lt.StatusMessage = tasks.Working, ""
	res := &legacyCreateResult{Task: lt}
	res.Meta = run
	return res, nil
}

// sepTaskResult is a task as SEP-2663 shows it: CreateTaskResult
// (resultType "task") and GetTaskResult (resultType "complete", with what
// its status inlines).
type sepTaskResult struct {
	mcp.ResultBase
	ResultType     string              `json:"resultType,omitempty"`
	TaskID         string              `json:"taskId"`
	Status         tasks.Status        `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result         json.RawMessage     `json:"result,omitempty"`
	Error          json.RawMessage     `json:"error,omitempty"`
}

func (s *Server) sepTaskOf(v tasks.View, resultType string, detailed bool) *sepTaskResult {
	t := &sepTaskResult{ResultType: resultType, TaskID: v.Record.ID, Status: v.Status, StatusMessage: v.Message,
		CreatedAt: stamp(v.Record.Created), LastUpdatedAt: stamp(v.Record.Updated), TTLMs: s.tasks.TTLOf(v.Record).Milliseconds(),
		PollIntervalMs: taskPollInterval.Milliseconds()}
	if !detailed {
		if t.Status == tasks.InputRequired {
			t.Status = tasks.Working // the questions come with tasks/get
		}
		return t
	}
	switch v.Status {
	case tasks.InputRequired:
		t.InputRequests = inputRequest(v.Run, v.Question).InputRequests
	case tasks.Completed:
		t.Result = v.Record.Result
	case tasks.Failed:
		t.Error = v.Record.Error
	}
	return t
}

// stamp is an ISO 8601 time as both designs write them.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ackResult is the empty acknowledgement of tasks/update and tasks/cancel
// (SEP-2663).
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType,omitempty"`
}

// oldTask is a task as 2025-11-25 shows it.
type oldTask struct {
	TaskID        string       `json:"taskId"`
	Status        tasks.Status `json:"status"`
	StatusMessage string       `json:"statusMessage,omitempty"`
	CreatedAt     string       `json:"createdAt"`
	LastUpdatedAt string       `json:"lastUpdatedAt"`
	TTL           int64        `json:"ttl"`
	PollInterval  int64        `json:"pollInterval,omitempty"`
}

func (s *Server) oldTaskOf(v tasks.View) oldTask {
	return oldTask{TaskID: v.Record.ID, Status: v.Status, StatusMessage: v.Message, CreatedAt: stamp(v.Record.Created),
		LastUpdatedAt: stamp(v.Record.Updated), TTL: s.tasks.TTLOf(v.Record).Milliseconds(), PollInterval: taskPollInterval.Milliseconds()}
}

type legacyCreateResult struct {
	mcp.ResultBase
	Task oldTask `json:"task"`
}

type legacyTaskResult struct {
	mcp.ResultBase
	oldTask
}

type legacyListResult struct {
	mcp.ResultBase
	Tasks      []oldTask `json:"tasks"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// rawResult is a stored result (a CallToolResult as JSON) with meta added
// to its _meta.
type rawResult struct {
	mcp.ResultBase
	body json.RawMessage
	meta mcp.Meta
}

func (r *rawResult) MarshalJSON() ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		return nil, err
	}
	meta, _ := m["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	for k, v := range r.meta {
		meta[k] = v
	}
	for k, v := range r.Meta {
		meta[k] = v
	}
	m["_meta"] = meta
	return json.Marshal(m)
}

// legacyInitializeResult is initialize's result with the 2025-11-25 tasks
// capability: tools/call takes tasks, tasks/list and tasks/cancel exist.
type legacyInitializeResult struct{ *mcp.InitializeResult }

func (r *legacyInitializeResult) MarshalJSON() ([]byte, error) {
	return patchJSON(r.InitializeResult, func(m map[string]any) {
		caps, _ := m["capabilities"].(map[string]any)
		if caps == nil {
			caps = map[string]any{}
			m["capabilities"] = caps
		}
		caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	})
}

// legacyToolsResult is tools/list's result with execution.taskSupport
// "optional" on the tools whose calls may become tasks.
type legacyToolsResult struct{ *mcp.ListToolsResult }

func (r *legacyToolsResult) MarshalJSON() ([]byte, error) {
	return patchJSON(r.ListToolsResult, func(m map[string]any) {
		list, _ := m["tools"].([]any)
		for _, t := range list {
			if tool, ok := t.(map[string]any); ok {
				if name, _ := tool["name"].(string); taskTools[name] {
					tool["execution"] = map[string]any{"taskSupport": "optional"}
				}
			}
		}
	})
}

// patchJSON marshals v, lets patch change it as a JSON object, and
// marshals that.
func patchJSON(v any, patch func(map[string]any)) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	patch(m)
	return json.Marshal(m)
}

// checkTaskHeaders applies SEP-2663's streamable HTTP binding to a POST
// body: tasks/get, tasks/update and tasks/cancel of protocol 2026-07-28
// carry the task id in the Mcp-Name header. A missing or different one is
// refused as the SDK refuses a tools/call whose Mcp-Name is not its tool's
// (-32020, HTTP 400). ok is false when the answer was written.
func checkTaskHeaders(w http.ResponseWriter, h http.Header, req *jsonrpc.Request) (ok bool) {
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return true
	}
	if v := h.Get("Mcp-Protocol-Version"); v < protocolSEPTasks {
		return true
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(req.Params, &p)
	msg := ""
	switch name := h.Get("Mcp-Name"); {
	case name == "":
		msg = fmt.Sprintf("missing required Mcp-Name header for method %q: it carries the task id", req.Method)
	case name != p.TaskID:
		msg = fmt.Sprintf("header mismatch: Mcp-Name header value '%s' does not match the body's taskId '%s'", name, p.TaskID)
	default:
		return true
	}
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
	return false
}
