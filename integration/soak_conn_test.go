//go:build unix

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The soak's clients and servers: a connection is a go-sdk client (stdio
// or streamable HTTP) or the official TypeScript client in a node process,
// and a server is a kernel-mcp process that the soak can SIGKILL and start
// again on the same state directory.

// soakRes is what the soak reads of a tool result, whichever client got it.
type soakRes struct {
	IsError    bool
	Text       string
	Structured map[string]any
	Images     int
}

func (r soakRes) str(key string) string {
	s, _ := r.Structured[key].(string)
	return s
}

// going reports a run that has not ended.
func (r soakRes) going() bool {
	switch r.str("status") {
	case "running", "queued", "input_requested":
		return true
	}
	return false
}

type soakConn interface {
	call(ctx context.Context, tool string, args map[string]any) (soakRes, error)
	// teardown drops the connection without a goodbye: TCP closed under the
	// client, or the client process killed.
	teardown()
	close()
}

func fromMCP(res *mcp.CallToolResult) soakRes {
	r := soakRes{IsError: res.IsError, Text: text(res)}
	for _, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			r.Images++
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &r.Structured)
	}
	return r
}

// goConn is a go-sdk client session. Over HTTP it dials through a dialer
// that remembers its TCP connections, so teardown can close them.
type goConn struct {
	cs    *mcp.ClientSession
	mu    sync.Mutex
	conns []net.Conn
}

func (g *goConn) call(ctx context.Context, tool string, args map[string]any) (soakRes, error) {
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return soakRes{}, err
	}
	return fromMCP(res), nil
}

func (g *goConn) teardown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

func (g *goConn) close() {
	done := make(chan struct{})
	go func() { g.cs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		g.teardown()
		<-done
	}
}

// dialGoHTTP connects a go-sdk client over streamable HTTP with token as
// its bearer token, or, with oh set, signed in with that OAuth client.
func dialGoHTTP(ctx context.Context, url, token string, oh auth.OAuthHandler) (*goConn, error) {
	g := &goConn{}
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			g.mu.Lock()
			g.conns = append(g.conns, c)
			g.mu.Unlock()
		}
		return c, err
	}}
	client := mcp.NewClient(&mcp.Implementation{Name: "soak-go", Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token, next: tr}}}
	if oh != nil {
		t.HTTPClient, t.OAuthHandler = &http.Client{Transport: tr}, oh
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	g.cs = cs
	return g, nil
}

// tsConn is the TypeScript client of testdata/soakclient.mjs.
type tsConn struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	next    int
	pending map[int]chan tsReply
	dead    chan struct{}
	stderr  *lockedBuffer
}

