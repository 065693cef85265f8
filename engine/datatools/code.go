package datatools

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// The code load_data, describe_data, plot_data and estimate_ols run: it is
// run like run_code's (the history keeps it), after the engine checked in
// the kernel what it names (engine.DataCheck).

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

// Reader is the pandas call that reads the data file at path, in format
// (csv, tsv, parquet, excel, json, jsonl; "" tells it by the extension).
func Reader(path, format string) (string, error) {
	return ReaderOf(path, engine.PyString(path), format)
}

// ReaderOf is Reader with the path given to pandas as the Python
// expression expr (engine.ToolPath.Python); path names it in errors and
// gives the extension.
func ReaderOf(path, expr, format string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	if f == "" {
		f = dataFormats[strings.ToLower(filepath.Ext(path))]
		if f == "" {
			return "", fmt.Errorf("cannot tell the format of %s from its extension: give format (csv, tsv, parquet, excel, json or jsonl)", path)
		}
	}
	reader, ok := readers[f]
	if !ok {
		return "", fmt.Errorf("unknown format %q: use csv, tsv, parquet, excel, json or jsonl", format)
	}
	return fmt.Sprintf(reader, expr), nil
}

// LoadCode is load_data's code: read into name with read (see Reader), then
// show its shape, dtypes and first rows.
func LoadCode(name, read string) string {
	return fmt.Sprintf("import pandas as pd\n%s\n%s = %s\nprint(f\"{%s.shape[0]} rows x {%s.shape[1]} columns\")\nprint(%s.dtypes.to_string())\n%s.head()",
		pdDisplay, name, read, name, name, name, name)
}

// DescribeCode is describe_data's code for the DataFrame name.
func DescribeCode(name string) string {
	return fmt.Sprintf("import pandas as pd\n%s\nif %s.isna().values.any():\n    print(\"missing values per column:\")\n    print(%s.isna().sum().loc[lambda n: n > 0].to_string())\nelse:\n    print(\"no missing values\")\n%s.describe(include=\"all\").transpose()", pdDisplay, name, name, name)
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

// Plot is a plot_data request whose arguments were checked (NewPlot).
type Plot struct {
	name, kind, x, y string
	// Check is what the engine checks in the kernel before the plot runs.
	Check engine.DataCheck
}

// NewPlot checks a plot_data request of the DataFrame name: every
// parameter a kind is given is used, or refused here, since pandas would
// ignore x for hist and box.
func NewPlot(name, kind, x, y string) (*Plot, error) {
	k := strings.ToLower(strings.TrimSpace(kind))
	if !slices.Contains(plotKinds, k) {
		return nil, fmt.Errorf("kind %q is not one of %s", kind, strings.Join(plotKinds, ", "))
	}
	chk := engine.DataCheck{Tool: "plot_data", Name: name, Columns: []engine.ColumnUse{}}
	switch {
	case k == "scatter" && (x == "" || y == ""):
		return nil, fmt.Errorf("a scatter plot needs both x and y columns")
	case k == "scatter":
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: x, Numeric: "axis"}, engine.ColumnUse{Role: "y", Column: y, Numeric: "axis"})
	case k == "hist" && x != "":
		return nil, fmt.Errorf("a histogram has no x column: it draws the distribution of y (default: every numeric column); leave x out, or use kind box with x to compare y across the values of x")
	case k == "box" && x != "" && y == "":
		return nil, fmt.Errorf("a box plot by x needs y: the numeric column drawn as one box per value of x")
	case k == "box" && x != "":
		if x == y {
			return nil, fmt.Errorf("x and y are the same column %q: a box plot by x draws y for each value of x", x)
		}
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: x, Numeric: ""}, engine.ColumnUse{Role: "y", Column: y, Numeric: "plot"})
		chk.GroupBy, chk.MaxGroups = x, maxBoxGroups
	default: // line, bar, hist, box without x
		if x != "" && x == y {
			return nil, fmt.Errorf("x and y are the same column %q: give y another column, or leave x out to plot against the index", x)
		}
		if x != "" {
			chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "x", Column: x, Numeric: ""})
		}
		if y != "" {
			chk.Columns = append(chk.Columns, engine.ColumnUse{Role: "y", Column: y, Numeric: "plot"})
		} else {
			chk.NumericDefault = true
		}
	}
	return &Plot{name: name, kind: k, x: x, y: y, Check: chk}, nil
}

// Code is the plot's code, given what the check found (the number of
// groups of a box plot by x turns its labels).
func (p *Plot) Code(f engine.DataFacts) string {
	if p.Check.GroupBy != "" {
		rot := ""
		if f.NGroups > 8 {
			rot = ", rot=90"
		}
		return fmt.Sprintf("import matplotlib.pyplot as plt\n%s.boxplot(column=%s, by=%s, grid=False%s)\nplt.show()", p.name, engine.PyString(p.y), engine.PyString(p.x), rot)
	}
	args := []string{"kind=" + engine.PyString(p.kind)}
	if p.x != "" {
		args = append(args, "x="+engine.PyString(p.x))
	}
	if p.y != "" {
		args = append(args, "y="+engine.PyString(p.y))
	}
	return fmt.Sprintf("import matplotlib.pyplot as plt\n%s.plot(%s)\nplt.show()", p.name, strings.Join(args, ", "))
}

