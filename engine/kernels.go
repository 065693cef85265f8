package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
)

// A session's kernel: starting one (from the warm pool or cold), the
// limit on running kernels, noticing a death, stopping and restarting.

// kernel returns the live kernel, starting one if there is none or the last
// one died. started reports whether a new kernel was started, and lost is
// the death of the previous one, if that is why.
func (ss *Session) Kernel(ctx context.Context) (k *kernel.Kernel, lost error, err error) {
	ss.startMu.Lock()
	defer ss.startMu.Unlock()
	ss.mu.Lock()
	k = ss.k
	ss.mu.Unlock()
	if k != nil {
		down, why := kernelDown(k)
		if !down {
			return k, nil, nil
		}
		ss.MarkDead(k, why)
	}
	// A call queued behind delete_session must not start a kernel that no
	// registry entry, limit or shutdown would ever see.
	if err := ss.CheckRegistered(); err != nil {
		return nil, nil, err
	}
	// The limit check and marking this session as starting happen under
	// limitMu, so two sessions cannot both take the last place.
	ss.eng.limitMu.Lock()
	if err := ss.eng.checkKernelLimit(ss); err != nil {
		ss.eng.limitMu.Unlock()
		return nil, nil, err
	}
	ss.mu.Lock()
	lost = ss.died
	if lost == nil && ss.idled {
		lost = &errIdleStopped{after: ss.eng.cfg.IdleTimeout}
	}
	if lost == nil && ss.restored {
		lost = errServerRestarted
	}
	ss.starting = true
	ss.mu.Unlock()
	ss.eng.limitMu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.starting = false
		ss.mu.Unlock()
		ss.rd.signal()
	}()
	k, info, err := ss.eng.startKernel(ctx, ss.choice)
	if err != nil {
		if ctx.Err() != nil && ss.eng.ctx.Err() == nil {
			// The start's own error (an interpreter check killed, a
			// ready wait cut short) would misstate why.
			return nil, lost, errStartCancelled
		}
		return nil, lost, err
	}
	ss.mu.Lock()
	if ss.eng.ctx.Err() != nil || ss.deleted {
		deleted := ss.deleted
		ss.mu.Unlock()
		k.Close()
		if deleted {
			return nil, lost, ss.errDeleted()
		}
		return nil, lost, errors.New("server is shutting down")
	}
	ss.k, ss.info, ss.died, ss.idled, ss.restored = k, info, nil, false, false
	ss.unreported = lost
	ss.followWidgets(k)
	ss.gen++
	gen := ss.gen
	ss.mu.Unlock()
	ss.eng.events.Publish(Event{Kind: KernelStarted, Session: ss.id, Pid: k.Pid()})
	ss.prepare(ctx, k, gen)
	return k, lost, nil
}

// errStartCancelled is why a kernel did not start when the call that
// started it was cancelled (tasks/cancel, a client's cancellation) first.
var errStartCancelled = errors.New("the call was cancelled while the kernel was starting, so the start was stopped: no code ran, nothing was lost, and the session's next call starts a kernel")

// prepare readies a kernel process the session just started for reads
// beside its runs (guardParent), while the start still holds it: its main
// shell is idle then, so a read waiting for the start can go beside the run
// as soon as the start is over, whatever the run does first on the main
// shell (a data check, pip). A kernel the server attached to may be busy
// with someone else's code: the first block of a run prepares it instead.
func (ss *Session) prepare(ctx context.Context, k *kernel.Kernel, gen int) {
	if !k.Attached() {
		ss.guardParent(ctx, k, gen)
	}
}

// checkRegistered fails when the session was deleted after the caller
// found it.
func (ss *Session) CheckRegistered() error {
	ss.mu.Lock()
	deleted := ss.deleted
	ss.mu.Unlock()
	if deleted {
		return ss.errDeleted()
	}
	return nil
}

