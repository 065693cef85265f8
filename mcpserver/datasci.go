package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoded for save_figure's dimensions
	_ "image/jpeg"
	_ "image/png"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of what the helper code returns.
const (
	getValueMaxCells = 250_000
	getValueMaxBytes = 5 << 20
	maxVariables     = 500
	queryTimeout     = engine.QueryTimeout
)

// Inputs.

// GetValueInput is the input of get_value.
type GetValueInput struct {
	SessionID  string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Expression string `json:"expression" jsonschema:"a Python expression evaluated in the session's namespace, e.g. df.head(3) or model.params"`
}

// CompleteInput is the input of complete.
type CompleteInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Code      string `json:"code" jsonschema:"the code being written"`
	CursorPos *int   `json:"cursor_pos,omitempty" jsonschema:"cursor position in characters (default: the end of code)"`
}

// InspectInput is the input of inspect.
type InspectInput struct {
	SessionID   string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Code        string `json:"code" jsonschema:"code containing the name to look up, e.g. pd.read_csv"`
	CursorPos   *int   `json:"cursor_pos,omitempty" jsonschema:"cursor position in characters (default: the end of code)"`
	DetailLevel int    `json:"detail_level,omitempty" jsonschema:"0 (signature and docstring) or 1 (also the source, where available)"`
}

// SaveFigureInput is the input of save_figure.
type SaveFigureInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Path      string `json:"path" jsonschema:"file to write; missing folders are created; relative to the session's working directory"`
	Index     int    `json:"index,omitempty" jsonschema:"which image, counting back from the latest: 1 (default) is the latest, 2 the one before"`
}

// LoadDataInput is the input of load_data.
type LoadDataInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Path      string `json:"path" jsonschema:"the data file, relative to the session's working directory or absolute"`
	Name      string `json:"name,omitempty" jsonschema:"the variable to load it into (default df)"`
	Format    string `json:"format,omitempty" jsonschema:"csv, tsv, parquet, excel, json or jsonl (default: from the file's extension)"`
}

// DataNameInput names a DataFrame in a session.
type DataNameInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Name      string `json:"name,omitempty" jsonschema:"the DataFrame variable (default df)"`
}

// EstimateOLSInput is the input of estimate_ols.
type EstimateOLSInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Name      string   `json:"name,omitempty" jsonschema:"the DataFrame variable (default df)"`
	Y         string   `json:"y" jsonschema:"the dependent column"`
	X         []string `json:"x" jsonschema:"the regressor columns (a constant is added)"`
	Robust    bool     `json:"robust,omitempty" jsonschema:"heteroskedasticity-robust (HC3) standard errors"`
}

// PlotDataInput is the input of plot_data.
type PlotDataInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Name      string `json:"name,omitempty" jsonschema:"the DataFrame variable (default df)"`
	Kind      string `json:"kind" jsonschema:"line, scatter, hist, bar or box"`
	X         string `json:"x,omitempty" jsonschema:"the column on the x axis (scatter needs it; line and bar default to the index); for box, draws one box of y per value of x (at most 30); hist takes none"`
	Y         string `json:"y,omitempty" jsonschema:"the column to plot (scatter, and box with x, need it; default: every numeric column)"`
}

// Outputs.

// GetValueOutput is the structured content of get_value.
type GetValueOutput struct {
	SessionID  string `json:"session_id"`
	Expression string `json:"expression"`
	// Type is the Python type of the value, e.g. pandas.core.frame.DataFrame.
	Type string `json:"type"`
	// Value is the value as JSON: a DataFrame as {columns, index, records},
	// a Series as {name, index, values}; NaN, NaT and None as null.
	Value any `json:"value"`
}

// Variable is one row of list_variables.
type Variable struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Shape  []int  `json:"shape,omitempty"`
	DType  string `json:"dtype,omitempty"`
	Length *int   `json:"length,omitempty"`
	Repr   string `json:"repr"`
}

// ListVariablesOutput is the structured content of list_variables.
type ListVariablesOutput struct {
	SessionID string     `json:"session_id"`
	Variables []Variable `json:"variables"`
	// Total counts every name; Variables holds the first 500 by name.
	Total int `json:"total"`
}

