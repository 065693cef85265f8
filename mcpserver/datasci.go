package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/engine/datatools"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Inputs.

// GetValueInput is the input of get_value.
type GetValueInput struct {
	SessionID  string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Expression string `json:"expression" jsonschema:"Python expression, e.g. model.params (R on an R kernel)"`
	Orient     string `json:"orient,omitempty" jsonschema:"DataFrames as split {columns, index, data} (default) or records"`
	Head       *int   `json:"head,omitempty" jsonschema:"only the first n rows or items"`
}

// CompleteInput is the input of complete.
type CompleteInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Code      string `json:"code" jsonschema:"the code being written"`
	CursorPos *int   `json:"cursor_pos,omitempty" jsonschema:"cursor offset in characters (default: end)"`
}

// InspectInput is the input of inspect.
type InspectInput struct {
	SessionID   string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Code        string `json:"code" jsonschema:"code with the name, e.g. pd.read_csv"`
	CursorPos   *int   `json:"cursor_pos,omitempty" jsonschema:"cursor offset in characters (default: end)"`
	DetailLevel int    `json:"detail_level,omitempty" jsonschema:"0 docstring, 1 also source"`
}

// SaveFigureInput is the input of save_figure.
type SaveFigureInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Path      string `json:"path" jsonschema:"file to write, relative to the session's working directory"`
	Index     int    `json:"index,omitempty" jsonschema:"1 (default) the latest image, 2 the one before"`
}

// LoadDataInput is the input of load_data.
type LoadDataInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Path      string `json:"path" jsonschema:"data file, relative to the session's working directory"`
	Name      string `json:"name,omitempty" jsonschema:"variable to load into (default df)"`
	Format    string `json:"format,omitempty" jsonschema:"csv, tsv, parquet, excel, json, jsonl (default: by extension)"`
}

// DataNameInput names a DataFrame in a session.
type DataNameInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Name      string `json:"name,omitempty" jsonschema:"DataFrame variable (default df)"`
}

// EstimateOLSInput is the input of estimate_ols.
type EstimateOLSInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Name      string   `json:"name,omitempty" jsonschema:"DataFrame variable (default df)"`
	Y         string   `json:"y" jsonschema:"dependent column"`
	X         []string `json:"x" jsonschema:"regressor columns (a constant is added)"`
	Robust    bool     `json:"robust,omitempty" jsonschema:"HC3 robust standard errors"`
	Cov       string   `json:"cov,omitempty" jsonschema:"nonrobust (default), HC0-HC3, or HAC (Newey-West; needs maxlags)"`
	MaxLags   *int     `json:"maxlags,omitempty" jsonschema:"lags for cov HAC"`
}

// PlotDataInput is the input of plot_data.
type PlotDataInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	Name      string `json:"name,omitempty" jsonschema:"DataFrame variable (default df)"`
	Kind      string `json:"kind" jsonschema:"line, scatter, hist, bar or box"`
	X         string `json:"x,omitempty" jsonschema:"x column (scatter needs it; default the index); box: one box of y per x value"`
	Y         string `json:"y,omitempty" jsonschema:"column to plot (default: every numeric one)"`
}

// Outputs.

// GetValueOutput is the structured content of get_value.
type GetValueOutput struct {
	SessionID  string `json:"session_id"`
	Expression string `json:"expression"`
	// Type is the Python type of the value, e.g. pandas.core.frame.DataFrame
	// (on R, its class: data.frame).
	Type string `json:"type"`
	// Shape says how big the whole value is, e.g. "203 rows x 4 columns".
	Shape string `json:"shape,omitempty"`
	// Value is the value as JSON: a DataFrame as {columns, index, data}
	// (orient split) or {columns, index, records}, a Series as {name,
	// index, values}; NaN, NaT and None as null.
	Value any `json:"value"`
	// Shown and Total are set when head left part of the value out: Shown
	// of Total rows or items are in Value.
	Shown int    `json:"shown,omitempty"`
	Total int    `json:"total,omitempty"`
	Note  string `json:"note,omitempty"`
	RunNote
}