// checkTurn is what a call that got the session's turn must fail with,
// before it does anything: the session was deleted, or a reset that went
// on after its call returned failed (reported once, as the reset's answer
// promised).
func (ss *Session) checkTurn() error {
	if err := ss.CheckRegistered(); err != nil {
		return err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	err := ss.lateReset
	ss.lateReset = nil
	return err
}

func (ss *Session) errDeleted() error {
	return fmt.Errorf("session %q no longer exists (an earlier call deleted it, or its create_session failed); nothing ran here. run_code or create_session starts it afresh", ss.id)
}

// checkKernelLimit fails when starting a kernel for self would run more
// kernels than Config.MaxSessions allows. Call with s.limitMu held.
func (s *Engine) checkKernelLimit(self *Session) error {
	if err := s.cfg.SharedLimit.check(s, self); err != nil {
		return err
	}
	if s.cfg.MaxSessions <= 0 {
		return nil
	}
	s.mu.Lock()
	all := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var running []string
	for _, ss := range all {
		if ss != self && ss.holdsKernel() {
			running = append(running, ss.id)
		}
	}
	if len(running) < s.cfg.MaxSessions {
		return nil
	}
	slices.Sort(running)
	plural := "s"
	if s.cfg.MaxSessions == 1 {
		plural = ""
	}
	msg := fmt.Sprintf("the server's limit of %d running kernel%s (max sessions) is reached; sessions with a kernel: %s. "+
		"delete_session on one of them frees its kernel (interrupt_session only stops running code; the kernel stays), then retry",
		s.cfg.MaxSessions, plural, strings.Join(running, ", "))
	if s.cfg.IdleTimeout > 0 {
		msg += fmt.Sprintf("; a kernel idle for %v is stopped on its own", s.cfg.IdleTimeout)
	}
	return errors.New(msg)
}

// holdsKernel reports whether the session has a kernel starting or running.
func (ss *Session) holdsKernel() bool {
	ss.mu.Lock()
	k, starting := ss.k, ss.starting
	ss.mu.Unlock()
	if starting {
		return true
	}
	if k == nil {
		return false
	}
	down, _ := kernelDown(k)
	return !down
}

// kernelDown reports whether k's process is gone for good, and why. A
// kernel in the middle of a restart has its old process marked dead by a
// restart (kernel.DiedError.Restarted) while the new one starts: it is not
// down, and a fresh kernel started beside it would leak the restarted one.
func kernelDown(k *kernel.Kernel) (bool, error) {
	done, why := k.Dead()
	if !isClosed(done) {
		return false, nil
	}
	err := why()
	if de := (*kernel.DiedError)(nil); errors.As(err, &de) && de.Restarted {
		return false, nil
	}
	return true, err
}

// generation is the number of the kernel process now running.
func (ss *Session) Generation() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.gen
}

// markDead forgets a dead kernel, releasing its files, and remembers how it
// died for list_sessions and the next call. A call that died because the
// kernel was restarted under it leaves the kernel alone: k already runs
// the new process (or reports the failed restart itself).
func (ss *Session) MarkDead(k *kernel.Kernel, why error) {
	if de := (*kernel.DiedError)(nil); errors.As(why, &de) && de.Restarted {
		return
	}
	ss.mu.Lock()
	mine := ss.k == k
	if mine {
		ss.k = nil
		ss.died = why
		ss.unfollowWidgets(k)
	}
	ss.mu.Unlock()
	k.Close()
	if mine {
		ss.eng.events.Publish(Event{Kind: KernelDied, Session: ss.id, Err: why})
	}
}

// stopKernel shuts the kernel down, if one runs, and disarms the idle timer.
func (ss *Session) StopKernel() error {
	ss.mu.Lock()
	k := ss.k
	ss.k = nil
	ss.stopIdleTimer()
	ss.unfollowWidgets(k)
	ss.mu.Unlock()
	if k == nil {
		return nil
	}
	ss.dropSubshell(k)
	err := k.Close()
	ss.eng.events.Publish(Event{Kind: KernelStopped, Session: ss.id, Err: err})
	return err
}

// restart gives the session a fresh kernel process, starting one if none
// runs.
func (ss *Session) Restart(ctx context.Context) error { return ss.restartKernel(ctx, false) }

// forceRestart is restart for a kernel that ignored an interrupt: the old
// process is killed at once instead of being asked to shut down.
func (ss *Session) ForceRestart(ctx context.Context) error { return ss.restartKernel(ctx, true) }