// CompleteOutput is the structured content of complete.
type CompleteOutput struct {
	Matches     []string `json:"matches"`
	CursorStart int      `json:"cursor_start"`
	CursorEnd   int      `json:"cursor_end"`
}

// InspectOutput is the structured content of inspect.
type InspectOutput struct {
	Found bool   `json:"found"`
	Text  string `json:"text"`
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

// Coefficient is one row of an OLS estimate.
type Coefficient struct {
	Name   string   `json:"name"`
	Coef   *float64 `json:"coef"`
	StdErr *float64 `json:"std_err"`
	T      *float64 `json:"t"`
	P      *float64 `json:"p"`
}

// TestStat is a test statistic with its p-value.
type TestStat struct {
	Stat *float64 `json:"stat"`
	P    *float64 `json:"p"`
	Lags int      `json:"lags,omitempty"`
}

// EstimateOLSOutput is the structured content of estimate_ols.
type EstimateOLSOutput struct {
	SessionID      string        `json:"session_id"`
	Model          string        `json:"model"` // the variable holding the fitted result
	Nobs           int           `json:"nobs"`
	Coefficients   []Coefficient `json:"coefficients"`
	R2             *float64      `json:"r2"`
	AdjR2          *float64      `json:"adj_r2"`
	DurbinWatson   *float64      `json:"durbin_watson"`
	JarqueBera     TestStat      `json:"jarque_bera"`
	BreuschGodfrey TestStat      `json:"breusch_godfrey"`
	CovType        string        `json:"cov_type"`
	Summary        string        `json:"summary"`
	// RunID and Status are set when the call handed the fit off as a run
	// still going (see wait_run).
	RunID  string `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
}

func (s *Server) addDataTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "get_value", Description: "Evaluate a Python expression in a session and return its value as real JSON (structured content): numbers, strings, lists, dicts, datetimes (ISO strings), numpy arrays and scalars, pandas DataFrames ({columns, index, records}) and Series ({name, index, values}); NaN and NaT become null. Names the type when a value cannot be converted.", OutputSchema: getValueSchema()}, s.getValue)
	addTool(s, &mcp.Tool{Name: "list_variables", Description: "The user's variables in a session: name, type, shape or length, dtype and a short repr (modules, builtins and _names left out). Fast even with huge objects: nothing is printed whole.", Annotations: ro}, s.listVariables)
	addTool(s, &mcp.Tool{Name: "complete", Description: "Code completions from the session's kernel at cursor_pos (default: the end of code), e.g. code \"import os; os.pa\" offers os.path.", Annotations: ro}, s.complete)
	addTool(s, &mcp.Tool{Name: "inspect", Description: "The kernel's help for the name at cursor_pos (default: the end of code): signature and docstring, like obj? in Jupyter; detail_level 1 adds the source.", Annotations: ro}, s.inspect)
	addTool(s, &mcp.Tool{Name: "save_figure", Description: "Write the latest image a session produced (or the index-th from the end) to a file, as produced (PNG, JPEG or SVG); missing folders are created."}, s.saveFigure)
	addTool(s, &mcp.Tool{Name: "load_data", Description: "Load a CSV, TSV, Parquet, Excel or JSON file into a pandas DataFrame (variable name, default df) in the session, as ordinary code kept in the history; returns its shape, dtypes and first rows."}, s.loadData)
	addTool(s, &mcp.Tool{Name: "describe_data", Description: "Summary statistics (count, mean, std, quartiles; top values for text columns) and missing values per column of a DataFrame in the session, run as ordinary code kept in the history. A DataFrame name that does not exist is refused with the closest names, and nothing runs."}, s.describeData)
	addTool(s, &mcp.Tool{Name: "estimate_ols", Description: "Fit y on x (with a constant) by OLS with statsmodels in the session, as code kept in the history; the result stays in the variable model. Returns coefficients, standard errors, R², adjusted R², Durbin-Watson, Jarque-Bera and Breusch-Godfrey, and the full summary. The DataFrame and columns are checked first: a misspelt or non-numeric one is refused with the closest names, and nothing runs."}, s.estimateOLS)
	addTool(s, &mcp.Tool{Name: "plot_data", Description: "Plot a DataFrame in the session (line, scatter, hist, bar or box) with pandas and matplotlib, as code kept in the history; returns the image. A box plot with x draws one box of y per value of x. The DataFrame and columns are checked first: a misspelt one is refused with the closest names, and nothing runs."}, s.plotData)
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

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var pyKeywords = []string{"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"}

// checkName validates a variable name given to a data tool.
func checkName(what, name string) error {
	if !identRE.MatchString(name) || slices.Contains(pyKeywords, name) {
		return fmt.Errorf("%s %q is not a Python variable name: use letters, digits and _, not starting with a digit", what, name)
	}
	return nil
}

func nameOr(n string) string {
	if n == "" {
		return "df"
	}
	return n
}

// query runs helper code in the session, in its turn, and returns the JSON
// it replied with.
func (s *Server) query(ctx context.Context, req *mcp.CallToolRequest, ss *engine.Session, src string, args map[string]any) (json.RawMessage, error) {
	// One deadline for the whole call: the wait for the session's turn
	// and the query share --max-wait, so a query that got its turn late
	// does not hold the client for another max-wait.
	deadline := time.Now().Add(s.cfg.MaxWait)
	release, err := s.eng.WaitTurn(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta))
	if err != nil {
		return nil, err
	}
	defer release()
	limit := min(s.queryLimit(), max(time.Until(deadline), minQueryTime))
	return ss.Query(ctx, src, args, limit)
}

// minQueryTime is the least time a query gets once its turn has come, even
// when --max-wait has nearly run out waiting for it.
const minQueryTime = 2 * time.Second

// queryLimit bounds a helper's run in the kernel: queryTimeout, or less
// when --max-wait is shorter, since no call may hold its client longer.
func (s *Server) queryLimit() time.Duration { return min(queryTimeout, s.cfg.MaxWait) }

func (s *Server) getValue(ctx context.Context, req *mcp.CallToolRequest, in GetValueInput) (*mcp.CallToolResult, GetValueOutput, error) {
	expr := strings.TrimSpace(in.Expression)
	if expr == "" {
		return errResult[GetValueOutput]("get_value needs an expression, e.g. df.head() or total")
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[GetValueOutput]("%v", err)
	}
	raw, err := s.query(ctx, req, ss, pyGetValue, map[string]any{"expression": expr, "limit": getValueMaxBytes, "max_cells": getValueMaxCells})
	if err != nil {
		var pe *engine.PyError
		if errors.As(err, &pe) {
			return errResult[GetValueOutput]("the value of %s cannot be returned as JSON: %v", expr, pe)
		}
		return errResult[GetValueOutput]("%v", err)
	}
	var v struct {
		Type      string          `json:"type"`
		Value     json.RawMessage `json:"value"`
		EvalError *struct {
			EName  string `json:"ename"`
			EValue string `json:"evalue"`
		} `json:"eval_error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return errResult[GetValueOutput]("bad reply from the kernel: %v", err)
	}
	if e := v.EvalError; e != nil {
		return errResult[GetValueOutput]("evaluating %s raised %s: %s", expr, e.EName, e.EValue)
	}
	dec := json.NewDecoder(bytes.NewReader(v.Value))
	dec.UseNumber() // integers beyond 2^53 stay exact
	var value any
	if err := dec.Decode(&value); err != nil {
		return errResult[GetValueOutput]("bad value from the kernel: %v", err)
	}
	out := GetValueOutput{SessionID: ss.ID(), Expression: in.Expression, Type: v.Type, Value: value}
	text, _ := history.CutMiddle(string(v.Value), s.cfg.OutputLimit)
	return textResult(fmt.Sprintf("%s (%s):\n%s", in.Expression, v.Type, text)), out, nil
}

