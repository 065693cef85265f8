package engine

import "testing"

func TestRequirementRE(t *testing.T) {
	for _, ok := range []string{"requests", "pandas>=2", "pandas>=2,<3", "scikit-learn==1.5.0", "uvicorn[standard]", "a.b_c-d~=1.0", "numpy!=1.0.*"} {
		if !requirementRE.MatchString(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"-e .", "--index-url=x", "requests; rm -rf /", "pkg @ http://x", "./local", "/abs/path", "git+https://x", "a b", ""} {
		if requirementRE.MatchString(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
