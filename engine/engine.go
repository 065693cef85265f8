// Package engine owns kernel-mcp's sessions: their registry, the kernel each
// runs (local, pooled, on a gateway, or attached), the per-session queue
// that runs one thing at a time, runs with ids that outlive the call that
// started them, the history each session keeps, the confinement of the
// paths tools read and write, and the limits on kernels. It publishes what
// happens as an ordered stream of events (events.go).
//
// It knows nothing of MCP: its results are domain values (a block's
// outputs, status, errors and timings), and turning them into MCP content
// is the adapter's job (package mcpserver).
//
//	e, err := engine.New(engine.Config{Python: "python3"})
//	if err != nil { ... }
//	defer e.Close()
//	ss, err := e.LookupOrCreate("default")
package engine

import (
	"context"
	"errors"
	"github.com/kernel-mcp/kernel-mcp/chartimage"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Config is the engine's configuration. The zero value is usable: python3
// from PATH (or whatever kernelspec resolution finds), 20,000 characters
// of output per result.
type Config struct {
	// Python is the default interpreter for new sessions (flag --python,
	// env PYTHON_MCP_INTERPRETER). Empty: resolved as docs/configuration.md says (Which Python runs your code).
	Python string
	// Kernel is a default kernelspec name (flag --kernel); wins over Python.
	Kernel string
	// MaxWait is the longest a caller waits for its turn behind a run
	// (WaitTurn). Default 45 s.
	MaxWait time.Duration
	// OutputLimit is the number of characters of output in one result;
	// longer output is cut in the middle. Default 20,000.
	OutputLimit int
	// InterruptGrace is how long a timed-out execution waits for the
	// interrupted kernel before restarting it. Default 5 s.
	InterruptGrace time.Duration
	// StartTimeout bounds a kernel's start-up. Default 60 s.
	StartTimeout time.Duration
	// MemoryLimit, when > 0, caps each kernel's address space (RLIMIT_AS)
	// at that many bytes. Linux only: elsewhere kernels fail to start.
	MemoryLimit int64
	// MaxMessageSize is the largest message a kernel may send, in bytes
	// (kernel.Options.MaxMessageSize); default kernel.DefaultMaxMessageSize.
	// A kernel that sends a larger one is stopped: its session is told,
	// its run ends as interrupted and is recorded, nothing else is touched.
	MaxMessageSize int64
	// MaxSessions, when > 0, is the most sessions that may have a running
	// kernel at once; starting one more kernel fails with an error naming
	// them.
	MaxSessions int
	// IdleTimeout, when > 0, shuts down a session's kernel after it ran
	// nothing for that long. The session and its history stay; the next run
	// starts a fresh kernel.
	IdleTimeout time.Duration
	// PoolSize is how many started, idle kernels are kept ready for each
	// kind of kernel sessions use (pool.go). 0 keeps none.
	PoolSize int
	// StateDir is where histories are kept (in StateDir/sessions, one
	// JSON-lines file per session); empty keeps them in memory only.
	StateDir string
	// WorkDir, an existing directory, is the working directory of
	// sessions created without a cwd, and what a relative cwd is taken
	// against (flag --workdir). Empty: the server's own working
	// directory, or under the sandbox StateDir/work. Under the sandbox it
	// is the work directory the kernels may write in.
	WorkDir string
	// GatewayURL, when set, runs every session's kernel on that Jupyter
	// Server, Kernel Gateway or Enterprise Gateway instead of as a local
	// process; GatewayToken is its token. Python and MemoryLimit must then
	// be empty.
	GatewayURL   string
	GatewayToken string
	// UserServer, when set, is the one Jupyter server every session's
	// kernel runs on, and one that may have to be started first: a
	// JupyterHub user's single-user server (userserver.go). GatewayURL is
	// then its URL and GatewayToken unused; no warm pool is kept.
	UserServer UserServer
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Sandbox, when set, runs every kernel under bubblewrap (Linux only)
	// and confines the paths the tools read and write: see confine.go.
	// Sessions without a cwd then work in WorkDir, else StateDir/work.
	Sandbox *kernel.SandboxOptions
	// MultiUser says this engine is one user's among several in one
	// process: Create then refuses a connection file, whose path could
	// name another user's kernel or files.
	MultiUser bool
	// ChartBrowser is the Chrome, Chromium or Edge that draws charts and
	// SVG as PNG images for the model (flag --browser); "" finds one on
	// the machine, NoChartBrowser turns chart images off. ChartTimeout
	// bounds one image (default 20 s).
	ChartBrowser string
	ChartTimeout time.Duration
	// SharedLimit, when set, bounds the running kernels of every engine
	// that shares it (one per user): MaxSessions is then each engine's own
	// limit. See NewKernelLimit.
	SharedLimit *KernelLimit
}

func (c *Config) setDefaults() {
	if c.MaxWait <= 0 {
		c.MaxWait = 45 * time.Second
	}
	if c.OutputLimit <= 0 {
		c.OutputLimit = 20000
	}
	if c.InterruptGrace <= 0 {
		c.InterruptGrace = 5 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Engine is a registry of sessions and what runs in them. Close shuts every
// kernel down.
type Engine struct {
	cfg    Config
	pool   *pool
	runIDs *runIDs // run numbers reserved in the state folder (runids.go)
	events *Hub
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	// limitMu serializes the MaxSessions check with marking the session
	// as starting, so two starts cannot both take the last place. It is
	// Config.SharedLimit's when engines share one.
	limitMu *sync.Mutex
	// idleStops counts idle-timer callbacks at work; Close waits for them.
	idleStops sync.WaitGroup
	// runs counts runs not yet finished; Close waits for them to record.
	runs sync.WaitGroup

	// workDir is the sessions' default working directory under the
	// sandbox (Config.Sandbox), symlinks resolved; tempWorkDir says Close
	// removes it.
	workDir     string
	tempWorkDir bool
	// allowedPythons are the interpreters a session may name under the
	// sandbox, fixed at start (interpreters.go).
	allowedPythons []string
	// charts draws charts as images for the model (chartimages.go); nil
	// when they are turned off.
	charts *chartimage.Renderer

	mu       sync.Mutex
	sessions map[string]*Session
	// unrestorable are the sessions whose history file restore could not
	// read at all: the file is left as it is, and the id refused, so that
	// no new session truncates it.
	unrestorable map[string]error
	closed       bool
}

// New builds the engine and restores the sessions kept in Config.StateDir.
// It starts no session kernel: each starts with its first use (the warm
// pool starts filling at once).
func New(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	cfg.useUserServer()
	if err := cfg.checkGatewayConfig(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Engine{cfg: cfg, sessions: make(map[string]*Session), ctx: ctx, cancel: cancel, events: NewHub()}
	s.limitMu = new(sync.Mutex)
	if cfg.SharedLimit != nil {
		s.limitMu = cfg.SharedLimit.join(s)
	}
	if err := s.initSandbox(); err != nil {
		cancel()
		return nil, err
	}
	s.initAllowedPythons()
	s.charts = s.newChartRenderer()
	s.runIDs = loadRunIDs(cfg.StateDir)
	if err := s.restore(); err != nil {
		cancel()
		return nil, err
	}
	s.pool = newPool(s, cfg.PoolSize)
	s.pool.warm(Choice{})
	return s, nil
}

// Config is the engine's configuration, defaults filled in.
func (s *Engine) Config() Config { return s.cfg }

// Events is the engine's event stream.
func (s *Engine) Events() *Hub { return s.events }

// Context ends when the engine closes.
func (s *Engine) Context() context.Context { return s.ctx }

// Close shuts down every session's kernel, in parallel, and waits for them
// and for the idle timers. Calls in flight fail; histories are kept. The
// event stream ends last, after the events of the shutdown.
func (s *Engine) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sessions := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	s.cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, ss := range sessions {
		wg.Go(func() { errs[i] = ss.StopKernel() })
	}
	wg.Wait()
	// Runs cut short by the kernels' shutdown record what they printed.
	s.runs.Wait()
	s.settleRunIDs()
	s.closeStores(sessions)
	s.pool.close()
	s.idleStops.Wait()
	if s.charts != nil {
		s.charts.Close()
	}
	if s.tempWorkDir {
		os.RemoveAll(s.workDir)
	}
	s.events.Close()
	return errors.Join(errs...)
}

// Sessions are the registered sessions, by id.
func (s *Engine) Sessions() []*Session {
	s.mu.Lock()
	all := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b *Session) int { return strings.Compare(a.id, b.id) })
	return all
}

// Unrestorable are the sessions whose history file could not be read at
// start-up, with why: their files are left as they are and their ids
// refused.
func (s *Engine) Unrestorable() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.unrestorable))
	for id, err := range s.unrestorable {
		out[id] = err
	}
	return out
}

// Pool describes the warm kernels kept ready for new sessions.
func (s *Engine) Pool() PoolSummary { return s.pool.summary() }

// errShuttingDown is every call's answer once Close has begun.
var errShuttingDown = errors.New("server is shutting down")