func (s *Server) listVariables(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, ListVariablesOutput, error) {
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[ListVariablesOutput]("%v", err)
	}
	raw, err := s.query(ctx, req, ss, pyListVariables, map[string]any{"max": maxVariables})
	if err != nil {
		return errResult[ListVariablesOutput]("%v", err)
	}
	out := ListVariablesOutput{SessionID: ss.ID()}
	if err := json.Unmarshal(raw, &out); err != nil {
		return errResult[ListVariablesOutput]("bad reply from the kernel: %v", err)
	}
	if out.Variables == nil {
		out.Variables = []Variable{}
	}
	var b strings.Builder
	for _, v := range out.Variables {
		fmt.Fprintf(&b, "%s: %s", v.Name, v.Type)
		switch {
		case len(v.Shape) > 0:
			fmt.Fprintf(&b, " %v", v.Shape)
		case v.Length != nil:
			fmt.Fprintf(&b, " len %d", *v.Length)
		}
		fmt.Fprintf(&b, " = %s\n", v.Repr)
	}
	if out.Total > len(out.Variables) {
		fmt.Fprintf(&b, "... and %d more\n", out.Total-len(out.Variables))
	}
	if out.Total == 0 {
		b.WriteString("No variables defined.")
	}
	text, _ := history.CutMiddle(strings.TrimRight(b.String(), "\n"), s.cfg.OutputLimit)
	return textResult(text), out, nil
}

