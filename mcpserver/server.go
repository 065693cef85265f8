// Package mcpserver exposes Jupyter kernel sessions as MCP tools and
// resources: run_code and its siblings, with one kernel per session and the
// session's history beside it.
//
//	srv, err := mcpserver.New(mcpserver.Config{Python: "python3"})
//	if err != nil { ... }
//	defer srv.Close()
//	err = srv.MCP().Run(ctx, srv.OrderedTransport(&mcp.StdioTransport{}))
//
// It knows nothing of flags or HTTP listeners; cmd/kernel-mcp does.
package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/tasks"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is the server's configuration. The zero value is usable: python3 from
// PATH (or whatever kernelspec resolution finds), no timeout, 20,000
// characters of output per result.
type Config struct {
	// Python is the default interpreter for new sessions (flag --python,
	// env PYTHON_MCP_INTERPRETER). Empty: resolved as docs/configuration.md says (Which Python runs your code).
	Python string
	// Kernel is a default kernelspec name (flag --kernel); wins over Python.
	Kernel string
	// Timeout is the default execution timeout; 0 means none.
	Timeout time.Duration
	// MaxWait is the longest a call holds its client: a run not done by
	// then is handed off (wait_run picks it up), and a call still waiting
	// for its turn behind a run gives up with an error saying so.
	// Default 45 s, under the 60 s the official TypeScript client waits.
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
	// ChartBrowser is engine.Config.ChartBrowser: the browser that draws
	// charts as images ("" finds one, "none" draws none).
	ChartBrowser string
	ChartTimeout time.Duration
	// MaxMessageSize is the largest message a kernel may send (see
	// engine.Config.MaxMessageSize); 0 means the default.
	MaxMessageSize int64
	// MaxSessions, when > 0, is the most sessions that may have a running
	// kernel at once; starting one more kernel fails with an error naming
	// them.
	MaxSessions int
	// IdleTimeout, when > 0, shuts down a session's kernel after it ran
	// nothing for that long. The session and its history stay; the next run
	// starts a fresh kernel.
	IdleTimeout time.Duration
	// PoolSize is how many started, idle kernels the server keeps ready
	// for each kind of kernel sessions use, so that a new session or a
	// reset takes milliseconds instead of a cold start. 0 keeps none (the
	// zero value); the kernel-mcp command defaults to 1.
	PoolSize int
	// MaxInlineImage is the most bytes of base64 an image may have inline
	// in a result; a larger one is downscaled for the inline copy and kept
	// whole as a session://{id}/outputs/{n} resource, linked from the
	// result. Default 1 MiB.
	MaxInlineImage int
	// ImageLinkOnly puts no image inline: results link to the resource.
	ImageLinkOnly bool
	// Tools lists the tools offered (see ToolProfile); nil offers all.
	Tools []string
	// StateDir is where histories are kept (in StateDir/sessions, one
	// JSON-lines file per session); empty keeps them in memory only.
	StateDir string
	// WorkDir is the working directory of sessions created without a
	// cwd (flag --workdir); see engine.Config.WorkDir.
	WorkDir string
	// GatewayURL, when set, runs every session's kernel on that Jupyter
	// Server, Kernel Gateway or Enterprise Gateway (flag --gateway-url)
	// instead of as a local process; GatewayToken is its token. Python
	// and MemoryLimit must then be empty.
	GatewayURL   string
	GatewayToken string
	// UserServer is engine.Config.UserServer: a server started on demand
	// (a JupyterHub user's), whose URL GatewayURL then is.
	UserServer engine.UserServer
	// Version is reported to clients as the implementation version.
	Version string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Sandbox, when set, runs every kernel under bubblewrap (Linux only)
	// and confines the paths the tools read and write: see engine/confine.go.
	// Sessions without a cwd then work in StateDir/work.
	Sandbox *kernel.SandboxOptions
	// MultiUser says this server is one user's among several in one
	// process (--tokens-file): create_session then refuses
	// connection_file, whose path could name another user's kernel or
	// files.
	MultiUser bool
	// SharedLimit, when set, bounds the running kernels of every server
	// that shares it (one server per user): MaxSessions is then each
	// server's own limit. See engine.NewKernelLimit.
	SharedLimit *engine.KernelLimit
	// UIURL is the web view's address with its token (--ui), which
	// list_sessions and session_status give; "" when there is none.
	UIURL string
	// TaskWait is how long a call of a client that takes tasks
	// (SEP-2663) waits for its run before it becomes a task (--task-wait).
	// Default 3 s: a first call's kernel start (about 1 s here) and an
	// import of pandas fit in it (docs/performance.md).
	TaskWait time.Duration
	// TaskTTL is how long a task is kept after it was created, or after
	// its run ended if that is later (--task-ttl). Default 24 h.
	TaskTTL time.Duration
	// taskClock is the tasks' clock; nil is time.Now (tests set it).
	taskClock func() time.Time
}

