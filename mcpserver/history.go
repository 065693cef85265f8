package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func historyURI(id string) string { return "session://" + id + "/history" }

// readHistoryResource serves session://{session_id}/history.
func (s *Server) readHistoryResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	u, err := url.Parse(req.Params.URI)
	if err != nil || u.Scheme != "session" || u.Path != "/history" {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	ss, err := s.eng.Lookup(u.Host)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	text := transcriptOf(ss, nil, nil)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

func transcriptOf(ss *engine.Session, start, end *int) string {
	entries, first := ss.Slice(start, end)
	if len(entries) == 0 {
		return "(no history)"
	}
	return history.Transcript(entries, first)
}

// HistoryInput selects a slice of a session's history, Python-style.
type HistoryInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Start     *int   `json:"start,omitempty" jsonschema:"first block (0-based slice; negative from the end)"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before (exclusive)"`
	Full      bool   `json:"full,omitempty" jsonschema:"outputs whole (default: a preview of each)"`
}

// DeleteHistoryInput is the input of delete_history: start (and end), or
// blocks.
type DeleteHistoryInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Start     *int   `json:"start,omitempty" jsonschema:"first block to delete (0-based; negative from the end)"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before (default: only start)"`
	Blocks    []int  `json:"blocks,omitempty" jsonschema:"instead of start/end: transcript numbers (1-based)"`
}

// DeleteHistoryOutput is the structured content of delete_history.
type DeleteHistoryOutput struct {
	SessionID string         `json:"session_id"`
	Removed   []RemovedBlock `json:"removed"`
	Left      int            `json:"left"`
	// HistoryUnsaved is set when the history file could not be rewritten
	// (a full disk): the delete is kept in memory and written once the
	// disk has room.
	HistoryUnsaved *engine.HistoryBacklog `json:"history_unsaved,omitempty"`
}

// RemovedBlock is a block delete_history removed.
type RemovedBlock struct {
	Block     int    `json:"block"` // its 1-based number before the delete
	FirstLine string `json:"first_line"`
}

// ExportInput is the input of export_history and save_script.
type ExportInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Path      string `json:"path" jsonschema:"file to write, relative to the session's working directory"`
	Start     *int   `json:"start,omitempty" jsonschema:"first block (0-based slice)"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before (exclusive)"`
}

// SaveNotebookInput is the input of save_notebook.
type SaveNotebookInput struct {
	ExportInput
	SkipErrors bool `json:"skip_errors,omitempty" jsonschema:"leave out the blocks that failed (error, timeout, interrupted)"`
}

// RerunInput is the input of rerun_code.
type RerunInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Start     *int     `json:"start,omitempty" jsonschema:"first block to re-run (0-based slice)"`
	End       *int     `json:"end,omitempty" jsonschema:"block to stop before (exclusive)"`
	Timeout   *float64 `json:"timeout,omitempty" jsonschema:"seconds per block; 0 = no limit"`
	// Background hands the run off at once.
	Background bool `json:"background,omitempty" jsonschema:"return a run_id at once; wait_run gets the result"`
}

// HistoryOutput is the structured content of get_history.
type HistoryOutput struct {
	SessionID  string `json:"session_id"`
	Total      int    `json:"total"`
	First      int    `json:"first"` // 1-based number of the first block shown
	Count      int    `json:"count"`
	Transcript string `json:"transcript"`
}

// ExportOutput is the structured content of the export tools.
type ExportOutput struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	Blocks    int    `json:"blocks"`
	Bytes     int    `json:"bytes"`
}

