package kernelspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Fixtures shared by the tests. Executable scripts are written here, before
// any test runs a subprocess, so no exec can hit ETXTBSY on a file another
// goroutine is still writing.
var (
	realPy    string // sys.executable of python3 on PATH with ipykernel, "" if unavailable
	wrapperPy string // Unix: a script running realPy with -S, so ipykernel is not importable
	garbagePy string // Unix: a script that exits 0 without printing the inspect JSON
	plainFile string // a non-executable file
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kernelspec-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(p, "-c", "import sys, ipykernel; print(sys.executable)").Output()
		if err == nil {
			realPy = strings.TrimSpace(string(out))
		}
	}
	if runtime.GOOS != "windows" && realPy != "" {
		wrapperPy = filepath.Join(dir, "wrapper", "python3")
		garbagePy = filepath.Join(dir, "garbage", "python3")
		must(os.MkdirAll(filepath.Dir(wrapperPy), 0o755))
		must(os.MkdirAll(filepath.Dir(garbagePy), 0o755))
		must(os.WriteFile(wrapperPy, []byte("#!/bin/sh\nexec '"+realPy+"' -S \"$@\"\n"), 0o755))
		must(os.WriteFile(garbagePy, []byte("#!/bin/sh\necho hello\n"), 0o755))
	}
	plainFile = filepath.Join(dir, "plain", "python3")
	must(os.MkdirAll(filepath.Dir(plainFile), 0o755))
	must(os.WriteFile(plainFile, []byte("not a program"), 0o644))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// needPython skips t when no python3 with ipykernel is available, and fails
// it under CI, where a skip would hide a broken install step.
func needPython(t *testing.T) {
	t.Helper()
	if realPy == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and python3 with ipykernel is not available")
		}
		t.Skip("python3 with ipykernel not available")
	}
}

// needUnixScripts skips t where the shell-script fake interpreters cannot run.
func needUnixScripts(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell-script interpreters need Unix")
	}
	needPython(t)
}

// mapEnv returns a Getenv reading only m.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeKernel writes kernelsDir/name/kernel.json with content.
func writeKernel(t *testing.T, kernelsDir, name, content string) {
	t.Helper()
	d := filepath.Join(kernelsDir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "kernel.json"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
