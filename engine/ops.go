package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Create registers a new session that runs choice, and starts its kernel
// in the caller's turn (place). A session that exists is an error, unless
// a delete queued before this call is about to remove it: Create then
// waits for it. When the kernel cannot start, the session is gone again.
// When it has not started within MaxWait, Create returns the session and a
// *StillStarting error.
func (s *Engine) Create(ctx context.Context, id string, choice Choice, place Place) (*Session, error) {
	begun := time.Now()
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	if choice.Kernel != "" && choice.Python != "" {
		return nil, errors.New("give kernel or python, not both")
	}
	if err := s.checkChoice(choice); err != nil {
		return nil, err
	}
	if choice.Cwd != "" && s.cfg.Sandbox != nil {
		cwd, err := s.sandboxCwd(choice.Cwd)
		if err != nil {
			return nil, err
		}
		choice.Cwd = cwd
	} else if choice.Cwd != "" {
		if !filepath.IsAbs(choice.Cwd) && s.cfg.WorkDir != "" {
			choice.Cwd = filepath.Join(s.cfg.WorkDir, choice.Cwd)
		}
		st, err := os.Stat(choice.Cwd)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("cwd %q is not a directory", choice.Cwd)
		}
		// Kept absolute: the history file keeps it for a server that may
		// start elsewhere, and paths resolved against it are shown.
		if choice.Cwd, err = filepath.Abs(choice.Cwd); err != nil {
			return nil, fmt.Errorf("cwd %q: %v", choice.Cwd, err)
		}
	}
	var ss *Session
	for ss == nil {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errShuttingDown
		}
		old, ok := s.sessions[id]
		if !ok {
			ss = s.newSession(id, choice)
			err := s.register(ss)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			break
		}
		s.mu.Unlock()
		if !old.deleteQueued() {
			return nil, fmt.Errorf("session %q already exists; use it, or delete_session first", id)
		}
		// A delete sent before this call has yet to run: wait for it,
		// keeping this call's place (none here), so that calls sent
		// after this one find the session this call creates.
		release, err := s.WaitTurn(ctx, old, nil)
		if err == nil {
			release()
		}
		if old.CheckRegistered() == nil {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("session %q already exists; use it, or delete_session first", id)
		}
	}

	forget := func() {
		s.mu.Lock()
		s.unregister(ss)
		s.mu.Unlock()
		s.events.Publish(Event{Kind: SessionDeleted, Session: ss.id})
	}
	release, err := s.WaitTurn(ctx, ss, place)
	if err != nil {
		forget()
		return nil, err
	}
	// A kernel that starts slowly must not hold the call past MaxWait, as
	// Reset's does not: the start goes on in the session's turn (on the
	// engine's context, so it ends with the server), and the next call on
	// the session waits for it.
	done := make(chan error, 1)
	go func() {
		defer release()
		_, _, err := ss.Kernel(s.ctx)
		if err != nil {
			forget()
		}
		done <- err
	}()
	t := time.NewTimer(max(s.cfg.MaxWait-time.Since(begun), time.Second))
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("session %q: cannot start a kernel: %v", id, err)
		}
		return ss, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cancelled; session %q goes on starting its kernel", id)
	case <-t.C:
		return ss, &StillStarting{Session: id, Waited: time.Since(begun)}
	}
}

// StillStarting is Create's answer when the session's kernel did not start
// within MaxWait: the session exists, its kernel goes on starting, and the
// next call on the session waits for it (and, if the start fails, finds the
// session gone).
type StillStarting struct {
	Session string
	Waited  time.Duration
}

func (e *StillStarting) Error() string {
	return fmt.Sprintf("session %q was created, and its kernel is still starting after %v; the start goes on, and the next call on the session waits for it (if the kernel cannot start, the session is gone, and that call says its create_session failed)",
		e.Session, e.Waited.Round(100*time.Millisecond))
}