// cursorOr is the cursor position in characters, the end of code by default.
func cursorOr(code string, pos *int) (int, error) {
	n := utf8.RuneCountInString(code)
	if pos == nil {
		return n, nil
	}
	if *pos < 0 || *pos > n {
		return 0, fmt.Errorf("cursor_pos %d is outside the code (0 to %d characters)", *pos, n)
	}
	return *pos, nil
}

// kernelFor returns the session's kernel for a request that needs no turn
// (complete, inspect), starting one if needed.
func (s *Server) kernelFor(ctx context.Context, id string) (*kernel.Kernel, error) {
	ss, err := s.eng.LookupOrCreate(sessionOr(id))
	if err != nil {
		return nil, err
	}
	if err := ss.Gone(); err != nil {
		return nil, err
	}
	k, _, err := ss.Kernel(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %q: cannot start a kernel: %v", ss.ID(), err)
	}
	return k, nil
}

func (s *Server) complete(ctx context.Context, req *mcp.CallToolRequest, in CompleteInput) (*mcp.CallToolResult, CompleteOutput, error) {
	pos, err := cursorOr(in.Code, in.CursorPos)
	if err != nil {
		return errResult[CompleteOutput]("%v", err)
	}
	k, err := s.kernelFor(ctx, in.SessionID)
	if err != nil {
		return errResult[CompleteOutput]("%v", err)
	}
	qctx, cancel := context.WithTimeout(ctx, s.queryLimit())
	defer cancel()
	r, err := k.Complete(qctx, in.Code, pos)
	if err != nil {
		return errResult[CompleteOutput]("complete: %v", err)
	}
	out := CompleteOutput{Matches: r.Matches, CursorStart: r.CursorStart, CursorEnd: r.CursorEnd}
	if out.Matches == nil {
		out.Matches = []string{}
	}
	text := "No completions."
	if len(out.Matches) > 0 {
		text = strings.Join(out.Matches, "\n")
	}
	text, _ = history.CutMiddle(text, s.cfg.OutputLimit)
	return textResult(text), out, nil
}

func (s *Server) inspect(ctx context.Context, req *mcp.CallToolRequest, in InspectInput) (*mcp.CallToolResult, InspectOutput, error) {
	pos, err := cursorOr(in.Code, in.CursorPos)
	if err != nil {
		return errResult[InspectOutput]("%v", err)
	}
	if in.DetailLevel != 0 && in.DetailLevel != 1 {
		return errResult[InspectOutput]("detail_level is 0 or 1, not %d", in.DetailLevel)
	}
	k, err := s.kernelFor(ctx, in.SessionID)
	if err != nil {
		return errResult[InspectOutput]("%v", err)
	}
	qctx, cancel := context.WithTimeout(ctx, s.queryLimit())
	defer cancel()
	r, err := k.Inspect(qctx, in.Code, pos, in.DetailLevel)
	if err != nil {
		return errResult[InspectOutput]("inspect: %v", err)
	}
	out := InspectOutput{Found: r.Found}
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
	return textResult(text), out, nil
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
	hist := ss.History()
	seen := 0
	for bi := len(hist) - 1; bi >= 0; bi-- {
		outs := hist[bi].Outputs
		for oi := len(outs) - 1; oi >= 0; oi-- {
			mime, data, ok := imageOf(outs[oi])
			if !ok {
				continue
			}
			if seen++; seen < want {
				continue
			}
			if data == nil {
				return errResult[SaveFigureOutput]("image %d back (block %d) was not kept: it was larger than the %d MB history keeps of an output", want, bi+1, engine.HistoryDataLimit>>20)
			}
			// Atomic, with missing folders, 0666 less the umask: as the
			// history exports are written.
			if err := path.WriteFile(data, 0o666); err != nil {
				return errResult[SaveFigureOutput]("cannot save the figure: %v", err)
			}
			out := SaveFigureOutput{Path: path.String(), MIMEType: mime, Bytes: len(data), Block: bi + 1}
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
				out.Width, out.Height = cfg.Width, cfg.Height
			}
			dims := ""
			if out.Width > 0 {
				dims = fmt.Sprintf(", %dx%d", out.Width, out.Height)
			}
			return textResult(fmt.Sprintf("Saved %s (%s, %d bytes%s) from block %d.", path, mime, len(data), dims, bi+1)), out, nil
		}
	}
	if seen == 0 {
		return errResult[SaveFigureOutput]("session %q has no figure yet: draw one with run_code (plt.show()) or plot_data first", ss.ID())
	}
	return errResult[SaveFigureOutput]("session %q has %d image(s); index %d goes further back than that", ss.ID(), seen, want)
}

