package engine

import (
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// The sandbox refuses a configured work directory: the folder its kernels
// may write in must hold nothing else (a workdir could hold the state
// directory, a home or the server's own interpreter, which runs on the
// host).
func TestSandboxRefusesWorkDir(t *testing.T) {
	dir := t.TempDir()
	e, err := New(Config{WorkDir: dir, StateDir: t.TempDir(), Sandbox: &kernel.SandboxOptions{Bwrap: "/no/such/bwrap"}})
	if err == nil {
		e.Close()
		t.Fatal("New accepted a work directory with the sandbox")
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "cannot be used with the sandbox") {
		t.Errorf("New with a work directory and the sandbox: %v", err)
	}
}
