package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
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
	code := fmt.Sprintf("import pandas as pd\n%s\n%s = %s\nprint(f\"{%s.shape[0]} rows x {%s.shape[1]} columns\")\nprint(%s.dtypes.to_string())\n%s.head()",
		pdDisplay, name, fmt.Sprintf(reader, engine.PyString(path)), name, name, name, name)
	return s.dataRun(ctx, req, in.SessionID, code)
}

func (s *Server) describeData(ctx context.Context, req *mcp.CallToolRequest, in DataNameInput) (*mcp.CallToolResult, RunOutput, error) {
	name := nameOr(in.Name)
	if err := checkName("name", name); err != nil {
		return errResult[RunOutput]("%v", err)
	}
	chk := engine.DataCheck{Tool: "describe_data", Name: name, Columns: []engine.ColumnUse{}}
	return s.checkedDataRun(ctx, req, in.SessionID, chk, func(engine.DataFacts) string {
		return fmt.Sprintf("import pandas as pd\n%s\nif %s.isna().values.any():\n    print(\"missing values per column:\")\n    print(%s.isna().sum().loc[lambda n: n > 0].to_string())\nelse:\n    print(\"no missing values\")\n%s.describe(include=\"all\").transpose()", pdDisplay, name, name, name)
	})
}

// pdDisplay is the line load_data and describe_data run first: tables are
// shown whole, one line per row, instead of wrapped at 80 characters with
// backslash continuations; at most 50 columns, beyond which pandas shows
// "...".
const pdDisplay = `pd.set_option("display.expand_frame_repr", False, "display.max_columns", 50)`

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
	chk := engine.DataCheck{Tool: "plot_data", Name: name, Columns: []engine.ColumnUse{}}
	switch {
	case kind == "scatter" && (in.X == "" || in.Y == ""):
		return errResult[RunOutput]("a scatter plot needs both x and y columns")
	case kind == "scatter":
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: in.X, Numeric: "axis"}, engine.ColumnUse{Role: "y", Column: in.Y, Numeric: "axis"})
	case kind == "hist" && in.X != "":
		return errResult[RunOutput]("a histogram has no x column: it draws the distribution of y (default: every numeric column); leave x out, or use kind box with x to compare y across the values of x")
	case kind == "box" && in.X != "" && in.Y == "":
		return errResult[RunOutput]("a box plot by x needs y: the numeric column drawn as one box per value of x")
	case kind == "box" && in.X != "":
		if in.X == in.Y {
			return errResult[RunOutput]("x and y are the same column %q: a box plot by x draws y for each value of x", in.X)
		}
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: in.X, Numeric: ""}, engine.ColumnUse{Role: "y", Column: in.Y, Numeric: "plot"})
		chk.GroupBy, chk.MaxGroups = in.X, maxBoxGroups
	default: // line, bar, hist, box without x
		if in.X != "" && in.X == in.Y {
			return errResult[RunOutput]("x and y are the same column %q: give y another column, or leave x out to plot against the index", in.X)
		}
		if in.X != "" {
			chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: in.X, Numeric: ""})
		}
		if in.Y != "" {
			chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "y", Column: in.Y, Numeric: "plot"})
		} else {
			chk.NumericDefault = true
		}
	}
	return s.checkedDataRun(ctx, req, in.SessionID, chk, func(f engine.DataFacts) string {
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
	chk := engine.DataCheck{Tool: "estimate_ols", Name: name, Columns: []engine.ColumnUse{{Role: "y", Column: in.Y, Numeric: "number"}}}
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
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: fmt.Sprintf("x[%d]", i), Column: x, Numeric: "number"})
	}
	fit, err := olsFitArgs(in)
	if err != nil {
		return errResult[EstimateOLSOutput]("%v", err)
	}
	const model = "model"
	code := fmt.Sprintf("import statsmodels.api as sm\n%s = sm.OLS(%s[%s], sm.add_constant(%s[[%s]]), missing=\"drop\").fit(%s)\nprint(%s.summary())",
		model, name, engine.PyString(in.Y), name, strings.Join(xs, ", "), fit, model)

	ss, err := s.eng.LookupOrCreate(sessionOr(in.SessionID))
	if err != nil {
		return errResult[EstimateOLSOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, false, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, EstimateOLSOutput, error) {
		if _, err := ss.CheckData(ctx, chk, s.queryLimit()); err != nil {
			return errResult[EstimateOLSOutput]("%v", err)
		}
		return s.fitOLS(ctx, r, ss, code, model)
	}, func(v engine.RunView, output string) EstimateOLSOutput {
		return EstimateOLSOutput{SessionID: ss.ID(), Model: model, Coefficients: []Coefficient{}, RunID: v.RunID, Status: v.Status}
	})
}