// imageOf returns an output's image: its type and bytes. data is nil for
// an image history did not keep (replaced by a note).
func imageOf(o history.Output) (mime string, data []byte, ok bool) {
	if o.OutputType != "display_data" && o.OutputType != "execute_result" {
		return "", nil, false
	}
	for _, mt := range imageTypes {
		if b, ok := imageData(kernel.Output{Data: o.Data}, mt); ok {
			return mt, b, true
		}
	}
	// An image history dropped for its size leaves a note in text/plain.
	if t, has := o.Data["text/plain"]; has && bytes.Contains(t, []byte("not kept in history")) && bytes.Contains(t, []byte("image/")) {
		return "", nil, true
	}
	return "", nil, false
}

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
	return s.executeThen(ctx, req, ss, code, "", s.cfg.Timeout, false, func(res *mcp.CallToolResult, out *RunOutput) {
		if out.Error != nil {
			addInstallHint(res, out)
		}
	})
}

// missingModuleREs find the missing package in an import error: Python's
// own message, and pandas' for its optional dependencies.
var missingModuleREs = []*regexp.Regexp{
	regexp.MustCompile(`No module named '([A-Za-z0-9_]+)`),
	regexp.MustCompile(`Missing optional dependency '([A-Za-z0-9_]+)'`),
	regexp.MustCompile("`Import ([A-Za-z0-9_]+)` failed"),
	regexp.MustCompile(`Unable to find a usable engine; tried using: '([A-Za-z0-9_]+)'`),
}

// pipNames maps modules the data tools import to their pip package.
var pipNames = map[string]string{"pandas": "pandas", "statsmodels": "statsmodels", "matplotlib": "matplotlib", "openpyxl": "openpyxl", "pyarrow": "pyarrow", "xlrd": "xlrd", "numpy": "numpy", "scipy": "scipy", "patsy": "patsy"}

func addInstallHint(res *mcp.CallToolResult, out *RunOutput) {
	var m []string
	for _, re := range missingModuleREs {
		if m = re.FindStringSubmatch(out.Error.EValue + "\n" + out.Error.Traceback); m != nil {
			break
		}
	}
	if m == nil {
		return
	}
	pkg, ok := pipNames[m[1]]
	if !ok {
		pkg = m[1]
	}
	hint := fmt.Sprintf("%s is not installed in this session's interpreter: install it with the install_package tool (package_name %q), then call this tool again.", m[1], pkg)
	out.Note = strings.TrimSpace(out.Note + "\n" + hint)
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: hint}}, res.Content...)
}

var dataFormats = map[string]string{
	".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
	".xlsx": "excel", ".xls": "excel", ".xlsm": "excel", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
}

var readers = map[string]string{
	"csv":     "pd.read_csv(%s)",
	"tsv":     `pd.read_csv(%s, sep="\t")`,
	"parquet": "pd.read_parquet(%s)",
	"excel":   "pd.read_excel(%s)",
	"json":    "pd.read_json(%s)",
	"jsonl":   "pd.read_json(%s, lines=True)",
}

