//go:build unix

package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kernel faults: each is reported plainly in the result of the run that
// suffered it, the session works again on the next call, and a second
// session started before the fault is untouched (same kernel, same
// variables).

// relPeakRSS is a process's peak resident set size in bytes (VmHWM), or -1.
func relPeakRSS(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

func relMB(b int64) float64 { return float64(b) / (1 << 20) }

// relGrace is the interrupt grace the server runs with in these tests: 1 s
// when the binary has --interrupt-grace, else its default of 5 s.
var relGrace = sync.OnceValues(func() ([]string, time.Duration) {
	out, _ := exec.Command(binary, "--help").CombinedOutput()
	if strings.Contains(string(out), "--interrupt-grace") {
		return []string{"--interrupt-grace", "1"}, time.Second
	}
	return nil, 5 * time.Second
})

// relBystander starts a session that a fault elsewhere must not touch and
// returns a check to call afterwards.
func relBystander(t *testing.T, s *server, id string) func() {
	t.Helper()
	if _, out := s.run(id, "bystander_value = 'untouched'"); out.Status != "ok" {
		t.Fatalf("bystander: %+v", out)
	}
	pid := s.pidOf(id)
	return func() {
		t.Helper()
		if got := s.pidOf(id); got != pid {
			t.Errorf("bystander %q: kernel pid changed %d -> %d", id, pid, got)
		}
		if _, out := s.run(id, "bystander_value"); out.Result != "'untouched'" {
			t.Errorf("bystander %q disturbed: %+v", id, out)
		}
	}
}

// relWorksAgain checks that a session runs code again after a fault, on a
// fresh namespace when fresh is set.
func relWorksAgain(t *testing.T, s *server, id string, fresh bool) {
	t.Helper()
	if _, out := s.run(id, "'again'"); out.Status != "ok" || out.Result != "'again'" {
		t.Fatalf("session %q after the fault: %+v", id, out)
	}
	_, out := s.run(id, "before_fault")
	if fresh && (out.Error == nil || out.Error.EName != "NameError") {
		t.Fatalf("session %q: want a fresh namespace after the fault: %+v", id, out)
	}
	if !fresh && out.Result != "'set'" {
		t.Fatalf("session %q: namespace should be kept: %+v", id, out)
	}
}

// A kernel that dies mid-run (exit status, signal) is reported as such; the
// next call starts a fresh kernel and says so. sys.exit() does not kill an
// IPython kernel at all: IPython catches SystemExit.
func TestFaultKernelDeaths(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	check := relBystander(t, s, "bystander")
	cases := []struct {
		name, code string
		died       string // "" for "the kernel survives"
	}{
		{"os_exit_3", "import os\nos._exit(3)", "kernel died (exit status 3)"},
		{"sigsegv", "import ctypes\nctypes.string_at(0)", "kernel died (signal 11)"},
		{"sys_exit_0", "import sys\nsys.exit(0)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "fault-" + c.name
			s.run(id, "before_fault = 'set'")
			pid := s.pidOf(id)
			start := time.Now()
			res, out := s.run(id, c.code)
			elapsed := time.Since(start)
			t.Logf("MEASURE: fault %s: reported in %v", c.name, elapsed.Round(time.Millisecond))
			txt := text(res)
			if c.died != "" {
				if !res.IsError || out.Status != "error" {
					t.Fatalf("want an error result: isError=%v %+v", res.IsError, out)
				}
				if !strings.HasPrefix(txt, "KernelDied: "+c.died) || !strings.Contains(txt, c.died+" — variables lost, history kept") {
					t.Fatalf("result text does not say %q plainly:\n%s", c.died, txt)
				}
				if out.Error == nil || out.Error.EName != "KernelDied" || !strings.Contains(out.Note, c.died) {
					t.Fatalf("structured: %+v", out)
				}
				if st := stateOf(s, id); st != "dead" {
					t.Fatalf("state after death %q, want dead", st)
				}
				if !waitGone(t, pid, 10*time.Second) {
					t.Fatalf("dead kernel %d still running", pid)
				}
				res, out := s.run(id, "'first after death'")
				if out.Result != "'first after death'" || !strings.Contains(text(res), "previous kernel had died ("+c.died+")") {
					t.Fatalf("first run after death: %+v\n%s", out, text(res))
				}
				relWorksAgain(t, s, id, true)
			} else {
				// IPython catches SystemExit: an error result naming it, the
				// kernel and its namespace kept.
				if !res.IsError || out.Status != "error" || out.Error == nil || out.Error.EName != "SystemExit" {
					t.Fatalf("sys.exit(0): want a SystemExit error result: isError=%v %+v\n%s", res.IsError, out, txt)
				}
				if !strings.HasPrefix(txt, "SystemExit") || strings.Contains(txt, "kernel died") {
					t.Fatalf("sys.exit(0) text:\n%s", txt)
				}
				if got := s.pidOf(id); got != pid {
					t.Fatalf("kernel pid changed %d -> %d after sys.exit", pid, got)
				}
				relWorksAgain(t, s, id, false)
			}
			check()
		})
	}
}