// OLSModel is the variable estimate_ols leaves the fitted result in.
const OLSModel = "model"

// OLS is an estimate_ols request: y on x in the DataFrame Name.
type OLS struct {
	Name    string
	Y       string
	X       []string
	Robust  bool
	Cov     string
	MaxLags *int
}

// Plan checks the request and returns what the engine checks in the kernel
// first and the code that fits the model into OLSModel.
func (o OLS) Plan() (engine.DataCheck, string, error) {
	if strings.TrimSpace(o.Y) == "" || len(o.X) == 0 {
		return engine.DataCheck{}, "", fmt.Errorf("estimate_ols needs y (a column) and x (one or more columns)")
	}
	chk := engine.DataCheck{Tool: "estimate_ols", Name: o.Name, Columns: []engine.ColumnUse{{Role: "y", Column: o.Y, Numeric: "number"}}}
	xs := make([]string, len(o.X))
	for i, x := range o.X {
		switch {
		case strings.TrimSpace(x) == "":
			return engine.DataCheck{}, "", fmt.Errorf("x[%d] is empty", i)
		case x == o.Y:
			return engine.DataCheck{}, "", fmt.Errorf("%q is both y and a regressor", x)
		case slices.Contains(o.X[:i], x):
			return engine.DataCheck{}, "", fmt.Errorf("%q appears twice in x", x)
		}
		xs[i] = engine.PyString(x)
		chk.Columns = append(chk.Columns, engine.ColumnUse{Role: fmt.Sprintf("x[%d]", i), Column: x, Numeric: "number"})
	}
	fit, err := o.fitArgs()
	if err != nil {
		return engine.DataCheck{}, "", err
	}
	code := fmt.Sprintf("import statsmodels.api as sm\n%s = sm.OLS(%s[%s], sm.add_constant(%s[[%s]]), missing=\"drop\").fit(%s)\nprint(%s.summary())",
		OLSModel, o.Name, engine.PyString(o.Y), o.Name, strings.Join(xs, ", "), fit, OLSModel)
	return chk, code, nil
}

// covTypes are the covariance estimators estimate_ols offers, by the name
// statsmodels gives them.
var covTypes = []string{"nonrobust", "HC0", "HC1", "HC2", "HC3", "HAC"}

// fitArgs are the arguments of estimate_ols's fit(): the covariance
// type cov (or HC3 for robust), with maxlags for HAC.
func (o OLS) fitArgs() (string, error) {
	cov := "nonrobust"
	if o.Cov != "" {
		i := slices.IndexFunc(covTypes, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(o.Cov)) })
		if i < 0 {
			return "", fmt.Errorf("cov %q is not one of %s", o.Cov, strings.Join(covTypes, ", "))
		}
		cov = covTypes[i]
	}
	if o.Robust {
		if o.Cov != "" && cov != "HC3" {
			return "", fmt.Errorf("robust (HC3) and cov %q ask for two kinds of standard errors: give one", o.Cov)
		}
		cov = "HC3"
	}
	switch {
	case cov == "HAC" && o.MaxLags == nil:
		return "", fmt.Errorf("cov HAC needs maxlags, the lags of autocorrelation the errors may have (a common choice is 4(n/100)^(2/9): 4 for 100 rows, 5 for 300)")
	case cov == "HAC" && *o.MaxLags < 0:
		return "", fmt.Errorf("maxlags is 0 or more, not %d", *o.MaxLags)
	case cov != "HAC" && o.MaxLags != nil:
		return "", fmt.Errorf("maxlags is for cov HAC only, and cov is %s", cov)
	case cov == "HAC":
		return fmt.Sprintf(`cov_type="HAC", cov_kwds={"maxlags": %d}`, *o.MaxLags), nil
	}
	return fmt.Sprintf("cov_type=%q", cov), nil
}

// AutocorrelationNote says, for a fit whose standard errors assume
// uncorrelated errors (covType not HAC), when its residuals look
// autocorrelated: Durbin-Watson dw far from 2 (below 1.5 or above 2.5) or
// Breusch-Godfrey p bgP below 0.05. nobs suggests the lags.
func AutocorrelationNote(covType string, dw, bgP *float64, nobs int) string {
	if covType == "HAC" {
		return ""
	}
	var signs []string
	if dw != nil && (*dw < 1.5 || *dw > 2.5) {
		signs = append(signs, fmt.Sprintf("Durbin-Watson %.2f", *dw))
	}
	if bgP != nil && *bgP < 0.05 {
		signs = append(signs, fmt.Sprintf("Breusch-Godfrey p = %.3g", *bgP))
	}
	if len(signs) == 0 {
		return ""
	}
	lags := 1
	if nobs > 0 {
		lags = max(1, int(4*math.Pow(float64(nobs)/100, 2.0/9)))
	}
	return fmt.Sprintf("The residuals look autocorrelated (%s), and these standard errors assume they are not: for Newey-West standard errors, call estimate_ols again with cov \"HAC\" and maxlags (e.g. %d).", strings.Join(signs, ", "), lags)
}