func (s *Server) loadData(ctx context.Context, req *mcp.CallToolRequest, in LoadDataInput) (*mcp.CallToolResult, RunOutput, error) {
	name := nameOr(in.Name)
	if err := checkName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	// The path and format are checked before the session is looked up or
	// created: a call with bad input leaves no session behind.
	// The kernel reads the file, in its sandbox; the server only checks
	// it, through the folder it was found in.
	var path, reader string
	_, err := s.eng.LookupOrCreateChecked(sessionOr(in.SessionID), func(ss *engine.Session) error {
		tp, err := ss.ResolvePath(in.Path, engine.ReadAccess)
		if err != nil {
			return fmt.Errorf("load_data: %v", err)
		}
		if err := tp.CheckFile("load", 0); err != nil {
			return err
		}
		path = tp.String()
		format := strings.ToLower(strings.TrimSpace(in.Format))
		if format == "" {
			format = dataFormats[strings.ToLower(filepath.Ext(path))]
			if format == "" {
				return fmt.Errorf("cannot tell the format of %s from its extension: give format (csv, tsv, parquet, excel, json or jsonl)", path)
			}
		}
		var ok bool
		if reader, ok = readers[format]; !ok {
			return fmt.Errorf("unknown format %q: use csv, tsv, parquet, excel, json or jsonl", in.Format)
		}
		return nil
	})
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	code := fmt.Sprintf("import pandas as pd\n%s = %s\nprint(f\"{%s.shape[0]} rows x {%s.shape[1]} columns\")\nprint(%s.dtypes.to_string())\n%s.head()",
		name, fmt.Sprintf(reader, engine.PyString(path)), name, name, name, name)
	return s.dataRun(ctx, req, in.SessionID, code)
}

func (s *Server) describeData(ctx context.Context, req *mcp.CallToolRequest, in DataNameInput) (*mcp.CallToolResult, RunOutput, error) {
	name := nameOr(in.Name)
	if err := checkName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	chk := dataCheck{Tool: "describe_data", Name: name, Columns: []columnUse{}}
	return s.checkedDataRun(ctx, req, in.SessionID, chk, func(dataFacts) string {
		return fmt.Sprintf("print(\"missing values per column:\")\nprint(%s.isna().sum().to_string())\n%s.describe(include=\"all\").transpose()", name, name)
	})
}

var plotKinds = []string{"line", "scatter", "hist", "bar", "box"}

// maxBoxGroups bounds the boxes of a box plot by x: beyond it the labels
// no longer fit and the plot says little.
const maxBoxGroups = 30

func (s *Server) plotData(ctx context.Context, req *mcp.CallToolRequest, in PlotDataInput) (*mcp.CallToolResult, RunOutput, error) {
	name := nameOr(in.Name)
	if err := checkName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	kind := strings.ToLower(strings.TrimSpace(in.Kind))
	if !slices.Contains(plotKinds, kind) {
		return errResult[RunOutput]("kind %q is not one of %s", in.Kind, strings.Join(plotKinds, ", "))
	}
	// Every parameter a kind is given is used, or refused here: pandas
	// would ignore x for hist and box.
	chk := dataCheck{Tool: "plot_data", Name: name, Columns: []columnUse{}}
	switch {
	case kind == "scatter" && (in.X == "" || in.Y == ""):
		return errResult[RunOutput]("a scatter plot needs both x and y columns")
	case kind == "scatter":
		chk.Columns = append(chk.Columns, columnUse{"x", in.X, "axis"}, columnUse{"y", in.Y, "axis"})
	case kind == "hist" && in.X != "":
		return errResult[RunOutput]("a histogram has no x column: it draws the distribution of y (default: every numeric column); leave x out, or use kind box with x to compare y across the values of x")
	case kind == "box" && in.X != "" && in.Y == "":
		return errResult[RunOutput]("a box plot by x needs y: the numeric column drawn as one box per value of x")
	case kind == "box" && in.X != "":
		if in.X == in.Y {
			return errResult[RunOutput]("x and y are the same column %q: a box plot by x draws y for each value of x", in.X)
		}
		chk.Columns = append(chk.Columns, columnUse{"x", in.X, ""}, columnUse{"y", in.Y, "plot"})
		chk.GroupBy, chk.MaxGroups = in.X, maxBoxGroups
	default: // line, bar, hist, box without x
		if in.X != "" && in.X == in.Y {
			return errResult[RunOutput]("x and y are the same column %q: give y another column, or leave x out to plot against the index", in.X)
		}
		if in.X != "" {
			chk.Columns = append(chk.Columns, columnUse{"x", in.X, ""})
		}
		if in.Y != "" {
			chk.Columns = append(chk.Columns, columnUse{"y", in.Y, "plot"})
		} else {
			chk.NumericDefault = true
		}
	}
	return s.checkedDataRun(ctx, req, in.SessionID, chk, func(f dataFacts) string {
		if chk.GroupBy != "" {
			rot := ""
			if f.NGroups > 8 {
				rot = ", rot=90"
			}
			return fmt.Sprintf("import matplotlib.pyplot as plt\n%s.boxplot(column=%s, by=%s, grid=False%s)\nplt.show()", name, engine.PyString(in.Y), engine.PyString(in.X), rot)
		}
		args := []string{"kind=" + engine.PyString(kind)}
		if in.X != "" {
			args = append(args, "x="+engine.PyString(in.X))
		}
		if in.Y != "" {
			args = append(args, "y="+engine.PyString(in.Y))
		}
		return fmt.Sprintf("import matplotlib.pyplot as plt\n%s.plot(%s)\nplt.show()", name, strings.Join(args, ", "))
	})
}