// A kernel stopped with SIGSTOP cannot take the interrupt: after the grace
// the server restarts it, says state was lost, and the old process is gone.
func TestFaultSIGSTOP(t *testing.T) {
	t.Parallel()
	graceArgs, grace := relGrace()
	s := startServer(t, graceArgs...)
	check := relBystander(t, s, "bystander")
	s.run("stopped", "before_fault = 'set'")
	pid := s.pidOf("stopped")
	t.Cleanup(func() { // never leave a stopped process behind
		if alive(pid) && !isZombie(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	type result struct {
		out     runOutput
		text    string
		isError bool
		at      time.Time
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		res, out := s.run("stopped", "import time\nwhile True:\n    time.sleep(0.05)", "timeout", 1)
		done <- result{out, text(res), res.IsError, time.Now()}
	}()
	waitState(t, s, "stopped", "busy")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(1*time.Second + grace + 30*time.Second):
		t.Fatal("run on a stopped kernel never returned")
	}
	elapsed := r.at.Sub(start)
	t.Logf("MEASURE: SIGSTOP'd kernel, timeout 1s, grace %v: reported in %v", grace, elapsed.Round(time.Millisecond))
	if r.out.Status != "timeout" || !r.isError {
		t.Fatalf("want a timeout result: isError=%v %+v\n%s", r.isError, r.out, r.text)
	}
	if !strings.Contains(r.text, "timed out after 1s") || !strings.Contains(r.out.Note, "ignored the interrupt") || !strings.Contains(r.out.Note, "restarted: all variables were lost") {
		t.Fatalf("result must say the kernel was restarted and state lost:\n%s", r.text)
	}
	if elapsed > 1*time.Second+grace+15*time.Second {
		t.Fatalf("took %v, more than timeout + grace + 15 s", elapsed)
	}
	if !waitGone(t, pid, 10*time.Second) {
		t.Fatalf("stopped kernel %d still exists after the restart", pid)
	}
	if got := s.pidOf("stopped"); got == pid || got == 0 {
		t.Fatalf("pid after restart %d (old %d)", got, pid)
	}
	relWorksAgain(t, s, "stopped", true)
	check()
}

// Code that ignores SIGINT and busy-loops is restarted within timeout +
// grace (+ restart time).
func TestFaultIgnoredSIGINTBusyLoop(t *testing.T) {
	t.Parallel()
	graceArgs, grace := relGrace()
	s := startServer(t, graceArgs...)
	check := relBystander(t, s, "bystander")
	s.run("stubborn", "before_fault = 'set'")
	pid := s.pidOf("stubborn")
	start := time.Now()
	res, out := s.run("stubborn", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ignoring', flush=True)\nwhile True:\n    pass", "timeout", 1)
	elapsed := time.Since(start)
	t.Logf("MEASURE: SIGINT ignored + busy loop, timeout 1s, grace %v: restarted and reported in %v", grace, elapsed.Round(time.Millisecond))
	if out.Status != "timeout" || !res.IsError || !strings.Contains(out.Note, "restarted: all variables were lost") {
		t.Fatalf("want timeout + restart: isError=%v %+v\n%s", res.IsError, out, text(res))
	}
	if out.Stdout != "ignoring\n" {
		t.Fatalf("output before the restart must be kept: %q", out.Stdout)
	}
	if bound := 1*time.Second + grace + 15*time.Second; elapsed > bound {
		t.Fatalf("restart took %v, bound %v", elapsed, bound)
	}
	if elapsed < 1*time.Second+grace {
		t.Fatalf("restarted after %v, before timeout + grace", elapsed)
	}
	if !waitGone(t, pid, 10*time.Second) {
		t.Fatalf("old kernel %d still running", pid)
	}
	relWorksAgain(t, s, "stubborn", true)
	check()
}

// Interpreters that cannot run a kernel give one-line errors naming the
// path and, for a missing ipykernel, the command that installs it.
func TestFaultBadInterpreter(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	check := relBystander(t, s, "bystander")

	start := time.Now()
	res := s.call("create_session", map[string]any{"session_id": "nopy", "python": "/no/such/python"})
	t.Logf("MEASURE: missing interpreter: reported in %v", time.Since(start).Round(time.Millisecond))
	if txt := text(res); !res.IsError || !strings.Contains(txt, "/no/such/python") || strings.Contains(strings.TrimSpace(txt), "\n") {
		t.Fatalf("missing interpreter: isError=%v %q", res.IsError, txt)
	}

	wrapper := filepath.Join(t.TempDir(), "python-no-site")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if exec.Command(wrapper, "-c", "import ipykernel").Run() == nil {
		t.Skip("python3 -S still imports ipykernel here")
	}
	start = time.Now()
	res = s.call("create_session", map[string]any{"session_id": "nosite", "python": wrapper})
	t.Logf("MEASURE: interpreter without ipykernel: reported in %v", time.Since(start).Round(time.Millisecond))
	txt := text(res)
	if !res.IsError || !strings.Contains(txt, "ipykernel is not installed for") || !strings.Contains(txt, wrapper) ||
		!strings.Contains(txt, wrapper+" -m pip install ipykernel") || strings.Contains(strings.TrimSpace(txt), "\n") {
		t.Fatalf("interpreter without ipykernel: isError=%v %q", res.IsError, txt)
	}
	for _, r := range s.sessions() {
		if r.SessionID == "nopy" || r.SessionID == "nosite" {
			t.Fatalf("a session that could not start is listed: %+v", r)
		}
	}
	check()
}
