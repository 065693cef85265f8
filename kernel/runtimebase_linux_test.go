package kernel

import "testing"

// SandboxRuntimeBase names the folder the sandboxed kernels' runtime dirs
// are made in, which the server hides from its tools too.
func TestSandboxRuntimeBaseIsWhereRuntimeDirsGo(t *testing.T) {
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", "")
	got, err := sandboxRuntimeBase()
	if err != nil {
		t.Skipf("no runtime base here: %v", err)
	}
	if want := SandboxRuntimeBase(); got != want {
		t.Errorf("runtime dirs go in %s, SandboxRuntimeBase says %s", got, want)
	}
	dir := t.TempDir()
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", dir)
	if got := SandboxRuntimeBase(); got != dir {
		t.Errorf("with KERNEL_MCP_RUNTIME_DIR=%s: %s", dir, got)
	}
}
