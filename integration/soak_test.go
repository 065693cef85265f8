//go:build unix

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
)

// TestSoak drives six kernel-mcp servers at once with several clients
// (go-sdk over stdio and streamable HTTP, the official TypeScript client,
// two users under --tokens-file, a --sandbox server, a Kernel Gateway one,
// and one a JupyterHub runs with --hub-kernels, soak_hub_test.go) doing
// what users do, while faults are injected at random: kernels
// SIGKILLed or calling os._exit, a kernel ignoring SIGINT past its
// timeout, interrupt storms, clients gone mid-call, TCP torn down, the
// server SIGKILLed and restarted on its state directory, the gateway
// killed and started again, a hub user's single-user server killed or
// stopped under their session. Task clients (soak_tasks_test.go) speak MCP
// tasks in raw JSON-RPC beside them, both designs, under the same faults.
// It checks, during the run and at its end, that nothing was lost (see the
// inv* constants).
//
// `make soak` runs it for SOAK_MINUTES (default 10) with SOAK_SEED (random
// by default; printed, so a failure can be replayed). Without SOAK_MINUTES
// it runs for about 60 s with a fixed seed, as part of `make test`.
func TestSoak(t *testing.T) {
	requireKernel(t)
	requirePython(t, "pandas", "matplotlib", "nbformat")
	cfg := soakConfig(t)
	node, err := filepath.Abs("node_modules/.bin/node")
	if err == nil {
		_, err = os.Stat("node_modules/@modelcontextprotocol/sdk/package.json")
	}
	if err == nil {
		_, err = os.Stat(node)
	}
	if err != nil {
		msg := "node or the TypeScript MCP SDK is missing: run `npm ci` in integration/"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		msg := "bwrap is missing (the soak has a --sandbox server)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// The soak kills and restarts its gateway: one of its own, not the
	// shared one.
	gwSrv, err := gatewaytest.Start(context.Background(), gatewaytest.KernelGateway)
	if err != nil {
		gatewaytest.Unavailable(t, err) // skips, or fails under CI
	}
	fmt.Fprintf(os.Stderr, "soak: seed %d, %v (SOAK_SEED=%d SOAK_MINUTES=%g to replay)\n", cfg.seed, cfg.dur, cfg.seed, cfg.dur.Minutes())
	t.Logf("soak: seed %d, duration %v", cfg.seed, cfg.dur)
	sk := newSoak(t, cfg, node, gwSrv)
	sk.run()
}

type soakCfg struct {
	dur     time.Duration
	seed    int64
	maxWait time.Duration
}

func soakConfig(t *testing.T) soakCfg {
	cfg := soakCfg{dur: 60 * time.Second, seed: 1, maxWait: 6 * time.Second}
	if m := os.Getenv("SOAK_MINUTES"); m != "" {
		f, err := strconv.ParseFloat(m, 64)
		if err != nil || f <= 0 {
			t.Fatalf("SOAK_MINUTES=%q: want a positive number of minutes", m)
		}
		cfg.dur = time.Duration(f * float64(time.Minute))
		cfg.seed = time.Now().UnixNano() % 1_000_000_000
	}
	if s := os.Getenv("SOAK_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want an integer", s)
		}
		cfg.seed = n
	}
	return cfg
}

// The invariants the soak checks; each failure names one.
const (
	invBound     = "every call is answered within --max-wait + 5 s"
	invProtocol  = "no call fails with a protocol error unless a fault hit its connection or server"
	invResult    = "a call untouched by a fault gets the result its work asks for"
	invHistory   = "every run a client was told had ended is in its session's history, in order, with its output"
	invNotebook  = "each history reads back with get_history and validates as a notebook"
	invCross     = "no output of one session or user appears in another"
	invLeak      = "no kernel process, connection file or temp dir outlives its session or server"
	invResources = "the server's goroutines and RSS stay within bounds of the run's start"
)

