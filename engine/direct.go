package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// KernelFor returns session id's kernel for a request that needs no turn
// (complete, inspect), creating the session and starting a kernel if
// needed.
func (s *Engine) KernelFor(ctx context.Context, id string) (*kernel.Kernel, error) {
	ss, err := s.LookupOrCreate(id)
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

// TimeoutOr is the run timeout t asks for, in seconds (0 means no limit),
// or def when t is nil. It refuses what is not a number of seconds from
// 0 to one week.
func TimeoutOr(t *float64, def time.Duration) (time.Duration, error) {
	if t == nil {
		return def, nil
	}
	v := *t
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("invalid timeout %v: give seconds >= 0 (0 means no limit)", v)
	}
	if v > 7*24*3600 {
		return 0, fmt.Errorf("invalid timeout %v: at most one week (604800 s)", v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// Tail is the last n lines of pip's output.
func (in Install) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(in.Output, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