// covTypes are the covariance estimators estimate_ols offers, by the name
// statsmodels gives them.
var covTypes = []string{"nonrobust", "HC0", "HC1", "HC2", "HC3", "HAC"}

// olsFitArgs are the arguments of estimate_ols's fit(): the covariance
// type cov (or HC3 for robust), with maxlags for HAC.
func olsFitArgs(in EstimateOLSInput) (string, error) {
	cov := "nonrobust"
	if in.Cov != "" {
		i := slices.IndexFunc(covTypes, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(in.Cov)) })
		if i < 0 {
			return "", fmt.Errorf("cov %q is not one of %s", in.Cov, strings.Join(covTypes, ", "))
		}
		cov = covTypes[i]
	}
	if in.Robust {
		if in.Cov != "" && cov != "HC3" {
			return "", fmt.Errorf("robust (HC3) and cov %q ask for two kinds of standard errors: give one", in.Cov)
		}
		cov = "HC3"
	}
	switch {
	case cov == "HAC" && in.MaxLags == nil:
		return "", fmt.Errorf("cov HAC needs maxlags, the lags of autocorrelation the errors may have (a common choice is 4(n/100)^(2/9): 4 for 100 rows, 5 for 300)")
	case cov == "HAC" && *in.MaxLags < 0:
		return "", fmt.Errorf("maxlags is 0 or more, not %d", *in.MaxLags)
	case cov != "HAC" && in.MaxLags != nil:
		return "", fmt.Errorf("maxlags is for cov HAC only, and cov is %s", cov)
	case cov == "HAC":
		return fmt.Sprintf(`cov_type="HAC", cov_kwds={"maxlags": %d}`, *in.MaxLags), nil
	}
	return fmt.Sprintf("cov_type=%q", cov), nil
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
		f, err := ss.CheckData(ctx, chk, s.queryLimit())
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
	raw, err := ss.Query(ctx, engine.PyOLSStats, map[string]any{"model": model, "lags": 2}, s.queryLimit())
	if err != nil {
		return errResult[EstimateOLSOutput]("the model was fitted (see the history) but its statistics could not be read: %v", err)
	}
	out := EstimateOLSOutput{SessionID: ss.ID(), Model: model}
	if err := json.Unmarshal(raw, &out); err != nil {
		return errResult[EstimateOLSOutput]("bad reply from the kernel: %v", err)
	}
	text := out.Summary
	out.Summary = "" // the numbers are in out; the text gives the summary
	if bg := out.BreuschGodfrey; bg.Stat != nil && bg.P != nil {
		text += fmt.Sprintf("\nBreusch-Godfrey LM (%d lags): %.3f, p = %.4f", bg.Lags, *bg.Stat, *bg.P)
	}
	out.Note = autocorrelationNote(out)
	if out.Note != "" {
		text += "\n" + out.Note
	}
	text += fmt.Sprintf("\nThe fitted result is the variable %s (model.params, model.resid, ...).", model)
	text, _ = history.CutMiddle(text, s.cfg.OutputLimit)
	return textResult(text), out, nil
}

// autocorrelationNote says, for a fit whose standard errors assume
// uncorrelated errors, when its residuals look autocorrelated: Durbin-Watson
// far from 2 (below 1.5 or above 2.5) or Breusch-Godfrey p below 0.05.
func autocorrelationNote(out EstimateOLSOutput) string {
	if out.CovType == "HAC" {
		return ""
	}
	var signs []string
	if dw := out.DurbinWatson; dw != nil && (*dw < 1.5 || *dw > 2.5) {
		signs = append(signs, fmt.Sprintf("Durbin-Watson %.2f", *dw))
	}
	if bg := out.BreuschGodfrey; bg.P != nil && *bg.P < 0.05 {
		signs = append(signs, fmt.Sprintf("Breusch-Godfrey p = %.3g", *bg.P))
	}
	if len(signs) == 0 {
		return ""
	}
	lags := 1
	if out.Nobs > 0 {
		lags = max(1, int(4*math.Pow(float64(out.Nobs)/100, 2.0/9)))
	}
	return fmt.Sprintf("The residuals look autocorrelated (%s), and these standard errors assume they are not: for Newey-West standard errors, call estimate_ols again with cov \"HAC\" and maxlags (e.g. %d).", strings.Join(signs, ", "), lags)
}
