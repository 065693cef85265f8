package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool inputs. Every session_id defaults to "default".

// RunCodeInput is the input of run_code.
type RunCodeInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\"); created if missing"`
	Code      *string  `json:"code,omitempty" jsonschema:"code to execute as a notebook cell"`
	Start     *int     `json:"start,omitempty" jsonschema:"instead of code: first history block to re-run (0-based slice)"`
	End       *int     `json:"end,omitempty" jsonschema:"instead of code: block to stop before (exclusive)"`
	Timeout   *float64 `json:"timeout,omitempty" jsonschema:"seconds, then interrupt (namespace kept); 0 = no limit"`
	// Background hands the run off at once.
	Background bool `json:"background,omitempty" jsonschema:"return a run_id at once; wait_run gets the result"`
}

// RunFileInput is the input of run_file.
type RunFileInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\"); created if missing"`
	Path      string   `json:"path" jsonschema:"file to run, relative to the session's working directory"`
	Timeout   *float64 `json:"timeout,omitempty" jsonschema:"seconds, then interrupt; 0 = no limit"`
	// Background hands the run off at once.
	Background bool `json:"background,omitempty" jsonschema:"return a run_id at once; wait_run gets the result"`
}

// SessionInput names a session whose id defaults to "default".
type SessionInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
}

// RequiredSessionInput names a session explicitly.
type RequiredSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"session id"`
}

// CreateSessionInput is the input of create_session.
type CreateSessionInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"new session id (default \"default\")"`
	Kernel    string `json:"kernel,omitempty" jsonschema:"kernelspec name (see list_kernels)"`
	Python    string `json:"python,omitempty" jsonschema:"path of a Python with ipykernel"`
	Cwd       string `json:"cwd,omitempty" jsonschema:"kernel working directory"`
	// Remote kernels (remote.go).
	KernelID       string `json:"kernel_id,omitempty" jsonschema:"attach to this running gateway kernel (shared)"`
	ConnectionFile string `json:"connection_file,omitempty" jsonschema:"attach to a local kernel by its connection file's absolute path (shared)"`
}

// ResetInput is the input of reset_session and reset_run_context.
type ResetInput struct {
	SessionID string `json:"session_id" jsonschema:"session id"`
	Force     bool   `json:"force,omitempty" jsonschema:"also restart an attached (shared) kernel; ask the user first"`
}

// InstallPackageInput is the input of install_package.
type InstallPackageInput struct {
	PackageName string `json:"package_name" jsonschema:"pip requirement, e.g. pandas>=2"`
	SessionID   string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
}

// Tool outputs.

// SessionSummary is one row of list_sessions.
type SessionSummary = engine.SessionSummary

// ListSessionsOutput is the structured content of list_sessions.
type ListSessionsOutput struct {
	Sessions []SessionSummary   `json:"sessions"`
	Pool     engine.PoolSummary `json:"pool"`
	UIURL    string             `json:"ui_url,omitempty"` // the web view (--ui), where the person watches
}

// SessionStatusOutput is the structured content of session_status.
type SessionStatusOutput struct {
	engine.SessionInfo
	UIURL string `json:"ui_url,omitempty"` // the web view (--ui), where the person watches
	// RunNote is set when the probe ran beside a run in progress.
	RunNote
}

// MessageOutput is the structured content of tools that only report.
type MessageOutput struct {
	SessionID string `json:"session_id"`
	Message   string `json:"message"`
}

