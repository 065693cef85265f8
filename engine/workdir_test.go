package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// stdout is the stream text a block printed.
func stdout(b *Block) string {
	var s strings.Builder
	for _, o := range b.Result.Outputs {
		s.WriteString(o.Text)
	}
	return s.String()
}

// TestWorkDir: a session created without a cwd runs in Config.WorkDir,
// whether its kernel comes from the pool or a cold start, and a relative
// cwd is taken against it.
func TestWorkDir(t *testing.T) {
	ipytest.Require(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	const code = "import os; print(os.getcwd())"
	for _, pool := range []int{0, 1} {
		e := newTestEngine(t, Config{WorkDir: dir, PoolSize: pool})
		ss, err := e.Create(context.Background(), "plain", Choice{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(stdout(runCode(t, e, ss, code))); got != dir {
			t.Errorf("pool %d: session without a cwd runs in %q, want %q", pool, got, dir)
		}
		if got, err := ss.cwd(); err != nil || got != dir {
			t.Errorf("pool %d: cwd() = %q, %v; want %q", pool, got, err, dir)
		}
		sub, err := e.Create(context.Background(), "sub", Choice{Cwd: "sub"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(stdout(runCode(t, e, sub, code))), filepath.Join(dir, "sub"); got != want {
			t.Errorf("pool %d: session with cwd \"sub\" runs in %q, want %q", pool, got, want)
		}
		e.Close()
	}
}
