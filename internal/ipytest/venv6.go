package ipytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	venv6Once sync.Once
	venv6Py   string
	venv6Err  error
)

// IPyKernel6 returns the interpreter of a venv with ipykernel 6 (a kernel
// without subshells), made once with the tests' interpreter ($PYTHON, as
// .ci/run takes it, else $KERNEL_MCP_TEST_PYTHON, else python3) -m venv and
// pip under ~/.cache/kernel-mcp/venv-ipykernel6 and reused after; a broken
// one there (an interrupted make, a removed interpreter) is made again. It skips t when
// the venv cannot be made, and fails it under CI=true.
func IPyKernel6(t testing.TB) string {
	t.Helper()
	venv6Once.Do(func() { venv6Py, venv6Err = makeVenv6() })
	if venv6Err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a venv with ipykernel 6 is needed: %v", venv6Err)
		}
		t.Skipf("a venv with ipykernel 6 is needed: %v", venv6Err)
	}
	return venv6Py
}

func makeVenv6() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "kernel-mcp", "venv-ipykernel6")
	py := filepath.Join(dir, "bin", "python")
	if exec.Command(py, "-c", "import ipykernel").Run() == nil {
		return py, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// Made aside and renamed into place, so that a package's tests running
	// at the same time never see half a venv.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "venv-ipykernel6.tmp")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, argv := range [][]string{
		{basePython(), "-m", "venv", tmp},
		{filepath.Join(tmp, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "ipykernel<7"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	if exec.Command(py, "-c", "import ipykernel").Run() == nil {
		return py, nil // another package's tests made it meanwhile
	}
	// What is there is broken: it would make the rename fail for good.
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil && exec.Command(py, "-c", "import ipykernel").Run() != nil {
		return "", err
	}
	return py, nil
}

// basePython is the interpreter the venv is made with.
func basePython() string {
	for _, v := range []string{"PYTHON", "KERNEL_MCP_TEST_PYTHON"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	return "python3"
}