type soak struct {
	t       *testing.T
	cfg     soakCfg
	node    string
	dir     string
	rng     *rand.Rand // the injector's
	servers []*soakServer
	gw      *gatewaytest.Server
	gwMu    sync.Mutex
	gwSrv   *soakServer // the server using the gateway
	taskSrv *soakServer // the task clients' stdio server
	hub     *hubSetup   // the hub leg's JupyterHub (soak_hub_test.go)
	hubSrv  *soakServer // its kernel-mcp, which the hub runs
	slots   []*slot
	workers []*soakWorker
	// taskClients speak MCP tasks (soak_tasks_test.go).
	taskClients []*taskClient
	tokens      map[string]string
	stop        atomic.Bool

	mu       sync.Mutex
	calls    map[string]int
	faults   map[string]int
	checks   map[string]int
	taskOut  map[string]int // what the task clients' calls became
	failures []string
	nfail    atomic.Int64
	slowest  time.Duration
	statsLog []string
}

func (s *soak) count(m map[string]int, k string) {
	s.mu.Lock()
	m[k]++
	s.mu.Unlock()
}

func (s *soak) check(inv string) { s.count(s.checks, inv) }

// fail records a broken invariant with the seed and the last calls of the
// sessions involved.
func (s *soak) fail(inv, detail string, ws ...*soakWorker) {
	var b strings.Builder
	fmt.Fprintf(&b, "SOAK FAILURE (seed %d): invariant %q broken: %s", s.cfg.seed, inv, detail)
	for _, w := range ws {
		if w == nil {
			continue
		}
		fmt.Fprintf(&b, "\n  last calls of %s (session %q on %s):", w.key, w.sid, w.srv.name)
		for _, c := range w.recent() {
			fmt.Fprintf(&b, "\n    %s", c)
		}
	}
	s.failed(b.String())
}

// failWith records a broken invariant with the calls given.
func (s *soak) failWith(inv, detail, header string, recent []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "SOAK FAILURE (seed %d): invariant %q broken: %s", s.cfg.seed, inv, detail)
	fmt.Fprintf(&b, "\n  %s", header)
	for _, c := range recent {
		fmt.Fprintf(&b, "\n    %s", c)
	}
	s.failed(b.String())
}

func (s *soak) failed(msg string) {
	s.mu.Lock()
	s.failures = append(s.failures, msg)
	s.mu.Unlock()
	s.nfail.Add(1)
	s.t.Error(msg)
}