func (s *Server) addTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "create_session", Description: "Start a session with its own kernel, or attach to a running one (shared; delete only detaches). Not needed for the default kernel: run_code creates sessions."}, s.createSession)
	addTool(s, &mcp.Tool{Name: "list_sessions", Description: "List sessions: state, kernel, pid, history length, run in progress.", Annotations: ro}, s.listSessions)
	addTool(s, &mcp.Tool{Name: "run_code", Description: "Run code in a persistent session like a notebook cell: variables persist, the last expression's value and plots are shown. Without code, start/end re-run history blocks."}, s.runCode)
	addTool(s, &mcp.Tool{Name: "run_file", Description: "Run a file's code in the session's namespace (its variables stay defined)."}, s.runFile)
	addTool(s, &mcp.Tool{Name: "interrupt_session", Description: "Interrupt running code (Ctrl-C); the namespace is kept."}, s.interruptSession)
	addTool(s, &mcp.Tool{Name: "reset_session", Description: "Clear the namespace and the history; the session stays."}, s.resetSession)
	addTool(s, &mcp.Tool{Name: "reset_run_context", Description: "Restart the kernel: namespace cleared, history kept."}, s.resetRunContext)
	addTool(s, &mcp.Tool{Name: "delete_session", Description: "Shut the kernel down and forget the session.", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, s.deleteSession)
	addTool(s, &mcp.Tool{Name: "install_package", Description: "pip install into the session's own interpreter (not the server's)."}, s.installPackage)
	addTool(s, &mcp.Tool{Name: "session_status", Description: "Interpreter, version, pid, memory, working directory and key packages of a session.", Annotations: ro}, s.sessionStatus)
	s.addHistoryTools()
	addTool(s, &mcp.Tool{Name: "list_kernels", Description: "Installed kernelspecs and the Python interpreters found.", Annotations: ro}, s.listKernels)
}

func ptr[T any](v T) *T { return &v }

func sessionOr(id string) string {
	if id == "" {
		return engine.DefaultSession
	}
	return id
}

// errResult is a tool error: the message is shown to the model as an
// isError result, and the session stays as it was.
func errResult[Out any](format string, args ...any) (*mcp.CallToolResult, Out, error) {
	var zero Out
	return nil, zero, fmt.Errorf(format, args...)
}

// timeoutFor is the timeout a call asks for, --timeout by default.
func (s *Server) timeoutFor(t *float64) (time.Duration, error) {
	return engine.TimeoutOr(t, s.cfg.Timeout)
}

func (s *Server) runCode(ctx context.Context, req *mcp.CallToolRequest, in RunCodeInput) (*mcp.CallToolResult, RunOutput, error) {
	id := sessionOr(in.SessionID)
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	if in.Code == nil {
		if in.Start == nil && in.End == nil {
			return errResult[RunOutput]("run_code needs code: pass the code to execute (or start/end to re-run blocks of the history)")
		}
		return s.runSlice(ctx, req, in, timeout)
	}
	if in.Start != nil || in.End != nil {
		return errResult[RunOutput]("give code or start/end, not both: start/end re-run history blocks instead of new code")
	}
	if strings.TrimSpace(*in.Code) == "" {
		return errResult[RunOutput]("code is empty: pass the code to execute")
	}
	ss, err := s.eng.LookupOrCreate(id)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return s.execute(ctx, req, ss, *in.Code, "", timeout, in.Background)
}

func (s *Server) runFile(ctx context.Context, req *mcp.CallToolRequest, in RunFileInput) (*mcp.CallToolResult, RunOutput, error) {
	id := sessionOr(in.SessionID)
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	var path string
	var code []byte
	ss, err := s.eng.LookupOrCreateChecked(id, func(ss *engine.Session) error {
		tp, err := ss.ResolvePath(in.Path, engine.ReadAccess)
		if err != nil {
			return fmt.Errorf("run_file: %v", err)
		}
		path = tp.String()
		code, err = tp.ReadFile("run", 10<<20)
		return err
	})
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return s.execute(ctx, req, ss, string(code), "file:"+path, timeout, in.Background)
}

// execute runs code in the session as a run in its turn and renders the
// result, or hands the run off (see runTool).
func (s *Server) execute(ctx context.Context, req *mcp.CallToolRequest, ss *engine.Session, code, source string, timeout time.Duration, background bool) (*mcp.CallToolResult, RunOutput, error) {
	return s.executeThen(ctx, req, ss, code, source, timeout, background, nil)
}

