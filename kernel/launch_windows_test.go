package kernel

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKernelChildDiesOnClose: a process the kernel started is in the
// kernel's Job Object and dies when the kernel is closed, as the process
// group's SIGKILL does on Unix.
func TestKernelChildDiesOnClose(t *testing.T) {
	requireIPyKernel(t)
	ctx := testCtx(t, 60*time.Second)
	k, err := Start(ctx, Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			k.Close()
		}
	}()
	res, err := k.Execute(ctx, "import subprocess, sys\nchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\nprint(child.pid)", ExecuteOptions{})
	if err != nil || len(res.Outputs) == 0 {
		t.Fatalf("starting a child: %v, %+v", err, res)
	}
	child, err := strconv.Atoi(strings.TrimSpace(res.Outputs[0].Text))
	if err != nil {
		t.Fatalf("child pid: %v (outputs %+v)", err, res.Outputs)
	}
	if !processExists(child) {
		t.Fatalf("child %d is not running", child)
	}
	closed = true
	if err := k.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for processExists(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the closed kernel is still running", child)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKillEndsTheWholeJob: kill, through the Job Object, ends a process
// that is busy with a child of its own.
func TestKillEndsTheWholeJob(t *testing.T) {
	p, err := startProcess([]string{"cmd", "/c", "ping -n 600 127.0.0.1 >NUL"}, "", os.Environ(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if !p.waitExit(30 * time.Second) {
		t.Fatal("cmd did not exit after kill")
	}
}
