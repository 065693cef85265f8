//go:build unix

package integration

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

type poolRow struct {
	Size     int   `json:"size"`
	Ready    int   `json:"ready"`
	Starting int   `json:"starting"`
	Pids     []int `json:"pids"`
}

// pool reads the warm-kernel pool from list_sessions.
func (s *server) pool() poolRow {
	s.t.Helper()
	return structured[struct {
		Pool poolRow `json:"pool"`
	}](s.t, s.call("list_sessions", nil)).Pool
}

// waitPool polls list_sessions until the pool has want ready kernels.
func (s *server) waitPool(want int) poolRow {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		p := s.pool()
		if p.Ready == want && p.Starting == 0 {
			return p
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pool never had %d ready kernels: %+v", want, p)
		}
		time.Sleep(20 * time.Millisecond) // polling a tool: the server sends no event for it
	}
}

// TestPoolWarmSession: with the default pool of 1, a new session gets the
// kernel that was already running, the pool refills with another one, and
// the pool kernel is neither a session nor counted by --max-sessions.
func TestPoolWarmSession(t *testing.T) {
	s := startServer(t, "--max-sessions", "1")
	p := s.waitPool(1)
	if p.Size != 1 || len(p.Pids) != 1 || !alive(p.Pids[0]) {
		t.Fatalf("pool %+v", p)
	}
	if rows := s.sessions(); len(rows) != 0 {
		t.Fatalf("pool kernel listed as a session: %+v", rows)
	}
	warm := p.Pids[0]

	t0 := time.Now()
	res := s.call("create_session", map[string]any{"session_id": "a"})
	created := time.Since(t0)
	if res.IsError {
		t.Fatalf("create_session with a warm kernel and --max-sessions 1: %s", text(res))
	}
	_, out := s.run("a", "x = 41\nx + 1")
	t.Logf("MEASURE: create_session from the pool took %v; create-to-first-result %v", created.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if out.Result != "42" {
		t.Fatalf("first run in a warm session: %+v", out)
	}
	if got := s.pidOf("a"); got != warm {
		t.Fatalf("session a runs pid %d, not the warm kernel %d", got, warm)
	}

	p = s.waitPool(1)
	if p.Pids[0] == warm {
		t.Fatalf("the pool still offers the kernel session a took: %+v", p)
	}
	// The refilled pool kernel does not count against --max-sessions 1:
	// a's kernel does, so b is refused.
	if res := s.call("create_session", map[string]any{"session_id": "b"}); !res.IsError || !strings.Contains(text(res), "limit of 1 running kernel") {
		t.Fatalf("second session under --max-sessions 1: isError=%v %s", res.IsError, text(res))
	}
	if got := s.pool(); got.Ready != 1 || got.Pids[0] != p.Pids[0] {
		t.Fatalf("a refused session touched the pool: %+v, was %+v", got, p)
	}

	// All kernels, the pool's included, end with the server.
	pids := []int{warm, p.Pids[0]}
	s.close()
	for _, pid := range pids {
		if !waitGone(t, pid, 20*time.Second) {
			t.Errorf("kernel %d outlived the server", pid)
		}
	}
}

// TestPoolReset: reset_run_context swaps in the warm kernel (a fresh
// namespace at once) and the old kernel goes away.
func TestPoolReset(t *testing.T) {
	s := startServer(t)
	if _, out := s.run("r", "y = 'old'"); out.Status != "ok" {
		t.Fatalf("run: %+v", out)
	}
	old := s.pidOf("r")
	warm := s.waitPool(1).Pids[0]
	if res := s.call("reset_run_context", map[string]any{"session_id": "r"}); res.IsError {
		t.Fatalf("reset: %s", text(res))
	}
	if got := s.pidOf("r"); got != warm {
		t.Fatalf("after reset session r runs pid %d, want the warm kernel %d (old %d)", got, warm, old)
	}
	if _, out := s.run("r", "'y' in dir()"); out.Result != "False" {
		t.Fatalf("namespace survived the reset: %+v", out)
	}
	if !waitGone(t, old, 20*time.Second) {
		t.Fatalf("the replaced kernel %d is still running", old)
	}
	s.waitPool(1)
}

// TestPoolDeadKernelSkipped: a pool kernel killed while it waits is not
// handed out; the session gets a live kernel and the pool refills.
func TestPoolDeadKernelSkipped(t *testing.T) {
	s := startServer(t)
	dead := s.waitPool(1).Pids[0]
	if err := syscall.Kill(dead, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t, dead, 10*time.Second) {
		t.Fatalf("pool kernel %d survived SIGKILL", dead)
	}
	if _, out := s.run("d", "1+1"); out.Result != "2" {
		t.Fatalf("run after the pool kernel was killed: %+v", out)
	}
	if got := s.pidOf("d"); got == dead || !alive(got) {
		t.Fatalf("session d runs pid %d (the killed pool kernel was %d)", got, dead)
	}
	s.waitPool(1)
}

// TestPoolOff: --pool-size 0 starts nothing before the first session.
func TestPoolOff(t *testing.T) {
	s := startServerEnv(t, []string{"KERNEL_MCP_POOL_SIZE=0"})
	p := s.pool()
	if p.Size != 0 || p.Ready != 0 || p.Starting != 0 {
		t.Fatalf("pool with KERNEL_MCP_POOL_SIZE=0: %+v", p)
	}
	if kids := kernelChildren(t, s.cmd.Process.Pid); len(kids) != 0 {
		t.Fatalf("kernels running before any session with the pool off: %v", kids)
	}
	if _, out := s.run("cold", "1+1"); out.Result != "2" {
		t.Fatalf("cold run: %+v", out)
	}
	if p := s.pool(); p.Ready+p.Starting != 0 {
		t.Fatalf("pool filled while off: %+v", p)
	}
}

// TestPoolPerKind: a session with its own working directory gets a kernel
// started there; from then on that kind is kept warm too, and the next
// session of that kind gets its kernel from the pool.
func TestPoolPerKind(t *testing.T) {
	s := startServer(t, "--pool-size", "1")
	s.waitPool(1)
	dir := t.TempDir()
	if res := s.call("create_session", map[string]any{"session_id": "k1", "cwd": dir}); res.IsError {
		t.Fatalf("create k1: %s", text(res))
	}
	p := s.waitPool(2) // the default kind and dir's
	if res := s.call("create_session", map[string]any{"session_id": "k2", "cwd": dir}); res.IsError {
		t.Fatalf("create k2: %s", text(res))
	}
	if got := s.pidOf("k2"); !slices.Contains(p.Pids, got) {
		t.Fatalf("k2 runs pid %d, not one of the warm kernels %v", got, p.Pids)
	}
	if _, out := s.run("k2", "import os; os.getcwd()"); out.Result != strconv.Quote(dir) && out.Result != "'"+dir+"'" {
		t.Fatalf("k2's working directory: %+v, want %s", out, dir)
	}
	if _, out := s.run("other", "import os; os.getcwd()"); out.Result == "'"+dir+"'" {
		t.Fatalf("a default session got the kernel started in %s", dir)
	}
}

// TestPoolMemoryLimit: pool kernels run under --memory-limit like any other.
func TestPoolMemoryLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("--memory-limit is Linux only")
	}
	s := startServer(t, "--memory-limit", "3G")
	pid := s.waitPool(1).Pids[0]
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max address space") {
			if f := strings.Fields(line); len(f) < 5 || f[3] != strconv.Itoa(3<<30) {
				t.Fatalf("pool kernel %d: %q, want a soft limit of %d", pid, line, 3<<30)
			}
			return
		}
	}
	t.Fatalf("no address-space line in /proc/%d/limits", pid)
}

// kernelChildren lists the pids of ipykernel processes whose parent is pid.
func kernelChildren(t *testing.T, pid int) []int {
	t.Helper()
	parent, err := parents()
	if err != nil {
		t.Skip("no /proc")
	}
	var kids []int
	for n, p := range parent {
		if p != pid {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(n) + "/cmdline")
		if strings.Contains(string(cmdline), "ipykernel") {
			kids = append(kids, n)
		}
	}
	return kids
}

// parents maps the pid of every process in /proc to its parent's pid.
func parents() (map[int]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 2 {
			parent[n], _ = strconv.Atoi(f[1])
		}
	}
	return parent, nil
}
