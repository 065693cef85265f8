package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// TestSandboxWorkDir: under the sandbox, Config.WorkDir is the work
// directory: a session without a cwd runs and writes there, a folder of it
// can be a session's cwd, a folder outside cannot, and Close leaves it.
func TestSandboxWorkDir(t *testing.T) {
	ipytest.Require(t)
	if err := kernel.CheckSandbox(kernel.SandboxOptions{}); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the sandbox is unavailable: %v", err)
		}
		t.Skipf("the sandbox is unavailable: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Config{WorkDir: dir, StateDir: t.TempDir(), Sandbox: &kernel.SandboxOptions{}})
	if e.workDir != dir || e.tempWorkDir {
		t.Fatalf("work directory %q (temporary %v), want %q", e.workDir, e.tempWorkDir, dir)
	}
	ss, err := e.Create(context.Background(), "w", Choice{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSpace(stdout(runCode(t, e, ss, "import os; open('made', 'w').write('x'); print(os.getcwd())")))
	if out != dir {
		t.Errorf("sandboxed session without a cwd runs in %q, want %q", out, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("the file the kernel wrote is not in the work directory: %v", err)
	}
	if _, err := e.Create(context.Background(), "sub", Choice{Cwd: "sub"}, nil); err != nil {
		t.Errorf("a folder of the work directory as cwd: %v", err)
	}
	if _, err := e.Create(context.Background(), "out", Choice{Cwd: t.TempDir()}, nil); err == nil || !strings.Contains(err.Error(), "outside the sandbox's work directory") {
		t.Errorf("a cwd outside the work directory: %v", err)
	}
	e.Close()
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("Close removed the configured work directory: %v", err)
	}
}

// A work directory that is not a directory is New's error.
func TestSandboxWorkDirMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := New(Config{WorkDir: missing, Sandbox: &kernel.SandboxOptions{Bwrap: "/no/such/bwrap"}})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("New with a missing work directory: %v", err)
	}
}