func (s *Server) addHistoryTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "get_history", Description: "Numbered transcript of code and outputs; [1] is index 0 of start/end.", Annotations: ro}, s.getHistory)
	addTool(s, &mcp.Tool{Name: "delete_history", Description: "Delete history blocks; the namespace is not touched."}, s.deleteHistory)
	addTool(s, &mcp.Tool{Name: "export_history", Description: "Write the transcript (code and outputs) to a text file."}, s.exportHistory)
	addTool(s, &mcp.Tool{Name: "save_script", Description: "Write the history's code as a .py script with # %% cells."}, s.saveScript)
	addTool(s, &mcp.Tool{Name: "save_notebook", Description: "Write the history as a .ipynb notebook with outputs and plots."}, s.saveNotebook)
	addTool(s, &mcp.Tool{Name: "run_notebook", Description: "Run a notebook or py:percent script cell by cell into the history; stops at the first error."}, s.runNotebook)
	addTool(s, &mcp.Tool{Name: "rerun_code", Description: "Restart the kernel and re-run history blocks (default all) in place, stopping at the first error; says which outputs changed."}, s.rerunCode)

	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "session://{session_id}/history",
		Name:        "session-history",
		Title:       "Session history",
		Description: "Numbered transcript of the code run in a session and its outputs",
		MIMEType:    "text/plain",
	}, s.readHistoryResource)
	s.addImageResources()
}

func (s *Server) getHistory(ctx context.Context, req *mcp.CallToolRequest, in HistoryInput) (*mcp.CallToolResult, HistoryOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[HistoryOutput]("%v", err)
	}
	entries, first := ss.Slice(in.Start, in.End)
	total := ss.HistoryLen()
	out := HistoryOutput{SessionID: ss.ID(), Total: total, First: first, Count: len(entries)}
	if len(entries) == 0 {
		out.Transcript = ""
		msg := fmt.Sprintf("No blocks in that range: session %q has %d.", ss.ID(), total)
		if total == 0 {
			msg = fmt.Sprintf("Session %q has no history yet.", ss.ID())
		}
		return textResult(msg), out, nil
	}
	out.Transcript = historyTranscript(entries, first, in.Full)
	text, _ := history.CutMiddle(out.Transcript, s.cfg.OutputLimit)
	out.Transcript = text
	return textResult(text), out, nil
}

func (s *Server) deleteHistory(ctx context.Context, req *mcp.CallToolRequest, in DeleteHistoryInput) (*mcp.CallToolResult, DeleteHistoryOutput, error) {
	switch {
	case in.Blocks != nil && (in.Start != nil || in.End != nil):
		return errResult[DeleteHistoryOutput]("give either blocks (1-based numbers, as the transcript shows them) or start/end (a 0-based slice), not both; nothing was deleted")
	case in.Blocks == nil && in.Start == nil:
		return errResult[DeleteHistoryOutput]("delete_history needs start (the 0-based index of the first block to delete) or blocks (1-based numbers, as the transcript shows them)")
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[DeleteHistoryOutput]("%v", err)
	}
	// In its turn, so that no run records a block between the read of the
	// history and its rewrite.
	release, err := s.eng.WaitTurn(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta))
	if err != nil {
		return errResult[DeleteHistoryOutput]("%v", err)
	}
	defer release()
	var removed []engine.Removed
	var left int
	if in.Blocks != nil {
		removed, left, err = ss.DeleteBlocks(in.Blocks)
	} else {
		removed, left, err = ss.DeleteHistory(in.Start, in.End)
	}
	if err != nil && !errors.Is(err, history.ErrNotDurable) {
		return errResult[DeleteHistoryOutput]("%v", err)
	}
	out := DeleteHistoryOutput{SessionID: ss.ID(), Removed: []RemovedBlock{}, Left: left}
	var b strings.Builder
	fmt.Fprintf(&b, "Deleted %d block(s) from session %q; %d remain.", len(removed), ss.ID(), left)
	if err != nil {
		fmt.Fprintf(&b, " The history file was rewritten, but: %v", err)
	}
	if out.HistoryUnsaved = ss.HistoryBacklog(); out.HistoryUnsaved != nil {
		b.WriteString(" " + out.HistoryUnsaved.Note())
	}
	for _, r := range removed {
		line := engine.FirstLine(r.Entry.Code)
		out.Removed = append(out.Removed, RemovedBlock{Block: r.Number, FirstLine: line})
		fmt.Fprintf(&b, "\n[%d] %s", r.Number, line)
	}
	return textResult(b.String()), out, nil
}

