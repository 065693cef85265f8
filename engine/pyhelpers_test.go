package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// TestPythonHelpers lints the Python in py/ (it must compile) and runs its
// unit tests, py/test_helpers.py, with the python3 that runs kernels.
func TestPythonHelpers(t *testing.T) {
	ipytest.Require(t)
	if !strings.Contains(pyPrelude, `"`+ResultMIME+`"`) {
		t.Errorf("py/prelude.py does not publish under %q, the MIME type the server reads", ResultMIME)
	}
	files, err := filepath.Glob(filepath.Join("py", "*.py"))
	if err != nil || len(files) < 6 {
		t.Fatalf("py/*.py: %v %q", err, files)
	}
	// py_compile with the bytecode written to a temporary directory, not
	// next to the sources.
	lint := exec.Command("python3", append([]string{"-m", "py_compile"}, files...)...)
	lint.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := lint.CombinedOutput(); err != nil {
		t.Fatalf("py_compile: %v\n%s", err, out)
	}
	// The statsmodels FutureWarning about acorr_breusch_godfrey's return
	// type is not the helpers' to fix; everything else must be quiet.
	unit := exec.Command("python3", "-W", "ignore::FutureWarning", "-m", "unittest", "discover", "-s", "py", "-p", "test_*.py")
	unit.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := unit.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "skipped") && os.Getenv("CI") == "true" {
		t.Fatalf("helpers' tests skipped under CI:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
