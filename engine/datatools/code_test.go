package datatools

import (
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// A plot request uses every parameter its kind is given, or refuses it.
func TestNewPlot(t *testing.T) {
	for _, c := range []struct {
		kind, x, y string
		err        string // "" when the request is taken
	}{
		{"pie", "", "", `kind "pie" is not one of line, scatter, hist, bar, box`},
		{"scatter", "a", "", "a scatter plot needs both x and y columns"},
		{"hist", "a", "", "a histogram has no x column"},
		{"box", "a", "", "a box plot by x needs y"},
		{"box", "a", "a", `x and y are the same column "a": a box plot by x`},
		{"line", "a", "a", `x and y are the same column "a": give y another column`},
		{" Line ", "", "", ""},
		{"box", "g", "v", ""},
	} {
		_, err := NewPlot("df", c.kind, c.x, c.y)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q x=%q y=%q: %v", c.kind, c.x, c.y, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q x=%q y=%q: error %v, want %q", c.kind, c.x, c.y, err, c.err)
		}
	}
	p, _ := NewPlot("df", " Line ", "", "")
	if got := p.Code(engine.DataFacts{}); got != "import matplotlib.pyplot as plt\ndf.plot(kind=\"line\")\nplt.show()" || !p.Check.NumericDefault {
		t.Errorf("line plot: %q, check %+v", got, p.Check)
	}
	p, _ = NewPlot("df", "box", "g", "v")
	if got := p.Code(engine.DataFacts{NGroups: 9}); !strings.Contains(got, `df.boxplot(column="v", by="g", grid=False, rot=90)`) || p.Check.GroupBy != "g" || p.Check.MaxGroups != maxBoxGroups {
		t.Errorf("box plot by g: %q, check %+v", got, p.Check)
	}
}

// estimate_ols checks its columns and covariance before any code runs.
func TestOLSPlan(t *testing.T) {
	two := 2
	neg := -1
	for _, c := range []struct {
		o   OLS
		err string
	}{
		{OLS{Y: "y"}, "estimate_ols needs y"},
		{OLS{Y: "y", X: []string{"a", " "}}, "x[1] is empty"},
		{OLS{Y: "y", X: []string{"y"}}, `"y" is both y and a regressor`},
		{OLS{Y: "y", X: []string{"a", "a"}}, `"a" appears twice in x`},
		{OLS{Y: "y", X: []string{"a"}, Cov: "HC9"}, `cov "HC9" is not one of`},
		{OLS{Y: "y", X: []string{"a"}, Cov: "HC1", Robust: true}, "ask for two kinds of standard errors"},
		{OLS{Y: "y", X: []string{"a"}, Cov: "hac"}, "cov HAC needs maxlags"},
		{OLS{Y: "y", X: []string{"a"}, Cov: "HAC", MaxLags: &neg}, "maxlags is 0 or more, not -1"},
		{OLS{Y: "y", X: []string{"a"}, MaxLags: &two}, "maxlags is for cov HAC only, and cov is nonrobust"},
	} {
		if _, _, err := c.o.Plan(); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.err)
		}
	}
	chk, code, err := OLS{Name: "d", Y: "y", X: []string{"a", "b"}, Cov: "hac", MaxLags: &two}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(code, `model = sm.OLS(d["y"], sm.add_constant(d[["a", "b"]]), missing="drop").fit(cov_type="HAC", cov_kwds={"maxlags": 2})`) {
		t.Errorf("code: %q", code)
	}
	if len(chk.Columns) != 3 || chk.Columns[2].Role != "x[1]" || chk.Name != "d" {
		t.Errorf("check: %+v", chk)
	}
}

// The format comes from the extension unless given; an unknown one is refused.
func TestReader(t *testing.T) {
	if got, err := Reader("/d/a.TSV", ""); err != nil || got != `pd.read_csv("/d/a.TSV", sep="\t")` {
		t.Errorf("tsv: %q, %v", got, err)
	}
	if got, err := Reader("/d/a.txt", "JSONL"); err != nil || got != `pd.read_json("/d/a.txt", lines=True)` {
		t.Errorf("jsonl: %q, %v", got, err)
	}
	if _, err := Reader("/d/a.txt", ""); err == nil || !strings.Contains(err.Error(), "cannot tell the format") {
		t.Errorf("no extension: %v", err)
	}
	if _, err := Reader("/d/a.csv", "xml"); err == nil || !strings.Contains(err.Error(), `unknown format "xml"`) {
		t.Errorf("xml: %v", err)
	}
}

// A missing module becomes a pointer to install_package, by its pip name.
func TestInstallHint(t *testing.T) {
	if got := InstallHint("Missing optional dependency 'openpyxl'.  Use pip or conda to install openpyxl.", ""); !strings.Contains(got, `package_name "openpyxl"`) {
		t.Errorf("pandas' message: %q", got)
	}
	if got := InstallHint("", "ModuleNotFoundError: No module named 'sklearn'"); !strings.HasPrefix(got, "sklearn is not installed") {
		t.Errorf("traceback: %q", got)
	}
	if got := InstallHint("name 'x' is not defined", ""); got != "" {
		t.Errorf("NameError: %q", got)
	}
}

// Autocorrelated residuals get a note, unless the errors are HAC already.
func TestAutocorrelationNote(t *testing.T) {
	dw, p := 0.9, 0.01
	if got := AutocorrelationNote("nonrobust", &dw, &p, 300); !strings.Contains(got, "Durbin-Watson 0.90, Breusch-Godfrey p = 0.01") || !strings.Contains(got, "(e.g. 5)") {
		t.Errorf("note: %q", got)
	}
	if got := AutocorrelationNote("HAC", &dw, &p, 300); got != "" {
		t.Errorf("HAC: %q", got)
	}
	good := 2.0
	if got := AutocorrelationNote("HC3", &good, nil, 10); got != "" {
		t.Errorf("no signs: %q", got)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"df", "_x1"} {
		if err := CheckName("name", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"1x", "class", "a-b", ""} {
		if err := CheckName("name", bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}
