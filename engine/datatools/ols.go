package datatools

import (
	"encoding/json"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// Coefficient is one row of an OLS estimate.
type Coefficient struct {
	Name   string   `json:"name"`
	Coef   *float64 `json:"coef"`
	StdErr *float64 `json:"std_err"`
	T      *float64 `json:"t"`
	P      *float64 `json:"p"`
	// CI is the 95% confidence interval, as the summary gives it.
	CI [2]*float64 `json:"ci"`
}

// TestStat is a test statistic with its p-value.
type TestStat struct {
	Stat *float64 `json:"stat"`
	P    *float64 `json:"p"`
	Lags int      `json:"lags,omitempty"`
}

// OLSFit is the structured content of estimate_ols: the statistics of
// the fitted model, as engine.PyOLSStats reads them.
type OLSFit struct {
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
	MaxLags        int           `json:"maxlags,omitempty"` // of cov_type HAC
	// Summary is statsmodels' summary text: the text content gives it,
	// so the structured content leaves it out.
	Summary string `json:"summary,omitempty"`
	// Note says when the residuals look autocorrelated and the standard
	// errors assume they are not.
	Note string `json:"note,omitempty"`
	// RunID and Status are set when the call handed the fit off as a run
	// still going (see wait_run).
	RunID  string `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
}

// ParseOLS reads engine.PyOLSStats' reply about model, fitted in session,
// and says the same in words, cut to limit: statsmodels' summary (which
// the structured content then leaves out), the Breusch-Godfrey test, the
// autocorrelation note and where the fitted result is.
func ParseOLS(raw json.RawMessage, session, model string, limit int) (OLSFit, string, error) {
	out := OLSFit{SessionID: session, Model: model}
	if err := json.Unmarshal(raw, &out); err != nil {
		return OLSFit{}, "", fmt.Errorf("bad reply from the kernel: %v", err)
	}
	text := out.Summary
	out.Summary = "" // the numbers are in out; the text gives the summary
	if bg := out.BreuschGodfrey; bg.Stat != nil && bg.P != nil {
		text += fmt.Sprintf("\nBreusch-Godfrey LM (%d lags): %.3f, p = %.4f", bg.Lags, *bg.Stat, *bg.P)
	}
	out.Note = AutocorrelationNote(out.CovType, out.DurbinWatson, out.BreuschGodfrey.P, out.Nobs)
	if out.Note != "" {
		text += "\n" + out.Note
	}
	text += fmt.Sprintf("\nThe fitted result is the variable %s (model.params, model.resid, ...).", model)
	text, _ = history.CutMiddle(text, limit)
	return out, text, nil
}