// Delete takes its turn in the session's queue (runs queued before it
// finish first, calls queued after it find the session gone), forgets the
// session and its history file, and shuts its kernel down.
func (s *Engine) Delete(ctx context.Context, ss *Session, place Place) error {
	j := newJob()
	j.deletes = true
	release, err := s.waitTurnAs(ctx, ss, place, j)
	if err != nil {
		return err
	}
	defer release()
	s.mu.Lock()
	rmErr := s.unregister(ss)
	s.mu.Unlock()
	err = ss.StopKernel()
	s.events.Publish(Event{Kind: SessionDeleted, Session: ss.id})
	if err != nil {
		err = fmt.Errorf("session %q deleted, but its kernel did not shut down cleanly: %v", ss.id, err)
	}
	if rmErr != nil && !errors.Is(rmErr, history.ErrNotDurable) {
		err = errors.Join(err, fmt.Errorf("session %q deleted, but its history file could not be removed (%v): a server restart would bring the session back", ss.id, rmErr))
	}
	return err
}

// Reset gives the session a fresh kernel in its turn, and with
// clearHistory an empty history too; it returns what it did. A session
// attached to a shared kernel is restarted only with force.
//
// A kernel that starts slowly (a loaded machine, a large environment, a
// gateway) must not hold the call past Config.MaxWait, the bound every
// call keeps: the reset then goes on in the session's turn, the call says
// so, and the next call on the session waits for it. If the reset then
// fails, the next call in the session's turn fails with that, once, and
// does nothing; a reset that was to clear the history clears it even so
// (the old kernel is gone), as its answer said.
func (s *Engine) Reset(ctx context.Context, ss *Session, place Place, clearHistory, force bool) (string, error) {
	if err := ss.SharedKernelRefusal(force); err != nil {
		return "", err
	}
	begun := time.Now()
	release, err := s.WaitTurn(ctx, ss, place)
	if err != nil {
		return "", err
	}
	type outcome struct {
		msg string
		err error
	}
	// The work's outcome goes to the call while it waits, and to the
	// session once the call has returned (returned): the next call in its
	// turn reports a failure then.
	var (
		mu       sync.Mutex
		returned bool
	)
	done := make(chan outcome, 1)
	go func() {
		defer release()
		// The engine's context: the reset outlives a call that stopped
		// waiting for it, and ends with the server.
		restartErr := ss.Restart(s.ctx)
		var o outcome
		if restartErr == nil {
			// Outside mu: a call that gives up meanwhile must not wait
			// for the history file.
			o.msg, o.err = s.afterRestart(ss, clearHistory, nil, false)
		}
		mu.Lock()
		defer mu.Unlock()
		if restartErr != nil {
			o.msg, o.err = s.afterRestart(ss, clearHistory, restartErr, returned)
		}
		if !returned {
			done <- o
			return
		}
		if o.err != nil {
			s.cfg.Logger.Error("a reset that went on after its call returned failed", "session", ss.id, "error", o.err)
			ss.mu.Lock()
			ss.lateReset = fmt.Errorf("the reset_session of session %q, which went on after its call returned, failed: %v. Nothing was done by this call; call it again", ss.id, o.err)
			ss.mu.Unlock()
		}
	}()
	// abandon ends the call's wait: the outcome if it has just come, else
	// the session's from now on.
	abandon := func() (outcome, bool) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case o := <-done:
			return o, true
		default:
			returned = true
			return outcome{}, false
		}
	}
	t := time.NewTimer(max(s.cfg.MaxWait-time.Since(begun), time.Second))
	defer t.Stop()
	select {
	case o := <-done:
		return o.msg, o.err
	case <-ctx.Done():
		if o, ok := abandon(); ok {
			return o.msg, o.err
		}
		return "", fmt.Errorf("cancelled; the reset of session %q goes on, and the next call on the session waits for it (and reports it if it failed)", ss.id)
	case <-t.C:
		if o, ok := abandon(); ok {
			return o.msg, o.err
		}
	}
	what := "Its history is kept."
	if clearHistory {
		what = "Its history is cleared once the fresh kernel is up, or if the restart fails."
	}
	return fmt.Sprintf("Session %q is still restarting its kernel after %v; the restart goes on, and the next call on the session waits for it (and reports it if it failed). %s",
		ss.id, time.Since(begun).Round(100*time.Millisecond), what), nil
}

