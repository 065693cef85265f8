package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// DefaultSession is the session of calls that name none.
const DefaultSession = "default"

// validSessionID keeps ids usable as file names and URI segments: no
// slashes, no "..", nothing a path could be built from.
var validSessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func checkSessionID(id string) error {
	if !validSessionID.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("invalid session_id %q: use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit", id)
	}
	return nil
}

// Choice is what a session runs: a kernelspec name, an interpreter, a
// working directory. Empty fields fall back to the server's configuration.
type Choice struct {
	Kernel string
	Python string
	Cwd    string
	// KernelID or ConnectionFile attach to a kernel that already runs
	// (remote.go).
	KernelID       string
	ConnectionFile string
}

// Session is one kernel plus its history. Executions in a session run one at
// a time; the kernel starts on first use and is started afresh after it dies.
type Session struct {
	id      string
	eng     *Engine
	created time.Time
	choice  Choice

	startMu sync.Mutex // serializes kernel starts
	// recMu is held while a run's block is recorded and noted among the
	// run's blocks, so that Cells sees both or neither.
	recMu sync.Mutex

	mu sync.Mutex // guards the fields below
	// queue holds the jobs waiting for the session, in arrival order; the
	// first holds the execution right (queue.go).
	queue []*job
	// runs are the session's runs, oldest first: the unfinished ones and
	// the last keepRuns finished (runs.go). current is the one executing.
	runs    []*Run
	runSeq  int
	current *Run
	// asked is closed, and replaced, when a run of the session starts
	// waiting for input: calls queued behind it stop waiting (queue.go).
	asked    chan struct{}
	deleted  bool // delete_session took the session out of the registry
	k        *kernel.Kernel
	starting bool
	info     KernelInfo
	died     error // how the last kernel died, until a new one starts
	// lastInterrupt is when interrupt_session last sent an interrupt.
	lastInterrupt time.Time
	gen           int // kernel processes started so far: history.Entry.Generation
	hist          []history.Entry
	store         *history.Store // nil when histories are kept in memory only
	meta          history.Meta
	idle          *time.Timer // stops an idle kernel (Config.IdleTimeout); nil when not armed
	idleGen       int         // bumped whenever idle is stopped or re-armed
	idled         bool        // the last kernel was stopped for being idle
	// restored: the history was read from the state directory when the
	// server started, and no kernel of this server has run it.
	restored bool
	// unreported is why the running kernel is new (the last one died, was
	// stopped for being idle, or belonged to an earlier server), until a
	// run says so (runBlock); a tool that starts a kernel without running
	// code (complete, run_notebook's language check) leaves it for the next
	// run. Nil after a deliberate restart.
	unreported error
	// lateReset is how a reset_session that went on after its call
	// returned failed, until the next call in the session's turn reports
	// it (checkTurn).
	lateReset error
	// restoreNote says what restoring the history file had to leave out or
	// set aside; list_sessions shows it, and the first run too.
	restoreNote      string
	restoreNoteShown bool // a run's result carried restoreNote
	// images keeps the session's image outputs, served as
	// session://{id}/outputs/{n} (images.go); nil until the first image.
	images *ImageStore
	// widgets turns the kernel's widget changes into widget_update events
	// (widgets.go).
	widgets widgetFeed

	// subMu guards sub, the subshell that reads during a run (subshell.go),
	// and parent, the kernel process whose set_parent is ready for them.
	subMu  sync.Mutex
	sub    *subshellState
	parent parentGuard
	// answers counts the questions of the session's runs answered, over
	// all its kernels (Run.Answer): a read beside a run waits until the
	// kernel has taken them (parentGuard, py/subshell_guard.py).
	answers atomic.Int64
	// rd is what a read that would go beside a run waits on while the
	// run's kernel starts or restarts (subshell.go).
	rd readiness
}

// KernelInfo is what a session knows of its kernel once started.
type KernelInfo struct {
	Language    string
	Version     string
	Interpreter string
	KernelName  string
}

func (s *Engine) newSession(id string, choice Choice) *Session {
	return &Session{id: id, eng: s, created: time.Now(), choice: choice}
}