func (ss *Session) restartKernel(ctx context.Context, force bool) error {
	// Reads wait for the fresh process rather than go to the old one.
	ss.rd.setRestarting(true)
	defer ss.rd.setRestarting(false)
	ss.mu.Lock()
	k := ss.k
	ss.mu.Unlock()
	if k != nil {
		// A warm kernel from the pool is a restart in milliseconds: the
		// session gets a fresh process and namespace either way.
		if w, ok, _ := ss.eng.pool.take(ctx, ss.choice, false); ok {
			ss.mu.Lock()
			if ss.k == k {
				ss.k, ss.info, ss.died, ss.idled, ss.unreported = w.k, w.info, nil, false, nil
				ss.followWidgets(w.k)
				ss.gen++
				gen := ss.gen
				ss.mu.Unlock()
				ss.eng.pool.retire(k, force)
				ss.eng.events.Publish(Event{Kind: KernelRestarted, Session: ss.id, Pid: w.k.Pid()})
				ss.prepare(ctx, w.k, gen)
				return nil
			}
			ss.mu.Unlock()
			ss.eng.pool.retire(w.k, false)
		}
		restart := k.Restart
		if force {
			restart = k.ForceRestart
		}
		if err := restart(ctx); err == nil {
			ss.mu.Lock()
			ss.died, ss.unreported = nil, nil
			ss.gen++
			gen := ss.gen
			ss.mu.Unlock()
			ss.eng.events.Publish(Event{Kind: KernelRestarted, Session: ss.id, Pid: k.Pid()})
			ss.prepare(ctx, k, gen)
			return nil
		}
		ss.MarkDead(k, nil)
	}
	_, _, err := ss.Kernel(ctx)
	if err == nil {
		// Asked for: no run needs to say the kernel is new.
		ss.TakeUnreported()
	}
	return err
}

// startKernel gives a session a kernel: a warm one from the pool when one
// is ready or starting, else a cold start.
func (s *Engine) startKernel(ctx context.Context, c Choice) (*kernel.Kernel, KernelInfo, error) {
	w, ok, err := s.pool.take(ctx, c, true)
	if err != nil {
		return nil, KernelInfo{}, err
	}
	if ok {
		return w.k, w.info, nil
	}
	k, info, err := s.coldStart(ctx, c)
	s.pool.started(ctx, c, err)
	return k, info, err
}

// coldStart resolves what to run and starts it.
func (s *Engine) coldStart(ctx context.Context, c Choice) (*kernel.Kernel, KernelInfo, error) {
	if k, info, ok, err := s.remoteStart(ctx, c); ok {
		return k, info, err
	}
	spec, interp, err := s.resolve(ctx, c)
	if err != nil {
		return nil, KernelInfo{}, err
	}
	dir, err := s.kernelDir(c)
	if err != nil {
		return nil, KernelInfo{}, err
	}
	opts := kernel.Options{
		Spec:           spec,
		Dir:            dir,
		Sandbox:        s.sandboxOptions(),
		StartTimeout:   s.cfg.StartTimeout,
		InterruptGrace: s.cfg.InterruptGrace,
		// An idle ipykernel obeys a shutdown_request in well under a second;
		// one that does not is busy or stuck, and the server should not
		// make its client wait seconds more for it.
		ShutdownWait:   time.Second,
		TermWait:       time.Second,
		MemoryLimit:    s.cfg.MemoryLimit,
		MaxMessageSize: s.cfg.MaxMessageSize,
	}
	k, err := kernel.Start(ctx, opts)
	if err != nil {
		return nil, KernelInfo{}, err
	}
	info := KernelInfo{Interpreter: interp, KernelName: spec.Name}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ki, err := k.KernelInfo(ictx); err == nil {
		info.Language = ki.LanguageInfo.Name
		info.Version = ki.LanguageInfo.Version
	}
	return k, info, nil
}

// resolve picks the kernelspec for a choice, falling back to the server's
// configuration. A missing ipykernel is a one-line error with the fix.
func (s *Engine) resolve(ctx context.Context, c Choice) (kernelspec.Spec, string, error) {
	opts := kernelspec.ResolveOptions{Kernel: c.Kernel, Python: c.Python}
	if c.Kernel == "" && c.Python == "" {
		opts.Kernel, opts.Python = s.cfg.Kernel, s.cfg.Python
	} else if err := s.checkPython(c.Python); err != nil {
		// A session's own choice, from create_session or restored from a
		// history; the pool's starts of that kind come here too.
		return kernelspec.Spec{}, "", err
	}
	if s.cfg.Sandbox != nil {
		opts.CheckSpec = s.checkKernelspec
	}
	r, err := kernelspec.Resolve(ctx, opts)
	if err != nil {
		return kernelspec.Spec{}, "", err
	}
	interp := ""
	if r.Interpreter != nil {
		interp = r.Interpreter.Path
	} else if len(r.Spec.Argv) > 0 {
		interp = r.Spec.Argv[0]
	}
	return r.Spec, interp, nil
}
