package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// venvPython makes a virtualenv of python3 without pip and without the
// system's site-packages, so ipykernel cannot be imported in it, and
// returns its python.
func venvPython(t *testing.T) string {
	t.Helper()
	ipytest.Require(t)
	dir := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	if runtime.GOOS == "windows" {
		return filepath.Join(dir, "Scripts", "python.exe")
	}
	return filepath.Join(dir, "bin", "python3")
}

// TestRunStartChecks: an interpreter named by --python or
// PYTHON_MCP_INTERPRETER that cannot run the kernel, and a --workdir that
// is not a directory, stop the command at start with status 2 and one
// line on stderr saying what to do.
func TestRunStartChecks(t *testing.T) {
	noIPy := venvPython(t)
	missing := filepath.Join(t.TempDir(), "no-such-python")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingDir := filepath.Join(t.TempDir(), "gone")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // the line is exactly want[0] when it ends in "\n", else contains each
	}{
		{"flag python without ipykernel", []string{"--python", noIPy}, nil,
			[]string{"kernel-mcp: " + noIPy + " (--python) has no ipykernel; install it with: " + noIPy + " -m pip install ipykernel\n"}},
		{"env python without ipykernel", nil, map[string]string{"PYTHON_MCP_INTERPRETER": noIPy},
			[]string{"kernel-mcp: " + noIPy + " (PYTHON_MCP_INTERPRETER) has no ipykernel; install it with: " + noIPy + " -m pip install ipykernel\n"}},
		{"flag wins over env", []string{"--python", noIPy}, map[string]string{"PYTHON_MCP_INTERPRETER": missing},
			[]string{noIPy + " (--python) has no ipykernel"}},
		{"python that does not exist", []string{"--python", missing}, nil,
			[]string{"--python names " + missing, "does not exist", "-m pip install ipykernel"}},
		{"python that is not a program", nil, map[string]string{"PYTHON_MCP_INTERPRETER": file},
			[]string{"PYTHON_MCP_INTERPRETER names " + file, "-m pip install ipykernel"}},
		{"workdir that does not exist", []string{"--workdir", missingDir}, nil,
			[]string{`kernel-mcp: invalid --workdir / KERNEL_MCP_WORKDIR value "` + missingDir + `": no such directory` + "\n"}},
		{"workdir that is a file", nil, map[string]string{"KERNEL_MCP_WORKDIR": file},
			[]string{`kernel-mcp: invalid --workdir / KERNEL_MCP_WORKDIR value "` + file + `": not a directory` + "\n"}},
		{"workdir with a gateway", []string{"--workdir", t.TempDir(), "--gateway-url", "http://127.0.0.1:1"}, nil,
			[]string{"--workdir", "cannot be used with --gateway-url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append(tc.args, "--state-dir", "none", "--pool-size", "0"), env(with(tc.env)), &stdout, &stderr)
			msg := stderr.String()
			if code != exitUsage || stdout.Len() != 0 {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, stdout.String())
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("want one line on stderr, got %q", msg)
			}
			if w := tc.want[0]; strings.HasSuffix(w, "\n") {
				if msg != w {
					t.Errorf("stderr %q, want %q", msg, w)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q lacks %q", msg, w)
				}
			}
		})
	}
}

// serve runs the command over streamable HTTP on a free port, without a
// pool, and returns the URL it serves at and a function that stops it and
// returns its exit status and stderr.
func serve(t *testing.T, ctx context.Context, args []string, getenv func(string) string) (url string, stop func() (int, string)) {
	t.Helper()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	urls := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`serving \S+ at (http://\S+)`)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, append([]string{"--transport", transportStreamableHTTP, "--port", "0", "--state-dir", "none", "--pool-size", "0"}, args...),
			getenv, io.Discard, pw)
		pw.Close()
	}()
	stop = func() (int, string) {
		cancel()
		code := <-exit
		<-read
		return code, stderr.String()
	}
	select {
	case url = <-urls:
		return url, stop
	case code := <-exit:
		pw.Close()
		<-read
		cancel()
		t.Fatalf("run exited %d before serving: %s", code, stderr.String())
	}
	return "", nil
}

// TestRunStartsWithoutCheck: the interpreter is checked only when it is
// named for sessions to run: with --kernel the kernelspec decides, and
// when nothing is named the server starts without running any Python.
func TestRunStartsWithoutCheck(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-python")
	for _, args := range [][]string{
		nil,
		{"--kernel", "python3", "--python", missing},
	} {
		_, stop := serve(t, t.Context(), args, env(base))
		if code, stderr := stop(); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestRunWorkDir: with --workdir a session created without a cwd runs its
// code there, through the whole command and a real kernel.
func TestRunWorkDir(t *testing.T) {
	ipytest.Require(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	url, stop := serve(t, ctx, nil, env(with(map[string]string{"KERNEL_MCP_WORKDIR": dir})))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, clientTransport(transportStreamableHTTP, url, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "import os; print(os.getcwd())"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !slices.Contains(strings.Split(text, "\n"), dir) {
		t.Errorf("run_code printed %q, want the work directory %s", text, dir)
	}
	cs.Close()
	if code, stderr := stop(); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// The pip command shown for a path with spaces can be pasted as it is.
func TestQuoteArg(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/python3":          "/usr/bin/python3",
		"/Users/a b/env/bin/python": "'/Users/a b/env/bin/python'",
		"/tmp/it's/python":          `'/tmp/it'\''s/python'`,
	} {
		if got := quoteArg(in); got != want {
			t.Errorf("quoteArg(%q) = %q, want %q", in, got, want)
		}
	}
}