// lookup returns the session, or an error naming the sessions that exist.
func (s *Engine) Lookup(id string) (*Session, error) {
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return ss, nil
	}
	names := make([]string, 0, len(s.sessions))
	for n := range s.sessions {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no session %q; there are no sessions yet (run_code or create_session starts one)", id)
	}
	return nil, fmt.Errorf("no session %q; sessions: %s", id, strings.Join(names, ", "))
}

// lookupOrCreate returns the session, creating it with the server's defaults
// if it does not exist.
func (s *Engine) LookupOrCreate(id string) (*Session, error) {
	return s.LookupOrCreateChecked(id, nil)
}

// lookupOrCreateChecked is lookupOrCreate for a call whose input must be
// checked against the session first (a path resolves against its working
// directory and its confinement): check runs on the session that exists,
// or on the one that would be created, before anything is created, so a
// call with bad input leaves no session and no history file behind. check
// may run a second time when another call created the session meanwhile.
func (s *Engine) LookupOrCreateChecked(id string, check func(*Session) error) (*Session, error) {
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	fresh := ss == nil
	if fresh {
		ss = s.newSession(id, Choice{})
	}
	checked := ss
	if check != nil {
		if err := check(ss); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("server is shutting down")
	}
	got := s.sessions[id]
	if got == nil {
		if !fresh {
			// Deleted meanwhile: it is created afresh, as by a call that
			// came after the delete.
			ss = s.newSession(id, Choice{})
		}
		if err := s.register(ss); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		got = ss
	}
	s.mu.Unlock()
	if got != checked && check != nil {
		if err := check(got); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// stopIdleTimer disarms the idle timer; a callback already under way sees
// the new idleGen and does nothing. Call with ss.mu held.
func (ss *Session) stopIdleTimer() {
	if ss.idle != nil {
		ss.idle.Stop()
		ss.idle = nil
	}
	ss.idleGen++
}

// armIdleTimer (re)starts the idle timer if the server has an idle timeout
// and a kernel runs. Close disarms every timer after cancelling the engine's context, so
// none is armed once the server is closing.
func (ss *Session) armIdleTimer() {
	d := ss.eng.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.stopIdleTimer()
	if ss.k == nil || ss.eng.ctx.Err() != nil {
		return
	}
	gen := ss.idleGen
	ss.idle = time.AfterFunc(d, func() { ss.idleExpired(gen) })
}

// idleExpired shuts down a kernel that ran nothing for the idle timeout.
// The session and its history stay; its state reads "stopped" and the next
// run starts a fresh kernel and says why.
func (ss *Session) idleExpired(gen int) {
	s := ss.eng
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.idleStops.Add(1)
	s.mu.Unlock()
	defer s.idleStops.Done()
	j, ok := ss.tryHold()
	if !ok {
		return // a call holds or waits for the session; its end re-arms the timer
	}
	defer ss.leave(j)
	ss.mu.Lock()
	k := ss.k
	if gen != ss.idleGen || k == nil {
		ss.mu.Unlock()
		return
	}
	ss.idle = nil
	ss.k = nil
	ss.unfollowWidgets(k)
	ss.idled = true
	ss.mu.Unlock()
	err := k.Close()
	s.events.Publish(Event{Kind: KernelStopped, Session: ss.id})
	s.cfg.Logger.Info("stopped an idle kernel", "session", ss.id, "idle_timeout", s.cfg.IdleTimeout, "error", err)
}

// wasIdled reports whether the idle timeout stopped the last kernel.
func (ss *Session) WasIdled() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.idled
}

// errServerRestarted is the "lost" kernel of a session restored from the
// state directory: its history ran in a kernel of an earlier server.
var errServerRestarted = errors.New("the server restarted since this session last ran")

// takeUnreported returns, once, why the running kernel is new.
func (ss *Session) TakeUnreported() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	lost := ss.unreported
	ss.unreported = nil
	return lost
}

// earlierBlocks is the number of code blocks in the history.
func (ss *Session) EarlierBlocks() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := 0
	for _, e := range ss.hist {
		if e.IsCode() {
			n++
		}
	}
	return n
}

