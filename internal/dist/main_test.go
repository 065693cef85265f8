package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// The tests build the release files once (shared.out), as `make dist`
// does, and check the files; the install tests then install them the ways
// a person would. Their tools: the dist venv (hatchling and uv, made by
// .ci/run at $KERNEL_MCP_TEST_DIST_VENV, default
// ~/.cache/kernel-mcp/venv-dist), and once packaging/mcpb exists, node and
// its mcpb command. Missing tools skip the tests, or fail them under
// CI=true.

var shared struct {
	tmp string // removed after the tests

	once  sync.Once
	out   string
	epoch time.Time
	log   bytes.Buffer
	took  time.Duration
	err   error
}

func TestMain(m *testing.M) {
	var err error
	if shared.tmp, err = os.MkdirTemp("", "kernel-mcp-dist-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := ipytest.Main(m, "internal/dist")
	// go install leaves its module cache read-only unless -modcacherw,
	// which it is given; make sure nothing stops the removal anyway.
	_ = filepath.WalkDir(shared.tmp, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(path, 0o755)
		}
		return nil
	})
	os.RemoveAll(shared.tmp)
	os.Exit(code)
}

// unavailable skips t for a missing tool, or fails it under CI=true,
// where a missing tool is a broken set-up.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and "+format, args...)
	}
	t.Skipf(format, args...)
}

// repoRoot is the repository this package is in.
func repoRoot(t testing.TB) string {
	t.Helper()
	root := repoRootDir()
	if root == "" {
		t.Fatal("no repository root")
	}
	return root
}

func repoRootDir() string {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	return root
}

// distVenv is the virtualenv with hatchling and uv.
func distVenv() string {
	if v := os.Getenv("KERNEL_MCP_TEST_DIST_VENV"); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kernel-mcp", "venv-dist")
}

func distPython() string { return filepath.Join(distVenv(), "bin", "python") }
func distUV() string     { return filepath.Join(distVenv(), "bin", "uv") }

var (
	toolsOnce sync.Once
	toolsErr  error
)

// requireTools checks what the build needs: hatchling, uv and, when the
// bundle is packaged (packaging/mcpb), node and the mcpb command.
func requireTools(t testing.TB) {
	t.Helper()
	toolsOnce.Do(func() {
		var errs []error
		if out, err := exec.Command(distPython(), "-c", "import hatchling").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("hatchling in %s (KERNEL_MCP_TEST_DIST_VENV): %v %s", distVenv(), err, out))
		}
		if out, err := exec.Command(distUV(), "--version").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("uv in %s (KERNEL_MCP_TEST_DIST_VENV): %v %s", distVenv(), err, out))
		}
		root := repoRoot(t)
		if _, err := os.Stat(filepath.Join(root, "packaging", "mcpb", "package.json")); err == nil {
			if _, err := exec.LookPath("node"); err != nil {
				errs = append(errs, fmt.Errorf("node, for the bundle: %v", err))
			}
			if _, err := os.Stat(defaultMCPB(root)); err != nil {
				errs = append(errs, fmt.Errorf("the mcpb command (npm ci in packaging/mcpb): %v", err))
			}
		}
		toolsErr = errors.Join(errs...)
	})
	if toolsErr != nil {
		unavailable(t, "the release build's tools are missing: %v", toolsErr)
	}
}

func defaultMCPB(root string) string {
	return filepath.Join(root, "packaging", "mcpb", "node_modules", ".bin", "mcpb")
}

// built runs the release build once, into a temporary folder, and returns
// that folder. The build is this package's command, compiled without the
// race detector the tests may run under (which makes its compression many
// times slower), and run as `make dist` runs it.
func built(t testing.TB) string {
	t.Helper()
	requireTools(t)
	shared.once.Do(func() {
		root := repoRoot(t)
		shared.out = filepath.Join(shared.tmp, "dist")
		shared.epoch = commitTime(context.Background(), root)
		start := time.Now()
		// No -epoch: the build takes HEAD's commit time itself.
		shared.err = runDist(root, shared.out, time.Time{}, &shared.log)
		shared.took = time.Since(start)
	})
	if shared.err != nil {
		t.Fatalf("the release build: %v\n%s", shared.err, shared.log.String())
	}
	return shared.out
}

var (
	distOnce sync.Once
	distBin  string
	distErr  error
)