func (c *Config) setDefaults() {
	if c.MaxWait <= 0 {
		c.MaxWait = 45 * time.Second
	}
	if c.OutputLimit <= 0 {
		c.OutputLimit = 20000
	}
	if c.MaxInlineImage <= 0 {
		c.MaxInlineImage = 1 << 20
	}
	if c.InterruptGrace <= 0 {
		c.InterruptGrace = 5 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.TaskWait <= 0 {
		c.TaskWait = 3 * time.Second
	}
	if c.TaskTTL <= 0 {
		c.TaskTTL = 24 * time.Hour
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Server is the kernel-mcp MCP server: the MCP tools and resources over an
// engine's sessions. Close shuts every kernel down.
type Server struct {
	cfg Config
	eng *engine.Engine
	// results renders runs as cfg says (OutputLimit, MaxInlineImage, ImageLinkOnly).
	results toolresult.Renderer
	mcp     *mcp.Server
	turns   *engine.Turnstile
	// ticketKey is this server's secret _meta key for ordering tickets.
	ticketKey string
	// subscriptions counts resource subscriptions, across all clients.
	subscriptions atomic.Int64
	// events follows the engine's event stream for resources and their
	// notifications (resources.go); eventsDone is closed when it ends.
	events     *engine.Subscription
	eventsDone chan struct{}
	// progress counts the goroutines sending progress notifications;
	// Close waits for them, and none starts once closing is set.
	progressMu sync.Mutex
	closing    bool
	progress   sync.WaitGroup
	// followed is the Seq of the last event followEvents has handled;
	// followedMu guards it, and followedCh is closed and replaced when it
	// moves (see awaitFollower).
	followedMu sync.Mutex
	followed   uint64
	followedCh chan struct{}
	// listeners are the calls waiting on each run (progress.go).
	listenMu  sync.Mutex
	listeners map[*engine.Run][]*attachment
	// tasks are the calls that became MCP tasks (tasks.go); taskKey and
	// taskParamKey are secret _meta keys, as ticketKey is: the first marks
	// a handler's result as a task, the second carries a 2025-11-25
	// call's params.task to its handler.
	tasks        *tasks.Manager
	taskKey      string
	taskParamKey string
	noticeMu     sync.Mutex
	notices      taskNotices
}

// New builds the server and registers its tools. It starts no kernel: each
// session's kernel starts with its first use.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	eng, err := engine.New(cfg.engineConfig())
	if err != nil {
		return nil, err
	}
	taskDir := ""
	if cfg.StateDir != "" {
		taskDir = filepath.Join(cfg.StateDir, "tasks")
	}
	st, err := tasks.Open(taskDir, cfg.TaskTTL, cfg.taskClock)
	if err != nil {
		eng.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, eng: eng, results: toolresult.Renderer{Limit: cfg.OutputLimit, MaxInlineImage: cfg.MaxInlineImage, ImageLinkOnly: cfg.ImageLinkOnly}, turns: engine.NewTurnstile(), ticketKey: metaTicketPrefix + uuid.NewString(),
		listeners: map[*engine.Run][]*attachment{}, taskKey: metaTaskPrefix + uuid.NewString(),
		taskParamKey: metaTaskParamPrefix + uuid.NewString(),
		notices:      taskNotices{conns: map[string]*orderedConn{}, to: map[string]string{}, told: map[string]tasks.Status{}}}
	s.tasks = tasks.NewManager(st, eng, taskResult, s.notifyTask)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "kernel-mcp", Title: "kernel-mcp: Jupyter kernels for AI assistants", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions(cfg) + sandboxInstructions(cfg),
		Logger:       cfg.Logger,
		// The SDK tracks subscribers itself; the count here only spares
		// every run a notification pass (and a log line) when nobody listens.
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			s.subscriptions.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			s.subscriptions.Add(-1)
			return nil
		},
	})
	s.addTools()
	s.addRunTools()
	s.addDataTools()
	s.addApp()
	s.addTasks()
	s.followEvents()
	return s, nil
}