func (s *Server) estimateOLS(ctx context.Context, req *mcp.CallToolRequest, in EstimateOLSInput) (*mcp.CallToolResult, EstimateOLSOutput, error) {
	name := nameOr(in.Name)
	if err := checkName("name", name); err != nil {
		return errResult[EstimateOLSOutput]("%v", err)
	}
	if strings.TrimSpace(in.Y) == "" || len(in.X) == 0 {
		return errResult[EstimateOLSOutput]("estimate_ols needs y (a column) and x (one or more columns)")
	}
	chk := dataCheck{Tool: "estimate_ols", Name: name, Columns: []columnUse{{"y", in.Y, "number"}}}
	xs := make([]string, len(in.X))
	for i, x := range in.X {
		switch {
		case strings.TrimSpace(x) == "":
			return errResult[EstimateOLSOutput]("x[%d] is empty", i)
		case x == in.Y:
			return errResult[EstimateOLSOutput]("%q is both y and a regressor", x)
		case slices.Contains(in.X[:i], x):
			return errResult[EstimateOLSOutput]("%q appears twice in x", x)
		}
		xs[i] = engine.PyString(x)
		chk.Columns = append(chk.Columns, columnUse{fmt.Sprintf("x[%d]", i), x, "number"})
	}
	cov := `"nonrobust"`
	if in.Robust {
		cov = `"HC3"`
	}
	const model = "model"
	code := fmt.Sprintf("import statsmodels.api as sm\n%s = sm.OLS(%s[%s], sm.add_constant(%s[[%s]]), missing=\"drop\").fit(cov_type=%s)\nprint(%s.summary())",
		model, name, engine.PyString(in.Y), name, strings.Join(xs, ", "), cov, model)

	ss, err := s.eng.LookupOrCreate(sessionOr(in.SessionID))
	if err != nil {
		return errResult[EstimateOLSOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, EstimateOLSOutput, error) {
		if _, err := s.checkData(ctx, ss, chk); err != nil {
			return errResult[EstimateOLSOutput]("%v", err)
		}
		return s.fitOLS(ctx, r, ss, code, model)
	}, func(v engine.RunView, output string) EstimateOLSOutput {
		return EstimateOLSOutput{SessionID: ss.ID(), Model: model, Coefficients: []Coefficient{}, RunID: v.RunID, Status: v.Status}
	})
}

// columnUse is a column a data tool reads: its role in the call (y, x[0])
// and what its values must be ("number": numeric or bool; "plot": numeric;
// "axis": anything but bool; "": anything).
type columnUse struct {
	Role    string `json:"role"`
	Column  string `json:"column"`
	Numeric string `json:"numeric,omitempty"`
}

// dataCheck is what a data tool needs of the DataFrame it reads; see
// py/check_data.py.
type dataCheck struct {
	Tool    string      `json:"tool"`
	Name    string      `json:"name"`
	Columns []columnUse `json:"columns"`
	// NumericDefault: the tool plots every numeric column when given
	// none, so there must be one.
	NumericDefault bool `json:"numeric_default,omitempty"`
	// GroupBy is a column whose values become groups, at most MaxGroups.
	GroupBy   string `json:"group_by,omitempty"`
	MaxGroups int    `json:"max_groups,omitempty"`
}

