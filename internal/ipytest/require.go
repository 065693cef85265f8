package ipytest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

var (
	requireOnce sync.Once
	requireErr  error
)

// Require skips a test that needs python3 with ipykernel when there is
// none, and fails it instead under CI=true, where a missing dependency is
// an error of the machine's set-up, never a reason to skip.
func Require(t testing.TB) {
	t.Helper()
	requireOnce.Do(func() { requireErr = exec.Command("python3", "-c", "import ipykernel").Run() })
	if err := requireErr; err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with ipykernel is needed: %v", err)
		}
		t.Skip("python3 with ipykernel is needed")
	}
}
