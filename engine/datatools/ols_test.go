package datatools

import (
	"strings"
	"testing"
)

// ParseOLS keeps the numbers in the structured content and the summary in
// the text alone, with the Breusch-Godfrey test and the note after it.
func TestParseOLS(t *testing.T) {
	raw := []byte(`{"nobs": 300, "coefficients": [{"name": "x", "coef": 1.5}], "durbin_watson": 0.9,
		"breusch_godfrey": {"stat": 12.5, "p": 0.002, "lags": 2}, "cov_type": "nonrobust", "summary": "OLS Regression Results"}`)
	out, text, err := ParseOLS(raw, "s", "model", 20000)
	if err != nil {
		t.Fatal(err)
	}
	if out.SessionID != "s" || out.Model != "model" || out.Nobs != 300 || len(out.Coefficients) != 1 || out.Summary != "" || out.Note == "" {
		t.Errorf("structured: %+v", out)
	}
	for _, want := range []string{"OLS Regression Results\nBreusch-Godfrey LM (2 lags): 12.500, p = 0.0020\n", out.Note, "The fitted result is the variable model"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	if _, _, err := ParseOLS([]byte(`[`), "s", "model", 20000); err == nil || !strings.HasPrefix(err.Error(), "bad reply from the kernel: ") {
		t.Errorf("bad reply: %v", err)
	}
}
