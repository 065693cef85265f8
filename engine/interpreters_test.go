//go:build unix

package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Under the sandbox, a python written into the work directory is never run
// by the server: not when a session asks for it, not when the warm pool
// fills (or refills) with that kind.
func TestSandboxRunsNoWrittenPython(t *testing.T) {
	state := t.TempDir()
	srv, err := New(Config{PoolSize: 1, StateDir: state, Sandbox: &kernel.SandboxOptions{Bwrap: "/no/such/bwrap"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	evil := filepath.Join(srv.workDir, "evil", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(evil), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evil, []byte("#!/bin/sh\necho ran >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Choice{Python: evil}
	err = srv.checkChoice(c)
	if err == nil || !strings.Contains(err.Error(), "not one of the interpreters") {
		t.Errorf("checkChoice: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := srv.coldStart(ctx, c); err == nil || !strings.Contains(err.Error(), "not one of the interpreters") {
		t.Errorf("coldStart: %v", err)
	}
	srv.pool.warm(c)
	srv.pool.started(ctx, c, nil)
	for srv.pool.summary().Starting > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the written python ran %d times", strings.Count(string(b), "\n"))
	}
}
