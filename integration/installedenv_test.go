//go:build unix

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// venvWithServer makes a virtualenv of python3 (seeing the system's
// packages, ipykernel among them, when systemSite) and puts the kernel-mcp
// binary in its bin/, as pip install kernel-mcp does. It returns the env
// and the binary's path there.
func venvWithServer(t *testing.T, systemSite bool) (env, bin string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir()) // the server reports resolved paths (macOS: /private/var)
	if err != nil {
		t.Fatal(err)
	}
	env = filepath.Join(tmp, "env")
	args := []string{"-m", "venv", "--without-pip"}
	if systemSite {
		args = append(args, "--system-site-packages")
	}
	if out, err := exec.Command("python3", append(args, env)...).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	bin = filepath.Join(env, "bin", "kernel-mcp")
	if err := os.Link(binary, bin); err != nil {
		data, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return env, bin
}

// prefixOf is the sys.prefix of the default session's kernel.
func prefixOf(t *testing.T, s *server) string {
	t.Helper()
	res := s.call("run_code", map[string]any{"code": "import sys; print(sys.prefix)"})
	if res.IsError {
		t.Fatalf("run_code: %s", text(res))
	}
	return strings.TrimSpace(text(res))
}

// A kernel-mcp installed in a virtualenv that has ipykernel runs the code
// with that env's python, and list_kernels says so; one installed in a uv
// tool env (or run by uvx, which also puts the env's bin first on PATH)
// leaves that env alone.
func TestInstalledEnv(t *testing.T) {
	requireKernel(t)
	t.Parallel()
	t.Run("virtualenv", func(t *testing.T) {
		t.Parallel()
		env, bin := venvWithServer(t, true)
		s := connectCmd(t, exec.Command(bin, "--state-dir", t.TempDir(), "--pool-size", "0"), nil)
		if got := text(s.call("list_kernels", map[string]any{})); !strings.Contains(got, filepath.Join(env, "bin", "python3")+" (Python") ||
			!strings.Contains(got, "from installed-env") {
			t.Errorf("list_kernels does not list the installed env's python:\n%s", got)
		}
		if got := prefixOf(t, s); got != env {
			t.Errorf("the kernel's sys.prefix is %s, want the installed env %s", got, env)
		}
	})
	t.Run("uv tool env", func(t *testing.T) {
		t.Parallel()
		env, bin := venvWithServer(t, true)
		if err := os.WriteFile(filepath.Join(env, "uv-receipt.toml"), []byte("[tool]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--state-dir", t.TempDir(), "--pool-size", "0")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(env, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		s := connectCmd(t, cmd, nil)
		if got := text(s.call("list_kernels", map[string]any{})); strings.Contains(got, env) {
			t.Errorf("list_kernels lists the tool env:\n%s", got)
		}
		if got := prefixOf(t, s); got == env {
			t.Errorf("the kernel runs in the uv tool env %s", env)
		}
	})
}