// afterRestart is the rest of a reset once ss.Restart returned restartErr.
// A reset whose call has returned (late) said the history would be
// cleared: it is, even when the restart failed, since the kernel whose
// variables it described is gone either way; unless the server is
// stopping. A reset that answers its call keeps the history when the
// restart fails, and says so.
func (s *Engine) afterRestart(ss *Session, clearHistory bool, restartErr error, late bool) (string, error) {
	if restartErr != nil {
		if !late || !clearHistory || s.ctx.Err() != nil {
			kept := " Its history is kept."
			if !late {
				kept = ""
			}
			return "", fmt.Errorf("session %q: restart failed: %v.%s The next call starts a fresh kernel", ss.id, restartErr, kept)
		}
		how := "its history was cleared, as the reset said"
		if err := s.clearHistory(ss); err != nil && !errors.Is(err, history.ErrNotDurable) {
			how = fmt.Sprintf("its history was to be cleared, as the reset said, but it could not be (%v)", err)
		}
		return "", fmt.Errorf("session %q: restart failed: %v; %s. The next call starts a fresh kernel", ss.id, restartErr, how)
	}
	msg := "Kernel restarted: the namespace is empty; history is kept."
	if clearHistory {
		err := s.clearHistory(ss)
		if err != nil && !errors.Is(err, history.ErrNotDurable) {
			return "", fmt.Errorf("session %q: kernel restarted, but the history could not be cleared: %v", ss.id, err)
		}
		msg = "Session reset: fresh kernel, empty namespace, history cleared."
		if err != nil {
			msg += fmt.Sprintf(" The history file was rewritten, but: %v", err)
		}
		if behind := ss.HistoryBacklog(); behind != nil {
			msg += " " + behind.Note()
		}
	}
	return msg, nil
}

// interruptDebounce is the least time between two interrupts of a session.
const interruptDebounce = time.Second

// Interrupt interrupts the code running in the session, at once (it takes
// no turn), and returns what it did. sent is false when nothing was sent.
func (s *Engine) Interrupt(ctx context.Context, ss *Session) (msg string, sent bool, err error) {
	ss.mu.Lock()
	k, starting := ss.k, ss.starting
	ss.mu.Unlock()
	if k == nil {
		if r := ss.CurrentRun(); r != nil {
			// A run holds the execution right and there is no kernel
			// (it waits for the kernel's start, or is about to start
			// it): stopping the run stops the start, and
			// errStartCancelled says what that cost.
			r.Cancel()
			if !starting {
				return fmt.Sprintf("Run %s in session %s, which had no kernel yet, was cancelled.", r.id, ss.id), true, nil
			}
			return fmt.Sprintf("Run %s was waiting for session %s's kernel to start; the start was stopped and the run cancelled: no code ran, nothing was lost, and the next call starts a kernel.", r.id, ss.id), true, nil
		}
		return "Nothing to interrupt: session " + ss.id + " has no running kernel.", false, nil
	}
	// A run is in progress while it holds the execution right.
	if ss.CurrentRun() == nil && k.State() != "busy" {
		return "Nothing is running in session " + ss.id + "; no interrupt was sent.", false, nil
	}
	// One interrupt per second at most: a second SIGINT landing while
	// ipykernel handles the first makes it drop the run's reply.
	ss.mu.Lock()
	since := time.Since(ss.lastInterrupt)
	recent := since < interruptDebounce
	if !recent {
		ss.lastInterrupt = time.Now()
	}
	ss.mu.Unlock()
	if recent {
		return fmt.Sprintf("An interrupt was sent %d ms ago; the run is stopping. The namespace is kept.", since.Milliseconds()), false, nil
	}
	if err := k.Interrupt(ctx); err != nil {
		return "", false, fmt.Errorf("session %q: interrupt failed: %v", ss.id, err)
	}
	return "Interrupt sent; the namespace is kept.", true, nil
}

// Install is what pip made of an install: its exit code (-1 when unknown)
// and output, cut to Config.OutputLimit.
type Install struct {
	ExitCode int
	Output   string
}