// engineConfig is the part of the configuration the engine takes.
func (c Config) engineConfig() engine.Config {
	return engine.Config{
		Python: c.Python, Kernel: c.Kernel, MaxWait: c.MaxWait, OutputLimit: c.OutputLimit,
		InterruptGrace: c.InterruptGrace, StartTimeout: c.StartTimeout, MemoryLimit: c.MemoryLimit, MaxMessageSize: c.MaxMessageSize,
		MaxSessions: c.MaxSessions, IdleTimeout: c.IdleTimeout, PoolSize: c.PoolSize, StateDir: c.StateDir, WorkDir: c.WorkDir,
		GatewayURL: c.GatewayURL, GatewayToken: c.GatewayToken, UserServer: c.UserServer, Logger: c.Logger, Sandbox: c.Sandbox,
		MultiUser: c.MultiUser, SharedLimit: c.SharedLimit, ChartBrowser: c.ChartBrowser, ChartTimeout: c.ChartTimeout,
	}
}

// MCP returns the MCP server, to Run over a transport or serve over HTTP.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Engine returns the session engine the tools work on.
func (s *Server) Engine() *engine.Engine { return s.eng }

// Close shuts down every session's kernel, in parallel, and waits for them
// and for the idle timers. Calls in flight fail; histories are kept.
func (s *Server) Close() error {
	s.progressMu.Lock()
	s.closing = true
	s.progressMu.Unlock()
	s.tasks.Stop() // before the engine: a run the stop cuts short stays live in its task's record
	err := s.eng.Close()
	<-s.eventsDone
	s.progress.Wait()
	s.tasks.Wait()
	return err
}

// instructions are the rules every tool shares, sent once at initialize so
// that tool descriptions can stay short (docs/tools.md says the same at
// length).
func instructions(cfg Config) string {
	wait := "the server's max wait"
	if cfg.MaxWait > 0 {
		wait = fmt.Sprintf("the server's max wait (%v s)", cfg.MaxWait.Seconds())
	}
	return `kernel-mcp runs code in persistent Jupyter kernel sessions, like notebook cells.
Sessions: session_id defaults to "default" (reset_session, reset_run_context and delete_session need it named). run_code, run_file, run_notebook, install_package and the data tools (load_data, describe_data, estimate_ols, plot_data) create a missing session; other tools answer an unknown one with an error naming the sessions that exist. Variables, imports and data persist between calls in a session; the last expression's value is shown, plots come back as images.
Results: the text content holds the outputs in the order they came (stdout, stderr, the last value, display text), images as image content. An exception sets isError and leads with one line such as "NameError on line 2: name 'x' is not defined", then its traceback. Output beyond the output limit is cut in the middle with a note; the history keeps more. structuredContent holds the same result as fields (ids, status, stdout, the error), each once: a client shows its model one of the two.
History: every run is a block. get_history numbers blocks from [1]; start/end parameters are 0-based indices with Python slice rules (negative counts from the end, end exclusive, out of range clamps), so [1] is start 0. Relative paths resolve against the session's working directory; tools that write files create missing folders and reply with the absolute path.
Long runs: timeout is in seconds (default: the server's --timeout, none unless set); a timeout interrupts (never kills) and the namespace is kept. A call still running after ` + wait + ` returns status "running" (or "queued") with a run_id: the code goes on. background: true hands off at once. Call wait_run {session_id, run_id} for the output since the last call and, once the run ends, its result as run_code gives it; wait (seconds) is at most the max wait, and it returns early when the run needs input. Status "input_requested" means the code called input() or getpass(): answer with send_input, which then waits for the run as wait_run does. interrupt_session stops a run. During a run, get_value, list_variables, inspect and complete answer at once where the kernel has subshells (ipykernel 7); the result says so.
reset_run_context restarts the kernel and keeps the history; rerun_code restarts it and re-runs the history to rebuild state. A kernel attached with kernel_id or connection_file is shared: ask the user before passing force: true to a reset.
The data tools run ordinary pandas, statsmodels and matplotlib code that is kept in the history, so save_script and save_notebook reproduce it. They check the DataFrame and column names first and refuse a misspelt one with the closest names; nothing runs then.`
}
