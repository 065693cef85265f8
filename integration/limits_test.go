//go:build unix

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sessionRow returns one session's row of list_sessions.
func (s *server) sessionRow(id string) sessionRow {
	s.t.Helper()
	for _, row := range s.sessions() {
		if row.SessionID == id {
			return row
		}
	}
	s.t.Fatalf("no session %q in list_sessions", id)
	return sessionRow{}
}

// A kernel under --memory-limit gets a MemoryError for an allocation beyond
// it, keeps its namespace, and the server goes on working.
func TestMemoryLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("--memory-limit is Linux only")
	}
	t.Parallel()
	s := startServer(t, "--memory-limit", "1G")
	if _, out := s.run("mem", "kept = 'still here'"); out.Status != "ok" {
		t.Fatalf("first run: %+v", out)
	}
	// The limit is the kernel process's own RLIMIT_AS.
	limits, err := os.ReadFile("/proc/" + strconv.Itoa(s.pidOf("mem")) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(limits), "Max address space         1073741824           1073741824") {
		t.Errorf("kernel limits:\n%s", limits)
	}

	start := time.Now()
	res, out := s.run("mem", "x = bytearray(4 * 1024**3)")
	elapsed := time.Since(start)
	t.Logf("4 GiB allocation under a 1 GiB limit failed after %v: %s", elapsed, strings.SplitN(text(res), "\n", 2)[0])
	if !res.IsError || out.Status != "error" || out.Error == nil {
		t.Fatalf("want an error result: %+v\n%s", out, text(res))
	}
	died := out.Error.EName == "KernelDied"
	if out.Error.EName != "MemoryError" && !died {
		t.Fatalf("error %s: %s, want MemoryError (or a reported kernel death)", out.Error.EName, out.Error.EValue)
	}

	// The server and the session keep working.
	res, out = s.run("mem", "kept")
	if out.Status != "ok" {
		t.Fatalf("run after the MemoryError: %+v\n%s", out, text(res))
	}
	if !died && out.Result != "'still here'" {
		t.Fatalf("namespace lost after a MemoryError: %+v", out)
	}

	// A list grown past the limit is stopped the same way.
	start = time.Now()
	res, out = s.run("mem", "big = []\nwhile True:\n    big.append(bytearray(64 * 1024**2))")
	t.Logf("growing list stopped after %v: %s", time.Since(start), strings.SplitN(text(res), "\n", 2)[0])
	if out.Status != "error" || out.Error == nil || (out.Error.EName != "MemoryError" && out.Error.EName != "KernelDied") {
		t.Fatalf("growing list: %+v\n%s", out, text(res))
	}
	if _, out = s.run("mem", "del big\n1 + 1"); out.Status != "ok" || out.Result != "2" {
		t.Fatalf("after the growing list: %+v", out)
	}
	if _, out = s.run("other", "2 + 2"); out.Status != "ok" || out.Result != "4" {
		t.Fatalf("another session: %+v", out)
	}
}