// dataFacts is what the check found: the groups of GroupBy, sorted.
type dataFacts struct {
	Error   string   `json:"error"`
	Groups  []string `json:"groups"`
	NGroups int      `json:"ngroups"`
}

// checkData checks, silently and in the caller's turn, that the session
// holds the DataFrame and the columns a data tool names, before it runs
// code that the history keeps: a misspelt name is refused with the closest
// ones, and neither the history nor the execution count changes.
func (s *Server) checkData(ctx context.Context, ss *engine.Session, chk dataCheck) (dataFacts, error) {
	var f dataFacts
	b, err := json.Marshal(chk)
	if err != nil {
		return f, err
	}
	var args map[string]any
	if err := json.Unmarshal(b, &args); err != nil {
		return f, err
	}
	raw, err := ss.Query(ctx, pyCheckData, args, s.queryLimit())
	if err != nil {
		var pe *engine.PyError
		if errors.As(err, &pe) {
			return f, fmt.Errorf("%s could not check %s: %v", chk.Tool, chk.Name, pe)
		}
		return f, err
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("bad reply from the kernel: %v", err)
	}
	if f.Error != "" {
		return f, fmt.Errorf("%s: %s\nNothing was run; the session and its history are unchanged", chk.Tool, f.Error)
	}
	return f, nil
}

// checkedDataRun is dataRun for a tool that reads a DataFrame: in the
// run's turn, it checks what chk names first and runs code(facts) only if
// all is there. A session that does not exist yet is created, as dataRun
// does: a load_data sent just before may not have created it yet, since
// calls take their place in the session's order only in the run.
func (s *Server) checkedDataRun(ctx context.Context, req *mcp.CallToolRequest, id string, chk dataCheck, code func(dataFacts) string) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := s.eng.LookupOrCreate(sessionOr(id))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		f, err := s.checkData(ctx, ss, chk)
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		content, out, err := s.runBlock(ctx, r, ss, code(f), "", s.cfg.Timeout)
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		res := &mcp.CallToolResult{Content: content, IsError: out.Status != "ok"}
		if out.Error != nil {
			addInstallHint(res, &out)
		}
		return res, out, nil
	}, runHandoff(ss))
}

// fitOLS runs estimate_ols's code in the caller's turn and reads the
// fitted model's statistics.
func (s *Server) fitOLS(ctx context.Context, r *engine.Run, ss *engine.Session, code, model string) (*mcp.CallToolResult, EstimateOLSOutput, error) {
	content, run, err := s.runBlock(ctx, r, ss, code, "", s.cfg.Timeout)
	if err != nil {
		return errResult[EstimateOLSOutput]("%v", err)
	}
	if run.Status != "ok" {
		res := &mcp.CallToolResult{Content: content, IsError: true}
		if run.Error != nil {
			addInstallHint(res, &run)
		}
		var parts []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, t.Text)
			}
		}
		return errResult[EstimateOLSOutput]("%s", strings.Join(parts, "\n"))
	}
	raw, err := ss.Query(ctx, pyOLSStats, map[string]any{"model": model, "lags": 2}, s.queryLimit())
	if err != nil {
		return errResult[EstimateOLSOutput]("the model was fitted (see the history) but its statistics could not be read: %v", err)
	}
	out := EstimateOLSOutput{SessionID: ss.ID(), Model: model}
	if err := json.Unmarshal(raw, &out); err != nil {
		return errResult[EstimateOLSOutput]("bad reply from the kernel: %v", err)
	}
	text := out.Summary
	if bg := out.BreuschGodfrey; bg.Stat != nil && bg.P != nil {
		text += fmt.Sprintf("\nBreusch-Godfrey LM (%d lags): %.3f, p = %.4f", bg.Lags, *bg.Stat, *bg.P)
	}
	text += fmt.Sprintf("\nThe fitted result is the variable %s (model.params, model.resid, ...).", model)
	text, _ = history.CutMiddle(text, s.cfg.OutputLimit)
	return textResult(text), out, nil
}