// freshKernelNote is the note of the first run in a kernel that replaced a
// lost one (why), in a session whose history holds blocks code blocks that
// ran only in the lost kernel.
func freshKernelNote(why string, blocks int) string {
	note := "Note: " + why + "; this run uses a fresh kernel, so earlier variables are gone"
	if blocks == 0 {
		return note + ". History is kept."
	}
	return note + fmt.Sprintf(": the %d earlier block(s) of the history did not run in it. History is kept; rerun_code rebuilds them.", blocks)
}

// lostNote is freshKernelNote for the way the last kernel was lost.
func lostNote(lost error, blocks int) string {
	var idled *errIdleStopped
	switch {
	case errors.As(lost, &idled):
		return freshKernelNote(fmt.Sprintf("this session's kernel had been stopped after being idle for %v (the server's idle timeout)", idled.after), blocks)
	case errors.Is(lost, errServerRestarted):
		return freshKernelNote("the server restarted since this session last ran, and its kernel with it", blocks)
	default:
		return freshKernelNote(fmt.Sprintf("the previous kernel had died (%v)", lost), blocks)
	}
}

// errIdleStopped is the "lost" kernel of a session whose kernel the idle
// timeout stopped.
type errIdleStopped struct{ after time.Duration }

func (e *errIdleStopped) Error() string {
	return fmt.Sprintf("the kernel was stopped after %v without running anything", e.after)
}

// state is one of starting, idle, busy, dead, stopped.
func (ss *Session) State() string {
	ss.mu.Lock()
	k, starting, died := ss.k, ss.starting, ss.died
	ss.mu.Unlock()
	switch {
	case starting:
		return "starting"
	case k == nil && died != nil:
		return "dead"
	case k == nil:
		return "stopped"
	}
	switch st := k.State(); st {
	case "closed":
		return "stopped"
	case "starting":
		return "starting"
	default:
		return st
	}
}

// resolvePath makes p absolute against the session's working directory.
// Under the sandbox it must also stay there (or, to read, in an allowed
// path): see confine; the ToolPath it returns then does its I/O through
// the folder the check found it in.
func (ss *Session) ResolvePath(p string, access Access) (ToolPath, error) {
	if p == "" {
		return ToolPath{}, errors.New("path is empty")
	}
	if ss.eng.cfg.UserServer != nil {
		tp, err := ss.eng.serverPath(p)
		tp.attached = ss.choice.KernelID != ""
		return tp, err
	}
	base, err := ss.cwd()
	if err != nil {
		return ToolPath{}, err
	}
	abs := filepath.Join(base, p)
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	}
	if ss.eng.cfg.Sandbox != nil {
		return ss.confine(abs, base, access)
	}
	return ToolPath{abs: abs}, nil
}

// Describe is what the session knows of itself without asking the kernel.
func (ss *Session) Describe() SessionInfo {
	st := ss.State()
	ss.mu.Lock()
	info := SessionInfo{
		SessionID: ss.id, State: st, Language: ss.info.Language, Version: ss.info.Version,
		Interpreter: ss.info.Interpreter, Kernel: ss.info.KernelName, Cwd: ss.choice.Cwd, History: len(ss.hist),
	}
	if ss.k != nil {
		info.Pid = ss.k.Pid()
	}
	cur := ss.current
	ss.mu.Unlock()
	if cur != nil {
		v := cur.View()
		info.Run = &v
	}
	info.QueuedRuns = ss.QueuedRuns()
	info.HistoryUnsaved = ss.HistoryBacklog()
	return info
}

// restoreNoteFor is TakeRestoreNote when take is set, else the note it
// would return, left for the next taker.
func (ss *Session) restoreNoteFor(take bool) string {
	if take {
		return ss.TakeRestoreNote()
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.restoreNoteShown {
		return ""
	}
	return ss.restoreNote
}

// unreportedFor is TakeUnreported when take is set, else what it would
// return, left for the next taker.
func (ss *Session) unreportedFor(take bool) error {
	if take {
		return ss.TakeUnreported()
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.unreported
}