// --max-sessions 1: a second session cannot start a kernel while the first
// has one, the first goes on working, and deleting it frees the place.
func TestMaxSessions(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--max-sessions", "1")
	if _, out := s.run("first", "x = 1"); out.Status != "ok" {
		t.Fatalf("first: %+v", out)
	}

	res := s.call("run_code", map[string]any{"session_id": "second", "code": "1 + 1"})
	msg := text(res)
	t.Logf("second session refused: %s", msg)
	if !res.IsError {
		t.Fatalf("second session ran past the limit: %s", msg)
	}
	for _, want := range []string{`session "second"`, "limit of 1 running kernel", "first", "delete_session"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	res = s.call("create_session", map[string]any{"session_id": "third"})
	if !res.IsError || !strings.Contains(text(res), "limit of 1 running kernel") {
		t.Errorf("create_session past the limit: %s", text(res))
	}

	if _, out := s.run("first", "x + 1"); out.Status != "ok" || out.Result != "2" {
		t.Fatalf("first after the refusal: %+v", out)
	}
	if row := s.sessionRow("second"); row.State != "stopped" || row.Pid != 0 {
		t.Errorf("second session: %+v, want stopped without a pid", row)
	}

	pid := s.pidOf("first")
	if res := s.call("delete_session", map[string]any{"session_id": "first"}); res.IsError {
		t.Fatalf("delete_session: %s", text(res))
	}
	if !waitGone(t, pid, 15*time.Second) {
		t.Errorf("kernel %d of the deleted session still runs", pid)
	}
	if _, out := s.run("second", "1 + 1"); out.Status != "ok" || out.Result != "2" {
		t.Fatalf("second after delete_session: %+v", out)
	}
	// The place is taken again.
	if res := s.call("run_code", map[string]any{"session_id": "first", "code": "1"}); !res.IsError {
		t.Fatalf("a new first session ran past the limit: %s", text(res))
	}
}

// --idle-timeout 1: a kernel that runs nothing for a second is shut down;
// the session stays with its history, and the next run starts a fresh
// kernel and says so.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--idle-timeout", "1")
	if _, out := s.run("idle", "x = 41"); out.Status != "ok" {
		t.Fatalf("first run: %+v", out)
	}
	ranAt := time.Now()
	before := s.sessionRow("idle")
	if before.State != "idle" || before.Pid == 0 {
		t.Fatalf("after the run: %+v", before)
	}

	// list_sessions is where the stop shows: poll it.
	deadline := time.Now().Add(20 * time.Second)
	var row sessionRow
	for {
		row = s.sessionRow("idle")
		if row.State == "stopped" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kernel not stopped 20 s after its last run: %+v", row)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stoppedAfter := time.Since(ranAt)
	t.Logf("idle kernel stopped %v after the run ended (timeout 1 s)", stoppedAfter)
	if stoppedAfter < 900*time.Millisecond {
		t.Errorf("kernel stopped after %v, before the 1 s idle timeout", stoppedAfter)
	}
	if row.HistoryCount != before.HistoryCount || row.Pid != 0 {
		t.Errorf("stopped session: %+v, want history_count %d and no pid", row, before.HistoryCount)
	}
	if !waitGone(t, before.Pid, 15*time.Second) {
		t.Fatalf("idle kernel %d still runs", before.Pid)
	}

	res, out := s.run("idle", "'x' in dir()")
	if out.Status != "ok" || out.Result != "False" {
		t.Fatalf("run after the idle stop: %+v\n%s", out, text(res))
	}
	if !strings.Contains(out.Note, "idle") || !strings.Contains(out.Note, "earlier variables are gone") {
		t.Errorf("note %q does not say the kernel was stopped for being idle", out.Note)
	}
	if pid := s.pidOf("idle"); pid == 0 || pid == before.Pid {
		t.Errorf("pid after restart %d (before %d)", pid, before.Pid)
	}
	// Only the first run after the stop carries the note.
	if _, out = s.run("idle", "1"); out.Note != "" {
		t.Errorf("second run's note: %q", out.Note)
	}
}

// --start-timeout 10 with a kernel that never becomes ready: create_session
// fails within seconds, says so, and leaves no process behind.
func TestStartTimeout(t *testing.T) {
	t.Parallel()
	jp := t.TempDir()
	marker := fmt.Sprintf("kmcp-hang-%d-%d", os.Getpid(), time.Now().UnixNano())
	name := "hang"
	dir := filepath.Join(jp, "kernels", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`{"argv": ["python3", "-c", "import time; time.sleep(600)", %q], "display_name": "Never ready", "language": "python"}`, marker)
	if err := os.WriteFile(filepath.Join(dir, "kernel.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// 10 s, not less: the same bound applies to the real kernel started
	// afterwards, which needs 1-3 s on a loaded 2-core machine.
	s := startServerEnv(t, []string{"JUPYTER_PATH=" + jp}, "--start-timeout", "10")

	start := time.Now()
	res := s.call("create_session", map[string]any{"session_id": "hung", "kernel": name})
	elapsed := time.Since(start)
	t.Logf("create_session failed after %v: %s", elapsed, text(res))
	if !res.IsError {
		t.Fatalf("create_session succeeded: %s", text(res))
	}
	if !strings.Contains(text(res), "did not become ready within 10s") {
		t.Errorf("error %q does not say the kernel did not become ready", text(res))
	}
	if elapsed > 25*time.Second {
		t.Errorf("create_session took %v with --start-timeout 10", elapsed)
	}
	// The process is gone: the server kills it before answering, but give
	// the kernel a moment to be reaped.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := exec.Command("pgrep", "-f", marker).Output()
		if err != nil { // exit status 1: no process matches
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the never-ready kernel are left: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The server still works.
	if _, out := s.run("ok", "1 + 1"); out.Status != "ok" || out.Result != "2" {
		t.Fatalf("run after the failed start: %+v", out)
	}
}