// requirementRE accepts a pip requirement: a name, optional extras, optional
// version constraints. Nothing that pip could take as an option, a path or
// a URL passes.
var requirementRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\])?((===|==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!_-]+(,(===|==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!_-]+)*)?$`)

// ValidRequirement reports whether name is a pip requirement that
// install_package passes to pip.
func ValidRequirement(name string) bool { return requirementRE.MatchString(name) }

// InstallRefused is why install_package cannot work under the sandbox:
// pip needs the network, which the kernel does not have.
func (s *Engine) InstallRefused() error {
	if s.cfg.Sandbox == nil || s.cfg.Sandbox.Network {
		return nil
	}
	return errors.New("install_package cannot work under --sandbox: the kernel has no network, so pip cannot download anything. " +
		"Install the package into the interpreter outside the sandbox (or start the server with --sandbox-network)")
}

// InstallNote explains a failed pip run under the sandbox.
func (s *Engine) InstallNote() string {
	if s.cfg.Sandbox == nil {
		return ""
	}
	return "\nNote: under --sandbox the interpreter's files are read-only; pip can only install into the sandbox's private home (--user), which is lost when the kernel restarts."
}

// Install runs pip in the session's kernel, in the caller's turn: in the
// kernel's own interpreter, or as %pip on a gateway kernel.
func (ss *Session) Install(ctx context.Context, name string) (Install, error) {
	out := Install{ExitCode: -1}
	k, _, err := ss.Kernel(ctx)
	if err != nil {
		return out, fmt.Errorf("session %q: cannot start a kernel: %v", ss.id, err)
	}
	// pip runs in the kernel's own interpreter, as a subprocess with an
	// argument list: no shell sees the name. Where the interpreter's
	// site-packages cannot be written (under the sandbox, always) pip
	// installs into the user's site-packages, which Python puts on
	// sys.path only if it existed when the kernel started: it is added
	// here, or the package would be importable only after a restart
	// (which, under the sandbox, loses it).
	ecExpr := "_kmcp_r.returncode"
	code := fmt.Sprintf(`import subprocess as _kmcp_sp, sys as _kmcp_sys, importlib as _kmcp_il, site as _kmcp_site, os as _kmcp_os