func newSoak(t *testing.T, cfg soakCfg, node string, gw *gatewaytest.Server) *soak {
	dir := t.TempDir()
	s := &soak{t: t, cfg: cfg, node: node, dir: dir, rng: rand.New(rand.NewSource(cfg.seed)), gw: gw,
		calls: map[string]int{}, faults: map[string]int{}, checks: map[string]int{}, taskOut: map[string]int{},
		tokens: map[string]string{"alice": "soak-alice-token-0123456789abcdef", "bob": "soak-bob-token-0123456789abcdef"}}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+s.tokens["alice"]+"\nbob "+s.tokens["bob"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	graceArgs, _ := relGrace()
	common := append([]string{"--max-wait", strconv.Itoa(int(cfg.maxWait / time.Second))}, graceArgs...)
	mk := func(name string, http bool, args ...string) *soakServer {
		srv := &soakServer{name: name, http: http, stateDir: filepath.Join(dir, name, "state"), tmpDir: filepath.Join(dir, name, "tmp"), workDir: filepath.Join(dir, name, "work"),
			tag: fmt.Sprintf("soak%d-%s", os.Getpid(), name), log: &lockedBuffer{}, args: append(append([]string{}, common...), args...)}
		for _, d := range []string{srv.tmpDir, srv.workDir} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if http {
			l, err := freeTCPPort()
			if err != nil {
				t.Fatal(err)
			}
			srv.port = l
		}
		s.servers = append(s.servers, srv)
		return srv
	}
	users := mk("users", true, "--tokens-file", tokens, "--pool-size", "1")
	plain := mk("stdio", false, "--pool-size", "1")
	gwSrv := mk("gateway", false, "--gateway-url", gw.URL, "--gateway-token", gw.Token, "--pool-size", "0")
	sandbox := mk("sandbox", false, "--sandbox", "--pool-size", "0")
	// The SEP-2663 task clients' server: over stdio, raw JSON-RPC.
	tasksSrv := mk("tasks", false, "--pool-size", "0", "--task-wait", "2")
	tasksSrv.raw = true
	s.gwSrv = gwSrv
	s.taskSrv = tasksSrv
	t.Cleanup(func() {
		// Whatever happened, nothing of the soak's is left running.
		for _, srv := range s.servers {
			if p := srv.pid(); p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		for _, w := range s.slots {
			if c, _ := w.get(); c != nil {
				c.teardown()
			}
		}
		s.gwMu.Lock()
		s.gw.Stop()
		s.gwMu.Unlock()
		if t.Failed() {
			for _, srv := range s.servers {
				log := srv.log.String()
				if len(log) > 20000 {
					log = log[len(log)-20000:]
				}
				t.Logf("%s server log (tail):\n%s", srv.name, log)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		if err := srv.start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Connections: two users over HTTP (alice with a go-sdk and a
	// TypeScript client, bob with two go-sdk ones), and each stdio server's
	// own.
	aliceGo := &slot{name: "alice-go", user: "alice", srv: users}
	aliceTS := &slot{name: "alice-ts", user: "alice", ts: true, srv: users}
	bobGo1 := &slot{name: "bob-go1", user: "bob", srv: users}
	bobGo2 := &slot{name: "bob-go2", user: "bob", srv: users}
	plainSlot := &slot{name: "stdio", srv: plain}
	gwSlot := &slot{name: "gateway", srv: gwSrv}
	sbSlot := &slot{name: "sandbox", srv: sandbox}
	s.slots = []*slot{aliceGo, aliceTS, bobGo1, bobGo2, plainSlot, gwSlot, sbSlot}
	for _, sl := range s.slots {
		if err := s.connect(ctx, sl); err != nil {
			t.Fatal(err)
		}
	}
	s.addHubLeg(common)
	hubAlice, hubBob := s.slots[len(s.slots)-2], s.slots[len(s.slots)-1]
	// Sessions: alice and bob use the same session ids, and so does the
	// stdio server: a call that reached the wrong notebook shows another
	// key's markers.
	add := func(key, sid string, primary *slot, alt *slot, caps ...string) {
		w := &soakWorker{s: s, key: key, sid: sid, srv: primary.srv, primary: primary, alt: alt, rng: rand.New(rand.NewSource(cfg.seed + int64(len(s.workers)+1)*7919)), caps: map[string]bool{}}
		for _, c := range caps {
			w.caps[c] = true
		}
		w.init()
		s.workers = append(s.workers, w)
	}
	full := []string{"data", "notebook", "pid", "disconnect"}
	add("al1", "nb1", aliceGo, aliceTS, full...)
	add("al2", "nb2", aliceTS, aliceGo, full...)
	add("bo1", "nb1", bobGo1, bobGo2, full...)
	add("bo2", "nb2", bobGo2, bobGo1, full...)
	add("st1", "nb1", plainSlot, nil, "data", "notebook", "pid")
	add("st2", "nb2", plainSlot, nil, "data", "notebook", "pid")
	add("gw1", "gw", gwSlot, nil)
	// The hub leg: alice's and bob's sessions in their own servers.
	add("hb1", "nb1", hubAlice, nil)
	add("hb2", "nb1", hubBob, nil)
	for _, w := range s.workersOf(s.hubSrv) {
		w.files = filepath.Join(s.hub.dir, "home", w.primary.user)
	}
	add("sb1", "sb", sbSlot, nil, "data", "notebook", "pid")
	// Task clients: two of protocol 2026-07-28 (SEP-2663) on the tasks
	// server's stdio, one of 2025-11-25 over HTTP as alice.
	s.addTaskClient("tk1", "t1", protoSEP, tasksSrv, "")
	s.addTaskClient("tk2", "t2", protoSEP, tasksSrv, "")
	s.addTaskClient("tl1", "tl", protoLegacy, users, "alice")
	return s
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// connect (re)opens a slot's connection: over stdio it is the server's own.
func (s *soak) connect(ctx context.Context, sl *slot) error {
	var c soakConn
	if !sl.srv.http {
		sl.srv.mu.Lock()
		c = &goConn{cs: sl.srv.cs}
		sl.srv.mu.Unlock()
	} else if sl.ts {
		tc, err := dialTS(ctx, s.node, sl.srv.url(), s.tokens[sl.user])
		if err != nil {
			return fmt.Errorf("%s: %v", sl.name, err)
		}
		c = tc
	} else {
		gc, err := dialGoHTTP(ctx, sl.srv.url(), s.tokens[sl.user], sl.oauth)
		if err != nil {
			return fmt.Errorf("%s: %v", sl.name, err)
		}
		c = gc
	}
	sl.mu.Lock()
	sl.conn = c
	sl.gen.Add(1)
	sl.mu.Unlock()
	return nil
}

// reconnect replaces a slot's connection, closing (or dropping) the old.
func (s *soak) reconnect(sl *slot, drop bool) {
	sl.down.Store(true)
	defer sl.down.Store(false)
	sl.mu.Lock()
	old := sl.conn
	sl.gen.Add(1)
	sl.mu.Unlock()
	if old != nil && sl.srv.http {
		if drop {
			old.teardown()
		} else {
			old.close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := s.connect(ctx, sl)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			s.fail(invProtocol, fmt.Sprintf("reconnecting %s: %v", sl.name, err))
			return
		}
		time.Sleep(200 * time.Millisecond) // the server is coming back up: retry the dial
	}
}

func (s *soak) run() {
	t := s.t
	start := time.Now()
	deadline := start.Add(s.cfg.dur)
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(deadline)
		}()
	}
	for _, tc := range s.taskClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc.loop(deadline)
		}()
	}
	injDone := make(chan struct{})
	go func() {
		defer close(injDone)
		s.inject(deadline)
	}()
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		s.sampleStats(deadline)
	}()
	wg.Wait()
	<-injDone
	<-statsDone
	s.stop.Store(true)
	t.Logf("soak: load phase over after %v; final checks", time.Since(start).Round(time.Second))
	s.finalChecks()
	s.report(time.Since(start))
}

// inject waits a random 1.5–6 s between faults (0.8-2 s in a run of two
// minutes or less); the first ones go through
// every kind, so even the short run injects each.
func (s *soak) inject(deadline time.Time) {
	kinds := []string{"server_kill", "task_server_kill", "gateway_kill", "tcp_teardown", "hub_server_kill", "hub_server_stop",
		"kernel_sigkill", "kernel_os_exit", "sigint_ignored_timeout", "interrupt_storm", "client_disconnect", "frame_bomb"}
	const ownKinds = 6 // the kinds before are the injector's own; the rest a session's worker injects
	order := append([]string{}, kinds...)
	s.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// A warm-up: every session has run before the first fault. The short
	// run injects faults faster, so that it meets every kind.
	gap := func() time.Duration { return time.Duration(1500+s.rng.Intn(4500)) * time.Millisecond }
	if s.cfg.dur <= 2*time.Minute {
		gap = func() time.Duration { return time.Duration(800+s.rng.Intn(1200)) * time.Millisecond }
	}
	time.Sleep(5 * time.Second)
	for i := 0; time.Now().Before(deadline.Add(-5 * time.Second)); i++ {
		var kind string
		if i < len(order) {
			kind = order[i]
		} else {
			r := s.rng.Float64()
			switch {
			case r < 0.07:
				kind = "server_kill"
			case r < 0.10:
				kind = "task_server_kill"
			case r < 0.14:
				kind = "gateway_kill"
			case r < 0.23:
				kind = "tcp_teardown"
			case r < 0.27:
				kind = "hub_server_kill"
			case r < 0.30:
				kind = "hub_server_stop"
			default:
				kind = kinds[ownKinds+s.rng.Intn(len(kinds)-ownKinds)]
			}
		}
		begun := time.Now()
		s.injectOne(kind)
		s.t.Logf("soak: %s fault: %s (%v)", time.Now().Format("15:04:05.000"), kind, time.Since(begun).Round(time.Millisecond))
		time.Sleep(gap())
	}
}

func (s *soak) injectOne(kind string) {
	switch kind {
	case "server_kill":
		srv := s.servers[s.rng.Intn(2)] // the users' HTTP server or the stdio one
		s.restartServer(srv, true)
		s.count(s.faults, kind)
	case "task_server_kill":
		// SIGKILL of the task clients' server, once one of their tasks is
		// going (within 10 s), so that the kill meets a task.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !s.taskGoing(s.taskSrv) {
			time.Sleep(50 * time.Millisecond) // polling the clients' count of tasks going
		}
		s.restartServer(s.taskSrv, true)
		s.count(s.faults, kind)
	case "gateway_kill":
		s.gwMu.Lock()
		s.gwSrv.impaired.Store(true)
		s.gw.Kill()
		s.gw.Stop() // reaps the dead gateway's kernels
		for _, w := range s.workersOf(s.gwSrv) {
			w.epoch.Add(1)
		}
		var err error
		var ng *gatewaytest.Server
		for try := 0; try < 5; try++ {
			if ng, err = s.gw.Restart(context.Background()); err == nil {
				break
			}
		}
		if err != nil {
			s.fail(invProtocol, "restarting the gateway: "+err.Error())
		} else {
			s.gw = ng
		}
		// The session's kernel died with the gateway: the calls that meet
		// its death are the fault's too, until a run works again.
		for _, w := range s.workersOf(s.gwSrv) {
			w.epoch.Add(1)
			w.recoverGW.Store(true)
		}
		s.gwMu.Unlock()
		s.count(s.faults, kind)
	case "hub_server_kill", "hub_server_stop":
		s.hubFault(kind)
	case "tcp_teardown":
		var http []*slot
		for _, sl := range s.slots {
			if sl.srv.http {
				http = append(http, sl)
			}
		}
		sl := http[s.rng.Intn(len(http))]
		s.reconnect(sl, true)
		s.count(s.faults, kind)
	default:
		// A fault the session's own worker injects, in its flow of calls.
		var fit []*soakWorker
		for _, w := range s.workers {
			// A frame bomb behind a gateway (or a hub user's Jupyter
			// Server) would hit its own ZeroMQ client, not ours.
			if kind == "kernel_sigkill" && !w.caps["pid"] || kind == "client_disconnect" && !w.caps["disconnect"] || kind == "frame_bomb" && (w.srv == s.gwSrv || w.srv == s.hubSrv) {
				continue
			}
			fit = append(fit, w)
		}
		var tfit []*taskClient
		for _, tc := range s.taskClients {
			if tc.takes(kind) {
				tfit = append(tfit, tc)
			}
		}
		var req chan string
		if i := s.rng.Intn(len(fit) + len(tfit)); i < len(fit) {
			req = fit[i].faultReq
		} else {
			req = tfit[i-len(fit)].faultReq
		}
		select {
		case req <- kind:
		default: // that worker or task client has a fault pending already
		}
	}
}

// taskGoing reports whether a task client of srv has a task not yet over.
func (s *soak) taskGoing(srv *soakServer) bool {
	for _, tc := range s.taskClients {
		if tc.srv == srv && tc.live.Load() > 0 {
			return true
		}
	}
	return false
}

func (s *soak) workersOf(srv *soakServer) []*soakWorker {
	var ws []*soakWorker
	for _, w := range s.workers {
		if w.srv == srv {
			ws = append(ws, w)
		}
	}
	return ws
}

// restartServer SIGKILLs (or stops) a server, checks that its kernels went
// with it, starts it again on its state directory and reconnects its
// clients; its sessions' histories are then checked.
func (s *soak) restartServer(srv *soakServer, kill bool) {
	srv.restartMu.Lock()
	defer srv.restartMu.Unlock()
	ws := s.workersOf(srv)
	srv.down.Store(true)
	for _, w := range ws {
		w.epoch.Add(1)
	}
	var sls []*slot
	for _, sl := range s.slots {
		if sl.srv == srv {
			sls = append(sls, sl)
			sl.gen.Add(1)
		}
	}
	old := srv.genTag(srv.gen.Load())
	if kill {
		srv.kill()
	} else {
		srv.stop()
	}
	s.check(invLeak)
	if left := waitUntagged(old, 20*time.Second); len(left) > 0 {
		s.fail(invLeak, fmt.Sprintf("processes of %s (%s) still running 20 s after it was killed: %v", srv.name, old, describePids(left)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	defer srv.down.Store(false)
	if err := srv.start(ctx); err != nil {
		s.fail(invProtocol, "restarting "+srv.name+": "+err.Error())
		return
	}
	s.mu.Lock()
	srv.base = nil // a new process: its own baseline
	s.mu.Unlock()
	for _, sl := range sls {
		s.reconnect(sl, false)
	}
	for _, w := range ws {
		w.epoch.Add(1)
		w.needCheck.Store(true)
	}
}

func describePids(pids []int) string {
	var parts []string
	for _, p := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		parts = append(parts, fmt.Sprintf("%d %q", p, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return strings.Join(parts, "; ")
}

// sampleStats reads every server's goroutines and RSS every 10 s. Each
// generation's first sample after warm-up is its baseline.
func (s *soak) sampleStats(deadline time.Time) {
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Second)
		for _, srv := range s.servers {
			s.sampleOne(srv, false)
		}
	}
}

// The bounds, on goroutines less soakPerKernel for each kernel running:
// generous for load (calls in flight hold goroutines; an HTTP client that
// vanished keeps its MCP session, by design, until --client-idle-timeout),
// tight enough that a leak per call or per fault over thousands of them
// breaks them. RSS: a -race build's is several times a release build's.
const (
	soakGoroutineSlack = 300
	soakIdleSlack      = 80
	soakRSSSlackKB     = 400 << 10
)

func (s *soak) sampleOne(srv *soakServer, idle bool) {
	gen := srv.gen.Load()
	st, err := srv.stats()
	if err != nil {
		// A server killed by a fault while it was sampled is not a failure.
		if srv.gen.Load() == gen && !srv.down.Load() && !s.stop.Load() {
			s.fail(invResources, err.Error())
		}
		return
	}
	s.check(invResources)
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv.base == nil {
		b := st
		srv.base = &b
		s.statsLog = append(s.statsLog, fmt.Sprintf("%s gen %d baseline: %d goroutines with %d kernels, %d threads, RSS %d MB", srv.name, gen, st.Goroutines, st.Kernels, st.Threads, st.RSSKB>>10))
		return
	}
	srv.maxStats.Goroutines = max(srv.maxStats.Goroutines, st.Goroutines)
	srv.maxStats.RSSKB = max(srv.maxStats.RSSKB, st.RSSKB)
	srv.maxStats.Threads = max(srv.maxStats.Threads, st.Threads)
	b := srv.base
	limit := b.net() + soakGoroutineSlack
	if idle {
		limit = b.net() + soakIdleSlack
		s.statsLog = append(s.statsLog, fmt.Sprintf("%s gen %d idle at the end: %d goroutines with %d kernels (net %d; baseline net %d, bound %d), %d threads, RSS %d MB (baseline %d MB, bound %d MB); peak under load: %d goroutines, RSS %d MB",
			srv.name, gen, st.Goroutines, st.Kernels, st.net(), b.net(), limit, st.Threads, st.RSSKB>>10, b.RSSKB>>10, (2*b.RSSKB+soakRSSSlackKB)>>10, srv.maxStats.Goroutines, srv.maxStats.RSSKB>>10))
	}
	if st.net() > limit || st.RSSKB > 2*b.RSSKB+soakRSSSlackKB {
		s.mu.Unlock()
		s.fail(invResources, fmt.Sprintf("%s gen %d: %d goroutines with %d kernels (net %d; baseline net %d, bound %d), RSS %d MB (baseline %d MB, bound %d MB)",
			srv.name, gen, st.Goroutines, st.Kernels, st.net(), b.net(), limit, st.RSSKB>>10, b.RSSKB>>10, (2*b.RSSKB+soakRSSSlackKB)>>10))
		s.mu.Lock()
	}
}

// finalChecks restarts the servers that keep state once more, checks
// every session's history and notebook, the servers' idle resources, then
// stops everything and looks for leftovers.
func (s *soak) finalChecks() {
	start := time.Now()
	// Idle: once every session's run has ended, the goroutines are back
	// near the baseline of the server's generation (for the gateway and
	// sandbox servers, never restarted, the start of the soak).
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.settle()
		}()
	}
	for _, tc := range s.taskClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc.settle()
		}()
	}
	wg.Wait()
	for _, srv := range s.servers {
		s.mu.Lock()
		base := srv.base
		s.mu.Unlock()
		if base == nil {
			s.statsLog = append(s.statsLog, srv.name+": no idle check, its last generation began less than 10 s before the end")
			continue
		}
		s.sampleOne(srv, true)
	}
	// The servers that keep state, the task clients' too: what they were
	// told must survive a SIGKILL.
	for _, srv := range []*soakServer{s.servers[0], s.servers[1], s.taskSrv} {
		s.restartServer(srv, true)
	}
	s.t.Logf("soak: final restarts done in %v", time.Since(start).Round(time.Millisecond))
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.settle()
			w.checkHistory("final")
			w.checkNotebook()
		}()
	}
	for _, tc := range s.taskClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc.finalTaskChecks()
		}()
	}
	wg.Wait()
	s.t.Logf("soak: final history checks done at %v", time.Since(start).Round(time.Millisecond))
	// Stop every server as a user would; nothing of theirs is left.
	for _, srv := range s.servers {
		for _, sl := range s.slots {
			if sl.srv == srv && srv.http {
				if c, _ := sl.get(); c != nil {
					c.close()
				}
			}
		}
		srv.stop()
	}
	s.t.Logf("soak: servers stopped at %v", time.Since(start).Round(time.Millisecond))
	s.check(invLeak)
	for _, srv := range s.servers {
		for g := int64(1); g <= srv.gen.Load(); g++ {
			if left := waitUntagged(srv.genTag(g), 20*time.Second); len(left) > 0 {
				s.fail(invLeak, fmt.Sprintf("processes of %s generation %d outlived it: %s", srv.name, g, describePids(left)))
			}
		}
		// Under --sandbox the kernels' runtime dirs go in a base dir of
		// their own, kernel-mcp-sandbox-<uid>, which stays: it must be empty.
		var left []string
		filepath.WalkDir(srv.tmpDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == srv.tmpDir {
				return nil
			}
			if d.IsDir() && strings.HasPrefix(d.Name(), "kernel-mcp-sandbox-") && filepath.Dir(p) == srv.tmpDir {
				return nil
			}
			left = append(left, strings.TrimPrefix(p, srv.tmpDir+"/"))
			return nil
		})
		if len(left) > 0 {
			s.fail(invLeak, fmt.Sprintf("%s left files in its temp dir %s: %v", srv.name, srv.tmpDir, left))
		}
	}
	s.hubLeaks()
	s.gwMu.Lock()
	if left := gatewayKernels(s.t, s.gw); len(left) != 0 {
		s.fail(invLeak, fmt.Sprintf("kernels left on the gateway after its server stopped: %v", left))
	}
	s.gwMu.Unlock()
}