// RunNote says how a read met a run in progress: DuringRun names the run
// it was read beside (values may change), or ReadNote why it waited for it.
type RunNote struct {
	DuringRun string `json:"during_run,omitempty"`
	ReadNote  string `json:"read_note,omitempty"`
}

// prefix puts the note before a read's text.
func (n RunNote) prefix(text string) string {
	if n.ReadNote == "" {
		return text
	}
	return n.ReadNote + "\n" + text
}

// Variable is one row of list_variables.
type Variable = datatools.Variable

// ListVariablesOutput is the structured content of list_variables.
type ListVariablesOutput struct {
	SessionID string     `json:"session_id"`
	Variables []Variable `json:"variables"`
	// Total counts every name; Variables holds the first 500 by name.
	Total int `json:"total"`
	RunNote
}

// CompleteOutput is the structured content of complete.
type CompleteOutput struct {
	Matches     []string `json:"matches"`
	CursorStart int      `json:"cursor_start"`
	CursorEnd   int      `json:"cursor_end"`
	RunNote
}

// InspectOutput is the structured content of inspect.
type InspectOutput struct {
	Found bool   `json:"found"`
	Text  string `json:"text"`
	RunNote
}

// SaveFigureOutput is the structured content of save_figure.
type SaveFigureOutput struct {
	Path     string `json:"path"`
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
	// Block is the history block (1-based, as get_history numbers them)
	// that produced the image.
	Block int `json:"block"`
}

func (s *Server) addDataTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "get_value", Description: "Evaluate an expression and return its value as JSON (numpy, pandas included); head previews.", OutputSchema: getValueSchema()}, s.getValue)
	addTool(s, &mcp.Tool{Name: "list_variables", Description: "The session's variables: name, type, shape, dtype and a short repr.", Annotations: ro}, s.listVariables)
	addTool(s, &mcp.Tool{Name: "complete", Description: "Code completions from the kernel at cursor_pos.", Annotations: ro}, s.complete)
	addTool(s, &mcp.Tool{Name: "inspect", Description: "The kernel's help (obj?) for the name at cursor_pos.", Annotations: ro}, s.inspect)
	addTool(s, &mcp.Tool{Name: "save_figure", Description: "Write an image the session produced to a file, as produced."}, s.saveFigure)
	addTool(s, &mcp.Tool{Name: "load_data", Description: "Load a data file into a pandas DataFrame; returns shape, dtypes, first rows."}, s.loadData)
	addTool(s, &mcp.Tool{Name: "describe_data", Description: "Summary statistics and missing values of a DataFrame."}, s.describeData)
	addTool(s, &mcp.Tool{Name: "estimate_ols", Description: "OLS of y on x with statsmodels (result in variable model): coefficients, errors, R², diagnostics."}, s.estimateOLS)
	addTool(s, &mcp.Tool{Name: "plot_data", Description: "Plot a DataFrame with pandas and matplotlib; returns the image."}, s.plotData)
}

// getValueSchema is GetValueOutput's schema with value as an object schema
// allowing any JSON: inferred from an interface field it would be the
// boolean schema true, which some clients refuse where they expect an object.
func getValueSchema() *jsonschema.Schema {
	sch, err := jsonschema.For[GetValueOutput](nil)
	if err != nil {
		panic(err)
	}
	sch.Properties["value"] = &jsonschema.Schema{Description: "the value as JSON, of any JSON type"}
	return sch
}

// readQuery is engine.ReadQuery of a call: beside a run in progress when
// it can, else in the call's turn.
func (s *Server) readQuery(ctx context.Context, req *mcp.CallToolRequest, ss *engine.Session, src string, args map[string]any) (json.RawMessage, RunNote, error) {
	raw, during, note, err := s.eng.ReadQuery(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta), src, args)
	return raw, RunNote{DuringRun: during, ReadNote: note}, err
}