// runDist builds the release of the source in root into out: go run
// ./internal/dist, with the Python of the dist venv and the mcpb command of
// this repository (a copy of the source has no node_modules). A zero epoch
// passes neither -epoch nor SOURCE_DATE_EPOCH.
func runDist(root, out string, epoch time.Time, log *bytes.Buffer) error {
	distOnce.Do(func() {
		distBin = filepath.Join(shared.tmp, "dist-command")
		cmd := exec.Command("go", "build", "-o", distBin, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			distErr = fmt.Errorf("go build ./internal/dist: %v\n%s", err, b)
		}
	})
	if distErr != nil {
		return distErr
	}
	args := []string{"-root", root, "-out", out, "-python", distPython(), "-mcpb", defaultMCPB(repoRootDir())}
	if !epoch.IsZero() {
		args = append(args, "-epoch", strconv.FormatInt(epoch.Unix(), 10))
	}
	cmd := exec.Command(distBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	return cmd.Run()
}

// version is the repository's VERSION.
func version(t testing.TB) string {
	t.Helper()
	v, err := readVersion(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReadVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want, err string
	}{
		{"0.6.0\n", "0.6.0", ""},
		{"0.6.0", "0.6.0", ""},
		{"v0.6.0\n", "", `VERSION holds "v0.6.0": want one line MAJOR.MINOR.PATCH`},
		{"0.6\n", "", `VERSION holds "0.6"`},
		{"0.6.0\n0.7.0\n", "", `VERSION holds "0.6.0\n0.7.0"`},
	} {
		if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readVersion(dir)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("VERSION %q: %q, %v; want %q", tc.content, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("VERSION %q: error %v, want one containing %q", tc.content, err, tc.err)
		}
	}
	// The repository's own is the release's version.
	if v := version(t); v == "" {
		t.Fatal("no version")
	}
}

// An out folder holding anything but release files is refused before any
// build, and earlier release files are replaced; bad flags and a Python
// without hatchling stop the build before it starts.
func TestBadInput(t *testing.T) {
	out := t.TempDir()
	for _, name := range []string{"SHA256SUMS", "kernel-mcp_0.5.0_linux_amd64.tar.gz", "kernel_mcp-0.5.0-py3-none-win_amd64.whl", "kernel-mcp-0.5.0.mcpb"} {
		if err := os.WriteFile(filepath.Join(out, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := cleanOut(out); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("earlier release files left: %v", left)
	}
	if err := os.WriteFile(filepath.Join(out, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := cleanOut(out)
	if err == nil || !strings.Contains(err.Error(), `holds files that are not release files: ["notes.txt"]`) {
		t.Errorf("a folder with notes.txt: %v", err)
	}
	err = run(context.Background(), []string{"-root", repoRoot(t), "-out", out, "-epoch", "12"})
	if err == nil || !strings.Contains(err.Error(), "-epoch / SOURCE_DATE_EPOCH \"12\"") {
		t.Errorf("-epoch 12: %v", err)
	}
	err = run(context.Background(), []string{"-root", repoRoot(t), "-out", out, "-python", distPython()})
	if err == nil || !strings.Contains(err.Error(), "not release files") {
		t.Errorf("a build into a folder with notes.txt: %v", err)
	}
	// A Python without hatchling stops the build before anything is built;
	// a relative path is made absolute, since hatchling runs in another
	// folder.
	empty := t.TempDir()
	err = run(context.Background(), []string{"-root", repoRoot(t), "-out", empty, "-python", filepath.Join("no-venv", "bin", "python")})
	abs, _ := filepath.Abs(filepath.Join("no-venv", "bin", "python"))
	if err == nil || !strings.Contains(err.Error(), "-python "+abs+" cannot build the wheels") {
		t.Errorf("-python no-venv/bin/python: %v", err)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a build without hatchling wrote %v", left)
	}
	// So does a missing mcpb command, naming the way to install it.
	if out, err := exec.Command(distPython(), "-c", "import hatchling").CombinedOutput(); err != nil {
		unavailable(t, "hatchling in %s (KERNEL_MCP_TEST_DIST_VENV): %v %s", distVenv(), err, out)
	}
	missing := filepath.Join(t.TempDir(), "mcpb")
	err = run(context.Background(), []string{"-root", repoRoot(t), "-out", empty, "-python", distPython(), "-mcpb", missing})
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "npm ci") || !strings.Contains(err.Error(), "make dist") {
		t.Errorf("-mcpb %s: %v", missing, err)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a build without the mcpb command wrote %v", left)
	}
}
