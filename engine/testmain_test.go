package engine

import (
	"os"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// TestMain fails the package if anything a test started outlives the
// tests: a goroutine, or a kernel process still running as a child of this
// test binary (a session or pool kernel that Close did not shut down).
func TestMain(m *testing.M) { os.Exit(ipytest.Main(m, "engine")) }
