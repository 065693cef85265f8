package kernel

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// doomed reports whether process pid is gone, a zombie, or has SIGKILL
// pending: a SIGKILL sent to it has certainly landed. Read from /proc, so
// the test need not wait for the dying process to be scheduled.
func doomed(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&(1<<(9-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// TestGroupKilledBeforeReap: a child the kernel left in its process group
// is killed when the kernel exits, before the kernel is reaped (so before
// Execute reports the death), not later by a group signal that could reach
// whoever got the reused pid.
func TestGroupKilledBeforeReap(t *testing.T) {
	t.Parallel()
	k := startKernel(t, Options{})
	res := mustExecute(t, k, "import subprocess\nchild = subprocess.Popen(['sleep', '600'])\nprint(child.pid)")
	child, err := strconv.Atoi(strings.TrimSpace(res.Outputs[0].Text))
	if err != nil {
		t.Fatalf("child pid: %v (outputs %q)", err, describeAll(res.Outputs))
	}
	t.Cleanup(func() {
		if !processGone(child) {
			p, _ := os.FindProcess(child)
			p.Kill()
		}
	})
	_, err = k.Execute(testCtx(t, 60*time.Second), "import os; os._exit(3)", ExecuteOptions{})
	if !errors.Is(err, ErrKernelDied) {
		t.Fatalf("err = %v, want ErrKernelDied", err)
	}
	// Execute returned after the reap, so the group kill was already sent.
	if !doomed(t, child) {
		t.Errorf("child %d of the dead kernel is alive and not being killed", child)
	}
}

// TestNoGroupSignalAfterReap: once the leader is reaped its pid may belong
// to someone else, so interrupt, terminate and kill send nothing.
func TestNoGroupSignalAfterReap(t *testing.T) {
	p, err := startProcess([]string{"sh", "-c", "exit 0"}, "", os.Environ(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.waitExit(60 * time.Second) {
		t.Fatal("sh did not exit")
	}
	for name, signal := range map[string]func() error{"interrupt": p.interrupt, "terminate": p.terminate, "kill": p.kill} {
		if err := signal(); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("%s after the reap: %v, want os.ErrProcessDone without a signal sent", name, err)
		}
	}
}