// beside returns the session's reader beside its run in progress, or nil
// and the note saying why the read waits for the run.
func (s *Server) beside(ctx context.Context, id string) (*engine.Beside, RunNote, error) {
	ss, err := s.eng.Lookup(sessionOr(id))
	if err != nil {
		return nil, RunNote{}, nil
	}
	b, note, err := s.eng.BesideRead(ctx, ss)
	if b != nil {
		return b, RunNote{DuringRun: b.RunID(), ReadNote: b.Note()}, nil
	}
	return nil, RunNote{ReadNote: note}, err
}

func (s *Server) getValue(ctx context.Context, req *mcp.CallToolRequest, in GetValueInput) (*mcp.CallToolResult, GetValueOutput, error) {
	expr := strings.TrimSpace(in.Expression)
	if expr == "" {
		return errResult[GetValueOutput]("get_value needs an expression, e.g. df.head() or total")
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[GetValueOutput]("%v", err)
	}
	args, err := datatools.GetValueArgs(expr, in.Orient, in.Head)
	if err != nil {
		return errResult[GetValueOutput]("%v", err)
	}
	raw, rn, err := s.readQuery(ctx, req, ss, engine.PyGetValue, args)
	if err != nil {
		var pe *engine.PyError
		if errors.As(err, &pe) {
			return errResult[GetValueOutput]("the value of %s cannot be returned as JSON: %v", expr, pe)
		}
		return errResult[GetValueOutput]("%v", err)
	}
	v, err := datatools.ParseValue(expr, raw)
	if err != nil {
		return errResult[GetValueOutput]("%v", err)
	}
	out := GetValueOutput{SessionID: ss.ID(), Expression: in.Expression, Type: v.Type, Shape: v.Shape, Value: v.Value, Shown: v.Shown, Total: v.Total, Note: v.Note, RunNote: rn}
	return textResult(rn.prefix(v.Text(in.Expression, s.cfg.OutputLimit))), out, nil
}

func (s *Server) listVariables(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, ListVariablesOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[ListVariablesOutput]("%v", err)
	}
	raw, rn, err := s.readQuery(ctx, req, ss, engine.PyListVariables, datatools.ListVariablesArgs())
	if err != nil {
		return errResult[ListVariablesOutput]("%v", err)
	}
	out := ListVariablesOutput{SessionID: ss.ID(), RunNote: rn}
	if err := json.Unmarshal(raw, &out); err != nil {
		return errResult[ListVariablesOutput]("bad reply from the kernel: %v", err)
	}
	if out.Variables == nil {
		out.Variables = []Variable{}
	}
	return textResult(rn.prefix(datatools.VariablesText(out.Variables, out.Total, s.cfg.OutputLimit))), out, nil
}

func (s *Server) complete(ctx context.Context, req *mcp.CallToolRequest, in CompleteInput) (*mcp.CallToolResult, CompleteOutput, error) {
	pos, err := datatools.CursorOr(in.Code, in.CursorPos)
	if err != nil {
		return errResult[CompleteOutput]("%v", err)
	}
	var r *kernel.CompleteReply
	b, rn, err := s.beside(ctx, in.SessionID)
	if err != nil {
		return errResult[CompleteOutput]("%v", err)
	}
	if b != nil {
		r, err = b.Complete(ctx, in.Code, pos)
	} else {
		var k *kernel.Kernel
		if k, err = s.eng.KernelFor(ctx, sessionOr(in.SessionID)); err != nil {
			return errResult[CompleteOutput]("%v", err)
		}
		qctx, cancel := context.WithTimeout(ctx, s.eng.QueryLimit())
		defer cancel()
		r, err = k.Complete(qctx, in.Code, pos)
	}
	if err != nil {
		if b != nil {
			// The error says it was beside the run; the note is for values.
			return errResult[CompleteOutput]("complete: %v", err)
		}
		return errResult[CompleteOutput]("complete: %v", rn.prefix(err.Error()))
	}
	out := CompleteOutput{Matches: r.Matches, CursorStart: r.CursorStart, CursorEnd: r.CursorEnd, RunNote: rn}
	if out.Matches == nil {
		out.Matches = []string{}
	}
	text := "No completions."
	if len(out.Matches) > 0 {
		text = strings.Join(out.Matches, "\n")
	}
	text, _ = history.CutMiddle(text, s.cfg.OutputLimit)
	return textResult(rn.prefix(text)), out, nil
}