func (s *soak) report(took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	total := 0
	for _, n := range s.calls {
		total += n
	}
	nf := 0
	for _, n := range s.faults {
		nf += n
	}
	nc := 0
	for _, n := range s.checks {
		nc += n
	}
	fmt.Fprintf(&b, "soak report: seed %d, %v (load %v), %d sessions on %d servers (the hub's among them), %d connections, %d task clients\n", s.cfg.seed, took.Round(time.Second), s.cfg.dur, len(s.workers), len(s.servers)+1, len(s.slots), len(s.taskClients))
	fmt.Fprintf(&b, "calls: %d (slowest %v; bound %v)\n", total, s.slowest.Round(time.Millisecond), s.cfg.maxWait+5*time.Second)
	for _, k := range sortedKeys(s.calls) {
		fmt.Fprintf(&b, "  %-22s %d\n", k, s.calls[k])
	}
	fmt.Fprintf(&b, "faults injected: %d\n", nf)
	for _, k := range sortedKeys(s.faults) {
		fmt.Fprintf(&b, "  %-22s %d\n", k, s.faults[k])
	}
	fmt.Fprintf(&b, "task clients' run_code calls (and how their tasks ended, by the result's status):\n")
	for _, k := range sortedKeys(s.taskOut) {
		fmt.Fprintf(&b, "  %-40s %d\n", k, s.taskOut[k])
	}
	fmt.Fprintf(&b, "invariant checks: %d\n", nc)
	for _, k := range sortedKeys(s.checks) {
		fmt.Fprintf(&b, "  %6d  %s\n", s.checks[k], k)
	}
	for _, l := range s.statsLog {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "failures: %d\n", len(s.failures))
	fmt.Fprint(os.Stderr, b.String())
	s.t.Log(b.String())
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		os.WriteFile(p, []byte(b.String()), 0o644)
	}
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var markerRe = regexp.MustCompile(`SOAK-([a-z]+[0-9]+)-([0-9]+)`)

// notebookMarkers reads a saved notebook's outputs and validates it with
// nbformat.
func notebookMarkers(path string) (string, error) {
	script := `import json, sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
print(json.dumps(nb.cells and [c.get("outputs", []) for c in nb.cells]))`
	out, err := exec.Command("python3", "-c", script, path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nbformat: %v: %s", err, out)
	}
	return string(out), nil
}

// jsonString is a helper for messages.
func jsonString(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		b = append(b[:300], "..."...)
	}
	return string(b)
}
