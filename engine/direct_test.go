package engine

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A timeout is seconds from 0 (no limit) to one week; nil takes the default.
func TestTimeoutOr(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	if d, err := TimeoutOr(nil, time.Minute); d != time.Minute || err != nil {
		t.Errorf("nil: %v, %v", d, err)
	}
	if d, err := TimeoutOr(f(1.5), time.Minute); d != 1500*time.Millisecond || err != nil {
		t.Errorf("1.5: %v, %v", d, err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 7*24*3600 + 1} {
		if _, err := TimeoutOr(f(bad), time.Minute); err == nil || !strings.HasPrefix(err.Error(), "invalid timeout") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// A block is named by its first line that is not blank, cut to 100 characters.
func TestFirstLine(t *testing.T) {
	for code, want := range map[string]string{
		"\n  \nx = 1\ny = 2":     "x = 1",
		"":                       "(empty)",
		strings.Repeat("é", 101): strings.Repeat("é", 100) + "…",
	} {
		if got := FirstLine(code); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", code, got, want)
		}
	}
}

// pip's output is summed up by its last lines.
func TestInstallTail(t *testing.T) {
	if got := (Install{Output: "a\nb\nc\nd\n"}).Tail(3); got != "b\nc\nd" {
		t.Errorf("tail: %q", got)
	}
}