// executeThen is execute with then applied to the result inside the run, so
// that every call that returns it (the first, or a wait_run) sees the same.
func (s *Server) executeThen(ctx context.Context, req *mcp.CallToolRequest, ss *engine.Session, code, source string, timeout time.Duration, background bool, then func(*toolresult.Result, *RunOutput)) (*mcp.CallToolResult, RunOutput, error) {
	return runTool(s, ctx, req, ss, background, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		parts, out, err := s.results.RunBlock(ctx, r, ss, code, source, timeout)
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		res := &toolresult.Result{Parts: parts, IsError: out.Status != "ok"}
		if then != nil {
			then(res, &out)
		}
		return callResult(res, out, nil)
	}, runHandoff(ss))
}

// runHandoff is run_code's output for a call that returns before its run
// ends.
func runHandoff(ss *engine.Session) func(v engine.RunView, output string) RunOutput {
	return func(v engine.RunView, output string) RunOutput {
		return RunOutput{SessionID: ss.ID(), RunID: v.RunID, Status: v.Status, Output: output, Displays: []toolresult.Display{},
			Prompt: v.Prompt, Password: v.Password, ElapsedMS: v.ElapsedMS}
	}
}

func (s *Server) createSession(ctx context.Context, req *mcp.CallToolRequest, in CreateSessionInput) (*mcp.CallToolResult, engine.SessionInfo, error) {
	id := sessionOr(in.SessionID)
	ss, err := s.eng.Create(ctx, id, engine.Choice{Kernel: in.Kernel, Python: in.Python, Cwd: in.Cwd, KernelID: in.KernelID, ConnectionFile: in.ConnectionFile}, s.placeOf(id, req.Params.Meta))
	if starting := (*engine.StillStarting)(nil); errors.As(err, &starting) {
		return textResult(starting.Error() + "."), ss.Describe(), nil
	}
	if err != nil {
		return errResult[engine.SessionInfo]("%v", err)
	}
	info := ss.Describe()
	text := fmt.Sprintf("Session %q started: %s %s (kernel %s, pid %d).", id, info.Language, info.Version, info.Kernel, info.Pid)
	if ss.Choice().Attached() || s.cfg.GatewayURL != "" {
		text = remoteStartedText(id, info, ss)
	}
	return textResult(text), info, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) listSessions(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListSessionsOutput, error) {
	var out ListSessionsOutput
	var text string
	out.Sessions, out.Pool, text = s.eng.SessionList(s.cfg.UIURL)
	out.UIURL = s.cfg.UIURL
	return textResult(text), out, nil
}

func (s *Server) interruptSession(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, MessageOutput, error) {
	id := sessionOr(in.SessionID)
	ss, err := s.eng.Lookup(id)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	msg, _, err := s.eng.Interrupt(ctx, ss)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	out := MessageOutput{SessionID: id, Message: msg}
	if strings.HasPrefix(msg, "Nothing to interrupt:") {
		out.Message = "no kernel running"
	}
	return textResult(msg), out, nil
}

func (s *Server) resetSession(ctx context.Context, req *mcp.CallToolRequest, in ResetInput) (*mcp.CallToolResult, MessageOutput, error) {
	return s.reset(ctx, req, in.SessionID, true, in.Force)
}

func (s *Server) resetRunContext(ctx context.Context, req *mcp.CallToolRequest, in ResetInput) (*mcp.CallToolResult, MessageOutput, error) {
	return s.reset(ctx, req, in.SessionID, false, in.Force)
}

func (s *Server) reset(ctx context.Context, req *mcp.CallToolRequest, id string, clearHistory, force bool) (*mcp.CallToolResult, MessageOutput, error) {
	if id == "" {
		return errResult[MessageOutput]("session_id is required")
	}
	ss, err := s.eng.Lookup(id)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	msg, err := s.eng.Reset(ctx, ss, s.placeOf(id, req.Params.Meta), clearHistory, force)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	return textResult(msg), MessageOutput{SessionID: id, Message: msg}, nil
}

