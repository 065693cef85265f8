package engine

import (
	"strings"
	"testing"
)

func TestCheckSessionID(t *testing.T) {
	for _, ok := range []string{"default", "a", "ds-1", "my_session.v2", strings.Repeat("x", 64)} {
		if err := checkSessionID(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "../x", "a/b", `a\b`, "..", "a..b", ".hidden", "-x", strings.Repeat("x", 65), "sp ace", "nul\x00"} {
		if err := checkSessionID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