func (s *Server) inspect(ctx context.Context, req *mcp.CallToolRequest, in InspectInput) (*mcp.CallToolResult, InspectOutput, error) {
	pos, err := datatools.CursorOr(in.Code, in.CursorPos)
	if err != nil {
		return errResult[InspectOutput]("%v", err)
	}
	if in.DetailLevel != 0 && in.DetailLevel != 1 {
		return errResult[InspectOutput]("detail_level is 0 or 1, not %d", in.DetailLevel)
	}
	var r *kernel.InspectReply
	b, rn, err := s.beside(ctx, in.SessionID)
	if err != nil {
		return errResult[InspectOutput]("%v", err)
	}
	if b != nil {
		r, err = b.Inspect(ctx, in.Code, pos, in.DetailLevel)
	} else {
		var k *kernel.Kernel
		if k, err = s.eng.KernelFor(ctx, sessionOr(in.SessionID)); err != nil {
			return errResult[InspectOutput]("%v", err)
		}
		qctx, cancel := context.WithTimeout(ctx, s.eng.QueryLimit())
		defer cancel()
		r, err = k.Inspect(qctx, in.Code, pos, in.DetailLevel)
	}
	if err != nil {
		if b != nil {
			return errResult[InspectOutput]("inspect: %v", err)
		}
		return errResult[InspectOutput]("inspect: %v", rn.prefix(err.Error()))
	}
	out := InspectOutput{Found: r.Found, RunNote: rn}
	if raw, ok := r.Data["text/plain"]; ok {
		var t string
		if json.Unmarshal(raw, &t) == nil {
			out.Text = history.PlainText(t)
		}
	}
	text := out.Text
	if !out.Found || text == "" {
		text = "Nothing found for the name at the cursor."
	}
	text, _ = history.CutMiddle(text, s.cfg.OutputLimit)
	return textResult(rn.prefix(text)), out, nil
}

func (s *Server) saveFigure(ctx context.Context, req *mcp.CallToolRequest, in SaveFigureInput) (*mcp.CallToolResult, SaveFigureOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[SaveFigureOutput]("%v", err)
	}
	if in.Index < 0 {
		return errResult[SaveFigureOutput]("index counts back from the latest image: 1 (the default) or more, not %d", in.Index)
	}
	want := max(in.Index, 1)
	path, err := ss.ResolvePath(in.Path, engine.WriteAccess)
	if err != nil {
		return errResult[SaveFigureOutput]("save_figure: %v", err)
	}
	// In its turn: a figure of a plot_data sent just before is saved, not
	// the one before it.
	release, err := s.eng.WaitTurn(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta))
	if err != nil {
		return errResult[SaveFigureOutput]("%v", err)
	}
	defer release()
	f, err := ss.Figure(want)
	if err != nil {
		return errResult[SaveFigureOutput]("%v", err)
	}
	// Atomic, with missing folders, 0666 less the umask: as the history
	// exports are written.
	if err := path.WriteFile(f.Data, 0o666); err != nil {
		return errResult[SaveFigureOutput]("cannot save the figure: %v", err)
	}
	out := SaveFigureOutput{Path: path.String(), MIMEType: f.MIME, Bytes: len(f.Data), Width: f.Width, Height: f.Height, Block: f.Block}
	dims := ""
	if out.Width > 0 {
		dims = fmt.Sprintf(", %dx%d", out.Width, out.Height)
	}
	return textResult(fmt.Sprintf("Saved %s (%s, %d bytes%s) from block %d.", path, f.MIME, len(f.Data), dims, f.Block)), out, nil
}