type tsReply struct {
	Ready  bool            `json:"ready"`
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

var errConnGone = errors.New("the client connection is gone")

func dialTS(ctx context.Context, node, url, token string) (*tsConn, error) {
	script, err := filepath.Abs("testdata/soakclient.mjs")
	if err != nil {
		return nil, err
	}
	c := &tsConn{pending: map[int]chan tsReply{}, dead: make(chan struct{}), stderr: &lockedBuffer{}}
	c.cmd = exec.Command(node, script, url, token)
	c.cmd.Stderr = c.stderr
	c.stdin, _ = c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r tsReply
			if json.Unmarshal(sc.Bytes(), &r) != nil {
				continue
			}
			if r.Ready {
				close(ready)
				continue
			}
			c.mu.Lock()
			ch := c.pending[r.ID]
			delete(c.pending, r.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
		c.cmd.Wait()
		close(c.dead)
	}()
	select {
	case <-ready:
		return c, nil
	case <-c.dead:
		return nil, fmt.Errorf("TypeScript client exited: %s", c.stderr.String())
	case <-ctx.Done():
		c.teardown()
		return nil, fmt.Errorf("TypeScript client did not connect: %v: %s", ctx.Err(), c.stderr.String())
	}
}

func (c *tsConn) call(ctx context.Context, tool string, args map[string]any) (soakRes, error) {
	ch := make(chan tsReply, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	line, _ := json.Marshal(map[string]any{"id": id, "tool": tool, "args": args})
	_, werr := c.stdin.Write(append(line, '\n'))
	c.mu.Unlock()
	if werr != nil {
		return soakRes{}, fmt.Errorf("%w: %v", errConnGone, werr)
	}
	select {
	case r := <-ch:
		if r.Error != "" {
			return soakRes{}, errors.New(r.Error)
		}
		return parseToolResult(r.Result)
	case <-c.dead:
		return soakRes{}, fmt.Errorf("%w (%v); its stderr: %s", errConnGone, c.cmd.ProcessState, lastLines(c.stderr.String(), 15))
	case <-ctx.Done():
		return soakRes{}, ctx.Err()
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *tsConn) teardown() {
	c.cmd.Process.Kill()
	<-c.dead
}

func (c *tsConn) close() {
	c.stdin.Close()
	select {
	case <-c.dead:
	case <-time.After(10 * time.Second):
		c.teardown()
	}
}

// waitUp waits while the server is being restarted.
func (s *soakServer) waitUp() {
	for s.down.Load() {
		time.Sleep(50 * time.Millisecond) // polling a flag the injector clears
	}
}

// slot holds a connection that faults replace; gen counts replacements, so
// a call that failed while its connection was replaced is known to have
// met a fault.
type slot struct {
	name string
	user string // token name, "" for stdio
	ts   bool
	// oauth, when set, signs the connection in (the hub leg's people)
	// instead of the user's token.
	oauth auth.OAuthHandler
	temp  bool        // a connection the soak drops mid-call: its client decides how long that takes
	down  atomic.Bool // while a fault replaces the connection: calls wait
	srv   *soakServer
	mu    sync.Mutex
	conn  soakConn
	gen   atomic.Int64
}

func (s *slot) get() (soakConn, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn, s.gen.Load()
}

// soakServer is one kernel-mcp process of the soak, restartable on the
// same state directory (and, over HTTP, the same port).
type soakServer struct {
	name string
	args []string
	http bool
	// raw is a stdio server whose stdin and stdout are a raw JSON-RPC
	// connection (rpcConn, the task clients'), not a go-sdk client's.
	raw      bool
	port     int
	stateDir string
	tmpDir   string
	workDir  string
	tag      string // in every process's environment: KERNEL_MCP_SOAK_TAG=tag-gen
	log      *lockedBuffer

	mu   sync.Mutex
	gen  atomic.Int64
	down atomic.Bool // while a fault restarts it: calls wait
	// restartMu makes one restart at a time: the injector restarts servers,
	// and so does a task client whose fault is its client going away.
	restartMu sync.Mutex
	// impaired is set while something the server depends on is down (its
	// gateway): calls go on, and their failures are the fault's.
	impaired atomic.Bool
	cmd      *exec.Cmd
	cs       *mcp.ClientSession // stdio
	rc       *rpcConn           // raw stdio
	done     chan struct{}      // HTTP and raw: closed when the process has exited

	base     *serverStats
	maxStats serverStats
}

type serverStats struct {
	Goroutines int
	RSSKB      int64
	Threads    int
	Kernels    int // ipykernel processes of the generation
}

// soakPerKernel is about what one kernel costs the server in goroutines
// (its sockets' readers, zmq4's reapers, the process watchers; 19 counted
// in a goroutine profile): bounds allow for it, so that a restart that
// started the sessions' kernels after the baseline is not a leak.
const soakPerKernel = 25

// net is the goroutine count less what the kernels account for.
func (st serverStats) net() int { return st.Goroutines - soakPerKernel*st.Kernels }

func (s *soakServer) genTag(gen int64) string { return fmt.Sprintf("%s-%d", s.tag, gen) }

func (s *soakServer) url() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.port) }

// start launches a new generation of the server.
func (s *soakServer) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gen.Add(1)
	args := append([]string{"--state-dir", s.stateDir}, s.args...)
	if s.http {
		args = append(args, "--transport", "streamable-http", "--port", strconv.Itoa(s.port))
	}
	cmd := exec.Command(binary, args...)
	// Sessions work (and exports land) in a folder of the soak's.
	cmd.Dir = s.workDir
	cmd.Env = append(os.Environ(), "TMPDIR="+s.tmpDir, "KERNEL_MCP_STATS_SIGNAL=1", "KERNEL_MCP_SOAK_TAG="+s.genTag(gen))
	fmt.Fprintf(s.log, "=== %s generation %d\n", s.name, gen)
	s.cmd = cmd
	if s.raw {
		return s.startRaw(ctx, gen)
	}
	if !s.http {
		cmd.Stderr = s.log
		client := mcp.NewClient(&mcp.Implementation{Name: "soak-stdio", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
		if err != nil {
			return fmt.Errorf("%s: connect: %v", s.name, err)
		}
		s.cs = cs
		return nil
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	listening := make(chan struct{})
	done := make(chan struct{})
	s.done = done
	go func() {
		re := regexp.MustCompile(`serving streamable-http at`)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			fmt.Fprintln(s.log, sc.Text())
			if !once && re.MatchString(sc.Text()) {
				once = true
				close(listening)
			}
		}
		cmd.Wait()
		close(done)
	}()
	select {
	case <-listening:
		return nil
	case <-done:
		return fmt.Errorf("%s exited at start", s.name)
	case <-ctx.Done():
		return fmt.Errorf("%s did not listen: %v", s.name, ctx.Err())
	}
}

func (s *soakServer) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// kill SIGKILLs the running generation and waits for it to exit.
func (s *soakServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Kill()
	if s.http || s.raw {
		<-s.done
		return
	}
	s.cs.Close() // the process is gone: this only reaps it
}

// stop ends the running generation as a user would: closing stdin, or
// SIGTERM over HTTP.
func (s *soakServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw {
		s.rc.in.Close()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		return
	}
	if s.http {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		return
	}
	s.cs.Close()
}

var statsLine = regexp.MustCompile(`msg=stats goroutines=(\d+)`)

// stats asks the server for its goroutine count (SIGUSR1, with
// KERNEL_MCP_STATS_SIGNAL=1) and reads its RSS and threads from /proc.
func (s *soakServer) stats() (serverStats, error) {
	pid := s.pid()
	var st serverStats
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			st.RSSKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			st.Threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	for _, p := range tagged(s.genTag(s.gen.Load())) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && strings.Contains(string(b), "ipykernel") && !strings.Contains(string(b), "bwrap") {
			st.Kernels++
		}
	}
	seen := len(statsLine.FindAllString(s.log.String(), -1))
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return st, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		m := statsLine.FindAllStringSubmatch(s.log.String(), -1)
		if len(m) > seen {
			st.Goroutines, _ = strconv.Atoi(m[len(m)-1][1])
			return st, nil
		}
		time.Sleep(20 * time.Millisecond) // polling the log: the line is the event
	}
	return st, fmt.Errorf("%s wrote no stats line within 10 s of SIGUSR1", s.name)
}

// tagged lists the processes whose environment carries tag (kernels,
// bwrap and their children inherit the server's).
func tagged(tag string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	want := []byte("KERNEL_MCP_SOAK_TAG=" + tag + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || isZombie(pid) {
			continue
		}
		if strings.Contains(string(b)+"\x00", string(want)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitUntagged waits up to d for every process tagged tag to be gone and
// returns those left.
func waitUntagged(tag string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := tagged(tag)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond) // polling /proc: there is no event to wait on
	}
}
