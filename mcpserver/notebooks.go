package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
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
		return s.limitJoined(s.runCells(ctx, r, ss, path, picked, lo, hi, timeout))
	}, runHandoff(ss))
}

// loadCells enters cells into the history without running them.
func (s *Server) loadCells(ss *engine.Session, path string, cells []history.Cell, lo, hi int) (*mcp.CallToolResult, RunOutput, error) {
	msg, behind := ss.LoadCells(path, cells, lo, hi)
	return textResult(msg), RunOutput{SessionID: ss.ID(), Status: "ok", Displays: []Display{}, Note: msg, HistoryUnsaved: behind}, nil
}

// runCells runs a notebook's cells in order in the caller's turn, each code
// cell as one history block, stopping at the first that does not succeed.
func (s *Server) runCells(ctx context.Context, r *engine.Run, ss *engine.Session, path string, cells []history.Cell, lo, hi int, timeout time.Duration) (*mcp.CallToolResult, RunOutput, error) {
	var (
		content []mcp.Content
		last    = RunOutput{SessionID: ss.ID(), RunID: r.ID(), Status: "ok", Displays: []Display{}}
		blocks  []BlockSummary
	)
	name := filepath.Base(path)
	total := hi - lo
	n := lo // the code cell's index in the notebook
	for _, c := range cells {
		if c.Type != "code" {
			now := time.Now()
			r.Record(history.Entry{Code: c.Source, CellType: c.Type, Source: "notebook:" + path, Generation: ss.Generation(), Start: now, End: now, Outputs: []history.Output{}})
			continue
		}
		r.SetProgress(n-lo+1, total)
		cc, out, err := s.runBlock(ctx, r, ss, c.Source, "notebook:"+path, timeout)
		if err != nil {
			return errResult[RunOutput]("running code cell %d of %s: %v", n, name, err)
		}
		block := ss.HistoryLen()
		blocks = append(blocks, BlockSummary{Block: block, Status: out.Status, ExecutionCount: out.ExecutionCount, Result: out.Result, Error: out.Error})
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf("[%s] %s", engine.CellLabel(n, c), out.Status)})
		content = append(content, cc...)
		last = out
		if out.Status != "ok" {
			head := fmt.Sprintf("Stopped at code cell %d of %s (%s); %d of %d code cells ran.", n, name, out.Status, n-lo+1, total)
			if out.Error != nil {
				head = fmt.Sprintf("Stopped at code cell %d of %s: %s. %d of %d code cells ran.", n, name, errorHeadline(out.Error), n-lo+1, total)
			}
			last.Blocks = blocks
			return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...), IsError: true}, last, nil
		}
		n++
	}
	last.Blocks = blocks
	head := fmt.Sprintf("Ran %d code cells of %s (%d to %d); all succeeded. Each is a block of the history.", total, name, lo, hi-1)
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...)}, last, nil
}
