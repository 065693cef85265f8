package mcpserver

import (
	"context"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunNotebookInput is the input of run_notebook.
type RunNotebookInput struct {
	SessionID  string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\"); created if missing"`
	Path       string   `json:"path" jsonschema:".ipynb or # %% script, relative to the session's working directory"`
	Start      *int     `json:"start,omitempty" jsonschema:"first code cell (0-based slice)"`
	End        *int     `json:"end,omitempty" jsonschema:"code cell to stop before (exclusive)"`
	Execute    *bool    `json:"execute,omitempty" jsonschema:"run the cells (default true); false only records them"`
	Timeout    *float64 `json:"timeout,omitempty" jsonschema:"seconds per cell; 0 = no limit"`
	Background bool     `json:"background,omitempty" jsonschema:"return a run_id at once; wait_run gets the result"`
}

func (s *Server) runNotebook(ctx context.Context, req *mcp.CallToolRequest, in RunNotebookInput) (*mcp.CallToolResult, RunOutput, error) {
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	var (
		path, lang string
		picked     []history.Cell
		lo, hi     int
	)
	ss, err := s.eng.LookupOrCreateChecked(sessionOr(in.SessionID), func(ss *engine.Session) error {
		tp, err := ss.ResolvePath(in.Path, engine.ReadAccess)
		if err != nil {
			return fmt.Errorf("run_notebook needs a path: %v", err)
		}
		path = tp.String()
		var cells []history.Cell
		cells, lang, err = engine.ReadNotebook(tp)
		if err != nil {
			return err
		}
		var codeN int
		picked, lo, hi, codeN = engine.SelectCells(cells, in.Start, in.End)
		if codeN == 0 {
			return fmt.Errorf("%s has no code cells", path)
		}
		if len(picked) == 0 {
			return fmt.Errorf("no code cells in that range: %s has %d (indices 0 to %d)", path, codeN, codeN-1)
		}
		// A notebook of another language is refused before a session is
		// made for it; a kernel already running is asked again below.
		return ss.CheckLanguage(lang, path)
	})
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	execute := in.Execute == nil || *in.Execute
	if !execute {
		// Entering cells in the history is quick, but it takes its turn
		// like any other change to the session.
		release, err := s.eng.WaitTurn(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta))
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		defer release()
		if err := ss.CheckLanguage(lang, path); err != nil {
			return errResult[RunOutput]("%v", err)
		}
		return s.loadCells(ss, path, picked, lo, hi)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		if _, _, err := ss.Kernel(ctx); err != nil {
			return errResult[RunOutput]("session %q: cannot start a kernel: %v", ss.ID(), err)
		}
		if err := ss.CheckLanguage(lang, path); err != nil {
			return errResult[RunOutput]("%v", err)
		}
		return callResult(s.results.LimitJoined(s.results.Cells(ctx, r, ss, path, picked, lo, hi, timeout)))
	}, runHandoff(ss))
}

// loadCells enters cells into the history without running them.
func (s *Server) loadCells(ss *engine.Session, path string, cells []history.Cell, lo, hi int) (*mcp.CallToolResult, RunOutput, error) {
	msg, behind := ss.LoadCells(path, cells, lo, hi)
	return textResult(msg), RunOutput{SessionID: ss.ID(), Status: "ok", Displays: []toolresult.Display{}, Note: msg, HistoryUnsaved: behind}, nil
}