// export renders a slice of the history and writes it atomically.
func (s *Server) export(in ExportInput, what string, render func([]history.Entry, int, *engine.Session) ([]byte, error)) (*mcp.CallToolResult, ExportOutput, error) {
	return s.exportSome(in, what, nil, render)
}

// exportSome is export of a slice that render writes without the failed
// blocks skip reports (nil: none): render gets them all, so that the
// blocks it keeps keep their numbers, and the result counts those and
// says how many were left out.
func (s *Server) exportSome(in ExportInput, what string, skip func(history.Entry) bool, render func([]history.Entry, int, *engine.Session) ([]byte, error)) (*mcp.CallToolResult, ExportOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	path, err := ss.ResolvePath(in.Path, engine.WriteAccess)
	if err != nil {
		return errResult[ExportOutput]("cannot write the %s: %v", what, err)
	}
	x, err := ss.Export(path, what, in.Start, in.End, skip, render)
	if err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	note := ""
	if skip != nil {
		note = fmt.Sprintf("\nLeft out %d block(s) that failed (status error, timeout or interrupted).", x.Left)
	}
	out := ExportOutput{SessionID: ss.ID(), Path: path.String(), Blocks: x.Blocks, Bytes: x.Bytes}
	return textResult(fmt.Sprintf("Saved %d block(s) of session %q as a %s to %s%s", x.Blocks, ss.ID(), what, path, note)), out, nil
}

func (s *Server) exportHistory(ctx context.Context, req *mcp.CallToolRequest, in ExportInput) (*mcp.CallToolResult, ExportOutput, error) {
	return s.export(in, "transcript", func(e []history.Entry, first int, _ *engine.Session) ([]byte, error) {
		if len(e) == 0 {
			return []byte{}, nil
		}
		return []byte(history.Transcript(e, first)), nil
	})
}

func (s *Server) saveScript(ctx context.Context, req *mcp.CallToolRequest, in ExportInput) (*mcp.CallToolResult, ExportOutput, error) {
	return s.export(in, "script", func(e []history.Entry, first int, ss *engine.Session) ([]byte, error) {
		return []byte(history.Script(e, first, ss.ID())), nil
	})
}

func (s *Server) saveNotebook(ctx context.Context, req *mcp.CallToolRequest, in SaveNotebookInput) (*mcp.CallToolResult, ExportOutput, error) {
	var skip func(history.Entry) bool
	if in.SkipErrors {
		skip = history.Entry.Failed
	}
	return s.exportSome(in.ExportInput, "notebook", skip, func(e []history.Entry, first int, ss *engine.Session) ([]byte, error) {
		return history.NotebookWithout(e, first, ss.NotebookMeta(), skip)
	})
}

func (s *Server) rerunCode(ctx context.Context, req *mcp.CallToolRequest, in RerunInput) (*mcp.CallToolResult, RunOutput, error) {
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		entries, first := ss.Slice(in.Start, in.End)
		if err := ss.Restart(ctx); err != nil {
			return errResult[RunOutput]("session %q: restart failed: %v", ss.ID(), err)
		}
		return callResult(s.results.LimitJoined(s.results.Rerun(ctx, r, ss, entries, first, timeout)))
	}, runHandoff(ss))
}

// runSlice is run_code's history form: re-run blocks in the live kernel.
func (s *Server) runSlice(ctx context.Context, req *mcp.CallToolRequest, in RunCodeInput, timeout time.Duration) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		entries, first := ss.Slice(in.Start, in.End)
		if len(entries) == 0 {
			n := ss.HistoryLen()
			return errResult[RunOutput]("no blocks in that range: session %q has %d", ss.ID(), n)
		}
		return callResult(s.results.LimitJoined(s.results.Replay(ctx, r, ss, entries, first, timeout)))
	}, runHandoff(ss))
}