func (s *Server) deleteSession(ctx context.Context, req *mcp.CallToolRequest, in RequiredSessionInput) (*mcp.CallToolResult, MessageOutput, error) {
	if in.SessionID == "" {
		return errResult[MessageOutput]("session_id is required")
	}
	ss, err := s.eng.Lookup(in.SessionID)
	if err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	if err := s.eng.Delete(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta)); err != nil {
		return errResult[MessageOutput]("%v", err)
	}
	msg := fmt.Sprintf("Session %q deleted.", ss.ID())
	return textResult(msg), MessageOutput{SessionID: ss.ID(), Message: msg}, nil
}

// InstallOutput is the structured content of install_package.
type InstallOutput struct {
	SessionID   string `json:"session_id"`
	PackageName string `json:"package_name"`
	ExitCode    int    `json:"exit_code"`
	Output      string `json:"output"`
	// RunID and Status are set when the call handed the install off as a
	// run still going (see wait_run).
	RunID  string `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
}

func (s *Server) installPackage(ctx context.Context, req *mcp.CallToolRequest, in InstallPackageInput) (*mcp.CallToolResult, InstallOutput, error) {
	name := strings.TrimSpace(in.PackageName)
	if name == "" {
		return errResult[InstallOutput]("package_name is required, e.g. \"requests\" or \"pandas>=2\"")
	}
	if !engine.ValidRequirement(name) {
		return errResult[InstallOutput]("invalid package_name %q: give a package name with optional [extras] and version, e.g. \"requests\" or \"pandas>=2,<3\"", name)
	}
	if err := s.eng.InstallRefused(); err != nil {
		return errResult[InstallOutput]("%v", err)
	}
	ss, err := s.eng.LookupOrCreate(sessionOr(in.SessionID))
	if err != nil {
		return errResult[InstallOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, InstallOutput, error) {
		return s.pipInstall(ctx, ss, name)
	}, func(v engine.RunView, output string) InstallOutput {
		return InstallOutput{SessionID: ss.ID(), PackageName: name, ExitCode: -1, Output: output, RunID: v.RunID, Status: v.Status}
	})
}

// pipInstall runs pip in the session's kernel, in the caller's turn.
func (s *Server) pipInstall(ctx context.Context, ss *engine.Session, name string) (*mcp.CallToolResult, InstallOutput, error) {
	inst, err := ss.Install(ctx, name)
	if err != nil {
		return errResult[InstallOutput]("%v", err)
	}
	out := InstallOutput{SessionID: ss.ID(), PackageName: name, ExitCode: inst.ExitCode, Output: inst.Output}
	if out.ExitCode != 0 {
		r := textResult(fmt.Sprintf("pip install %s failed (exit code %d):\n%s%s", name, out.ExitCode, out.Output, s.eng.InstallNote()))
		r.IsError = true
		return r, out, nil
	}
	return textResult(fmt.Sprintf("Installed %s into %s's interpreter.\n%s", name, ss.ID(), inst.Tail(3))), out, nil
}

func (s *Server) sessionStatus(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, SessionStatusOutput, error) {
	id := sessionOr(in.SessionID)
	ss, err := s.eng.Lookup(id)
	if err != nil {
		return errResult[SessionStatusOutput]("%v", err)
	}
	st := ss.Status(ctx)
	var readNote RunNote
	if st.DuringRun != "" {
		readNote = RunNote{DuringRun: st.DuringRun, ReadNote: st.Note}
	}
	return textResult(st.Text(id, s.cfg.UIURL)), SessionStatusOutput{st.Info, s.cfg.UIURL, readNote}, nil
}

func (s *Server) listKernels(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, engine.KernelList, error) {
	out, text, err := s.eng.ListKernels(ctx)
	if err != nil {
		return errResult[engine.KernelList]("%v", err)
	}
	return textResult(text), out, nil
}
