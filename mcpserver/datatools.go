package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/engine/datatools"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The DataFrame tools: load_data, describe_data, plot_data and estimate_ols
// run generated code like run_code (the history keeps it), after checking
// in the kernel what they name.

// dataRun runs generated code in the session like run_code (it is kept in
// the history), and turns a missing package into a pointer to
// install_package.
func (s *Server) dataRun(ctx context.Context, req *mcp.CallToolRequest, id, code string) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := s.eng.LookupOrCreate(sessionOr(id))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	// The hint is added inside the run: its result is shared by whichever
	// calls return it, and must not change under them.
	return s.executeThen(ctx, req, ss, code, "", s.cfg.Timeout, false, func(res *toolresult.Result, out *RunOutput) {
		if out.Error != nil {
			toolresult.AddInstallHint(res, out)
		}
	})
}

func (s *Server) loadData(ctx context.Context, req *mcp.CallToolRequest, in LoadDataInput) (*mcp.CallToolResult, RunOutput, error) {
	name := datatools.NameOr(in.Name)
	if err := datatools.CheckName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	// The path and format are checked before the session is looked up or
	// created: a call with bad input leaves no session behind.
	// The kernel reads the file, in its sandbox; the server only checks
	// it, through the folder it was found in.
	// A file in the user's server is checked through its contents API and
	// named from the server's root (engine.ToolPath.Python).
	var code string
	_, err := s.eng.LookupOrCreateChecked(sessionOr(in.SessionID), func(ss *engine.Session) error {
		tp, err := ss.ResolvePath(in.Path, engine.ReadAccess)
		if err != nil {
			return fmt.Errorf("load_data: %v", err)
		}
		expr, err := tp.Python()
		if err != nil {
			return fmt.Errorf("load_data: %v", err)
		}
		if err := tp.CheckFile("load", 0); err != nil {
			return err
		}
		read, err := datatools.ReaderOf(tp.String(), expr, in.Format)
		if err != nil {
			return err
		}
		code = datatools.LoadCode(name, read)
		return nil
	})
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return s.dataRun(ctx, req, in.SessionID, code)
}

func (s *Server) describeData(ctx context.Context, req *mcp.CallToolRequest, in DataNameInput) (*mcp.CallToolResult, RunOutput, error) {
	name := datatools.NameOr(in.Name)
	if err := datatools.CheckName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	chk := engine.DataCheck{Tool: "describe_data", Name: name, Columns: []engine.ColumnUse{}}
	return s.checkedDataRun(ctx, req, in.SessionID, chk, func(engine.DataFacts) string { return datatools.DescribeCode(name) })
}

func (s *Server) plotData(ctx context.Context, req *mcp.CallToolRequest, in PlotDataInput) (*mcp.CallToolResult, RunOutput, error) {
	name := datatools.NameOr(in.Name)
	if err := datatools.CheckName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	p, err := datatools.NewPlot(name, in.Kind, in.X, in.Y)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return s.checkedDataRun(ctx, req, in.SessionID, p.Check, p.Code)
}

func (s *Server) estimateOLS(ctx context.Context, req *mcp.CallToolRequest, in EstimateOLSInput) (*mcp.CallToolResult, datatools.OLSFit, error) {
	name := datatools.NameOr(in.Name)
	if err := datatools.CheckName("name", name); err != nil {
		return errResult[datatools.OLSFit]("%v", err)
	}
	chk, code, err := datatools.OLS{Name: name, Y: in.Y, X: in.X, Robust: in.Robust, Cov: in.Cov, MaxLags: in.MaxLags}.Plan()
	if err != nil {
		return errResult[datatools.OLSFit]("%v", err)
	}
	const model = datatools.OLSModel

	ss, err := s.eng.LookupOrCreate(sessionOr(in.SessionID))
	if err != nil {
		return errResult[datatools.OLSFit]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, datatools.OLSFit, error) {
		if _, err := ss.CheckData(ctx, chk, s.eng.QueryLimit()); err != nil {
			return errResult[datatools.OLSFit]("%v", err)
		}
		return s.fitOLS(ctx, r, ss, code, model)
	}, func(v engine.RunView, output string) datatools.OLSFit {
		return datatools.OLSFit{SessionID: ss.ID(), Model: model, Coefficients: []datatools.Coefficient{}, RunID: v.RunID, Status: v.Status}
	})
}

// checkedDataRun is dataRun for a tool that reads a DataFrame: in the
// run's turn, it checks what chk names first and runs code(facts) only if
// all is there. A session that does not exist yet is created, as dataRun
// does: a load_data sent just before may not have created it yet, since
// calls take their place in the session's order only in the run.
func (s *Server) checkedDataRun(ctx context.Context, req *mcp.CallToolRequest, id string, chk engine.DataCheck, code func(engine.DataFacts) string) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := s.eng.LookupOrCreate(sessionOr(id))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		f, err := ss.CheckData(ctx, chk, s.eng.QueryLimit())
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		parts, out, err := s.results.RunBlock(ctx, r, ss, code(f), "", s.cfg.Timeout)
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		res := &toolresult.Result{Parts: parts, IsError: out.Status != "ok"}
		if out.Error != nil {
			toolresult.AddInstallHint(res, &out)
		}
		return callResult(res, out, nil)
	}, runHandoff(ss))
}

// fitOLS runs estimate_ols's code in the caller's turn and reads the
// fitted model's statistics.
func (s *Server) fitOLS(ctx context.Context, r *engine.Run, ss *engine.Session, code, model string) (*mcp.CallToolResult, datatools.OLSFit, error) {
	parts, run, err := s.results.RunBlock(ctx, r, ss, code, "", s.cfg.Timeout)
	if err != nil {
		return errResult[datatools.OLSFit]("%v", err)
	}
	if run.Status != "ok" {
		res := &toolresult.Result{Parts: parts, IsError: true}
		if run.Error != nil {
			toolresult.AddInstallHint(res, &run)
		}
		var texts []string
		for _, p := range res.Parts {
			if p.Image == nil && p.Link == nil {
				texts = append(texts, p.Text)
			}
		}
		return errResult[datatools.OLSFit]("%s", strings.Join(texts, "\n"))
	}
	raw, err := ss.Query(ctx, engine.PyOLSStats, map[string]any{"model": model, "lags": 2}, s.eng.QueryLimit())
	if err != nil {
		return errResult[datatools.OLSFit]("the model was fitted (see the history) but its statistics could not be read: %v", err)
	}
	out, text, err := datatools.ParseOLS(raw, ss.ID(), model, s.cfg.OutputLimit)
	if err != nil {
		return errResult[datatools.OLSFit]("%v", err)
	}
	return textResult(text), out, nil
}