_kmcp_r = _kmcp_sp.run([_kmcp_sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", %q], capture_output=True, text=True)
print(_kmcp_r.stdout, end="")
print(_kmcp_r.stderr, end="", file=_kmcp_sys.stderr)
if _kmcp_site.ENABLE_USER_SITE and _kmcp_os.path.isdir(_kmcp_site.getusersitepackages()) and _kmcp_site.getusersitepackages() not in _kmcp_sys.path:
    _kmcp_site.addsitedir(_kmcp_site.getusersitepackages())
_kmcp_il.invalidate_caches()
`, name)
	if pipViaMagic(k) {
		code, ecExpr = pipMagic(name), "_exit_code"
	}
	res, err := k.Execute(ctx, code, kernel.ExecuteOptions{Silent: true, UserExpressions: map[string]string{"ec": ecExpr}})
	if err != nil && !errors.As(err, new(*kernel.ExecError)) {
		if errors.Is(err, kernel.ErrKernelDied) {
			ss.MarkDead(k, err)
		}
		return out, fmt.Errorf("session %q: pip did not finish: %v", ss.id, err)
	}
	if ec, ok := res.UserExpressions["ec"]; ok {
		var v struct {
			Status string            `json:"status"`
			Data   map[string]string `json:"data"`
		}
		if json.Unmarshal(ec, &v) == nil && v.Status == "ok" {
			fmt.Sscan(v.Data["text/plain"], &out.ExitCode)
		}
	}
	out.Output, _ = history.CutMiddle(history.PlainText(StreamText(res, "")), ss.eng.cfg.OutputLimit)
	return out, nil
}

// StreamText joins the stream outputs of one name ("" for all).
func StreamText(res *kernel.ExecuteResult, name string) string {
	var b strings.Builder
	for _, o := range res.Outputs {
		if o.Type == kernel.OutputStream && (name == "" || o.Name == name) {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

// HistoryLen is the number of entries in the session's history.
func (ss *Session) HistoryLen() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.hist)
}

// Record appends an entry to the session's history (run_notebook's cells
// that are not run). A write to the history file that failed is kept for
// later: HistoryBacklog tells it.
func (ss *Session) Record(e history.Entry) { ss.eng.record(ss, e) }

// Record appends an entry to the session's history as part of run r, which
// holds the session's execution right: the run's snapshots list it among
// its blocks (see ViewSince).
func (r *Run) Record(e history.Entry) {
	r.ss.recMu.Lock()
	defer r.ss.recMu.Unlock()
	if e.Run == "" {
		e.Run = r.id
	}
	i, _ := r.ss.eng.record(r.ss, e)
	r.mu.Lock()
	r.blocks = append(r.blocks, i)
	r.mu.Unlock()
}

// DeleteHistory removes entries [start:end) of the history (Python slice
// rules), or with end nil the one at start, which must exist; the caller
// holds the session's turn. It returns the entries it removed and how many
// remain; a history file that could not be rewritten durably is reported
// with history.ErrNotDurable (the entries are gone either way), and one the
// disk had no room for by the session's HistoryBacklog.
func (ss *Session) DeleteHistory(start, end *int) (removed []Removed, left int, err error) {
	ss.mu.Lock()
	n := len(ss.hist)
	var lo, hi int
	if end == nil {
		// Just the block at start, which must exist.
		i := *start
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			ss.mu.Unlock()
			return nil, n, fmt.Errorf("no block at index %d: session %q has %d (indices 0 to %d, or -1 to -%d)", *start, ss.id, n, n-1, n)
		}
		lo, hi = i, i+1
	} else {
		lo, hi = history.Slice(n, start, end)
	}
	ss.mu.Unlock()
	idx := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	return ss.deleteAt(idx, n)
}

// DeleteBlocks removes the blocks numbered as the transcript numbers them
// (1-based); the caller holds the session's turn. A number out of range,
// or given twice, is an error and nothing is deleted. It returns the
// entries it removed, in history order, and how many remain, with errors
// as DeleteHistory's.
func (ss *Session) DeleteBlocks(numbers []int) (removed []Removed, left int, err error) {
	n := ss.HistoryLen()
	if len(numbers) == 0 {
		return nil, n, fmt.Errorf("no blocks given: name them as the transcript numbers them, e.g. [3, 4]")
	}
	seen := map[int]bool{}
	idx := make([]int, 0, len(numbers))
	for _, k := range numbers {
		if k < 1 || k > n {
			if n == 0 {
				return nil, n, fmt.Errorf("no block [%d]: session %q has no history", k, ss.id)
			}
			return nil, n, fmt.Errorf("no block [%d]: session %q has blocks [1] to [%d]; nothing was deleted", k, ss.id, n)
		}
		if seen[k] {
			return nil, n, fmt.Errorf("block [%d] is named twice; nothing was deleted", k)
		}
		seen[k] = true
		idx = append(idx, k-1)
	}
	slices.Sort(idx)
	return ss.deleteAt(idx, n)
}

// Removed is a block delete_history removed: its 1-based number in the
// history as it was, and the entry.
type Removed struct {
	Number int
	Entry  history.Entry
}

// deleteAt removes the entries at the sorted indices idx of a history that
// had n entries when they were chosen (the caller's turn keeps it so).
func (ss *Session) deleteAt(idx []int, n int) (removed []Removed, left int, err error) {
	ss.mu.Lock()
	if len(ss.hist) != n {
		ss.mu.Unlock()
		return nil, len(ss.hist), fmt.Errorf("session %q's history changed meanwhile; nothing was deleted", ss.id)
	}
	kept := make([]history.Entry, 0, n-len(idx))
	j := 0
	for i, e := range ss.hist {
		if j < len(idx) && idx[j] == i {
			removed = append(removed, Removed{Number: i + 1, Entry: e})
			j++
			continue
		}
		kept = append(kept, e)
	}
	ss.mu.Unlock()
	// A rewrite the disk refused is kept and done once it has room: the
	// session's HistoryBacklog says so, and err is nil.
	err = ss.eng.rewriteHistory(ss, kept)
	if err != nil && !errors.Is(err, history.ErrNotDurable) {
		return removed, len(kept), fmt.Errorf("blocks deleted in memory, but the history file could not be rewritten: %v", err)
	}
	return removed, len(kept), err
}

// KernelInfo is what the session knows of its kernel once started.
func (ss *Session) KernelInfo() KernelInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.info
}

// PythonAllowed reports whether a session may name interpreter p (always,
// without the sandbox).
func (s *Engine) PythonAllowed(p string) bool {
	return s.cfg.Sandbox == nil || slices.Contains(s.allowedPythons, p)
}
