package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Helper code: Python that tools run silently in a session's kernel to read
// its namespace (the data tools' checks, get_value, list_variables). It runs
// as exec(compile(src), {...}) in a dict of its own, so it defines nothing
// in the user's namespace and is not stored in IPython's history.

// ResultMIME is the MIME type of a helper's reply.
const ResultMIME = "application/vnd.kernel-mcp+json"

// Gone refuses to start a fresh kernel behind the user's back for a tool
// that only reads the namespace: a session whose kernel died, was stopped
// for idleness or went with an earlier server says so, and run_code (which reports the loss) starts the
// next one.
func (ss *Session) Gone() error {
	ss.mu.Lock()
	k, died, idled, restored := ss.k, ss.died, ss.idled, ss.restored
	ss.mu.Unlock()
	if k != nil {
		if down, why := kernelDown(k); down {
			return fmt.Errorf("session %q: the kernel died (%v): its variables are gone; run_code starts a fresh kernel", ss.id, why)
		}
		return nil
	}
	switch {
	case died != nil:
		return fmt.Errorf("session %q: the kernel died (%v): its variables are gone; run_code starts a fresh kernel", ss.id, died)
	case idled:
		return fmt.Errorf("session %q: the kernel was stopped after %v without running anything: its variables are gone; run_code starts a fresh kernel", ss.id, ss.eng.cfg.IdleTimeout)
	case restored:
		return fmt.Errorf("session %q: its history was restored after a server restart, and no kernel has run it since: its variables are gone; run_code starts a fresh kernel, rerun_code rebuilds the state", ss.id)
	}
	return nil
}

// PyError is an exception raised by helper code, or by the user's
// expression inside it.
type PyError struct{ EName, EValue string }

func (e *PyError) Error() string { return e.EName + ": " + e.EValue }

// Query runs helper code src in the session's kernel, for a caller that
// holds the session's execution right, and returns the JSON it replied
// with: one display_data of ResultMIME. src finds args as _km_args (JSON)
// and the user's namespace as _km_ns. The code runs silently: no execution count, no IPython history, nothing
// defined in the user's namespace. On an R kernel the helper's R version
// runs instead (rhelpers.go); a helper without one, or a kernel of another
// language, is refused.
func (ss *Session) Query(ctx context.Context, src string, args map[string]any, limit time.Duration) (json.RawMessage, error) {
	if err := ss.Gone(); err != nil {
		return nil, err
	}
	k, _, err := ss.Kernel(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %q: cannot start a kernel: %v", ss.id, err)
	}
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	lang := ss.Describe().Language
	code, isR := helperCall(lang, src, a)
	if code == "" {
		return nil, fmt.Errorf("session %q runs %s; this tool needs a Python (IPython) kernel", ss.id, lang)
	}
	qctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := k.Execute(qctx, code, kernel.ExecuteOptions{Silent: true, NoStoreHistory: true, MaxOutputs: 100, MaxStreamBytes: 64 << 10})
	var execErr *kernel.ExecError
	switch {
	case errors.Is(err, kernel.ErrKernelDied):
		ss.MarkDead(k, err)
		return nil, fmt.Errorf("session %q: %v — variables lost, history kept; the next call starts a fresh kernel", ss.id, err)
	case errors.Is(err, kernel.ErrInterruptIgnored):
		rerr := ss.ForceRestart(context.WithoutCancel(ctx))
		msg := fmt.Sprintf("session %q: the kernel ignored the interrupt after %v, so it was restarted: all variables were lost (history is kept)", ss.id, limit)
		if rerr != nil {
			msg += fmt.Sprintf("; the restart failed too (%v), the next call starts a fresh kernel", rerr)
		}
		return nil, errors.New(msg)
	case errors.As(err, &execErr):
		return nil, &PyError{EName: execErr.EName, EValue: history.PlainText(execErr.EValue)}
	case err != nil:
		if res != nil && res.Interrupted {
			return nil, fmt.Errorf("session %q: stopped after %v (a query gets at most %v, and no more than --max-wait leaves it after waiting for its turn)", ss.id, limit.Round(100*time.Millisecond), QueryTimeout)
		}
		return nil, fmt.Errorf("session %q: %v", ss.id, err)
	}
	for _, o := range res.Outputs {
		if raw, ok := o.Data[ResultMIME]; ok {
			if isR {
				return rResult(raw)
			}
			return raw, nil
		}
	}
	return nil, fmt.Errorf("session %q: the kernel gave no result", ss.id)
}

// helperCall is the code that runs helper src with args in a kernel of
// language lang, and whether it is R; "" when the helper has no version for
// that language.
func helperCall(lang, src string, args []byte) (code string, isR bool) {
	switch {
	case lang == "" || lang == "python":
		return "exec(compile(" + PyString(src) + `, "<kernel-mcp>", "exec"), {"_km_args": ` + PyString(string(args)) + `, "_km_ns": globals()})`, false
	case strings.EqualFold(lang, "R") && rHelpers[src] != "":
		return rCall(rHelpers[src], args), true
	}
	return "", false
}

// PyString quotes s as a Python string literal: JSON's string syntax is a
// subset of Python's.
func PyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// QueryTimeout is the longest a helper's run may take.
const QueryTimeout = 2 * time.Minute

// QueryLimit bounds a helper's run in the kernel: QueryTimeout, or less
// when Config.MaxWait is shorter, since no call may hold its client longer.
func (s *Engine) QueryLimit() time.Duration { return min(QueryTimeout, s.cfg.MaxWait) }

// minQueryTime is the least time a query gets once its turn has come, even
// when Config.MaxWait has nearly run out waiting for it.
const minQueryTime = 2 * time.Second

// QueryInTurn runs helper code in the session, in the turn of the caller's
// place, and returns the JSON it replied with. One deadline bounds the
// whole: the wait for the session's turn and the query share
// Config.MaxWait, so a query that got its turn late does not hold its
// caller for another max wait.
func (s *Engine) QueryInTurn(ctx context.Context, ss *Session, place Place, src string, args map[string]any) (json.RawMessage, error) {
	deadline := time.Now().Add(s.cfg.MaxWait)
	release, err := s.WaitTurn(ctx, ss, place)
	if err != nil {
		return nil, err
	}
	defer release()
	limit := min(s.QueryLimit(), max(time.Until(deadline), minQueryTime))
	return ss.Query(ctx, src, args, limit)
}

// ReadQuery is QueryInTurn for a read (get_value, list_variables): while a
// run executes in a kernel with subshells it runs beside the run, at once,
// and during names the run; otherwise it runs in its turn, and note says
// why it waited, if it waited for a run.
func (s *Engine) ReadQuery(ctx context.Context, ss *Session, place Place, src string, args map[string]any) (raw json.RawMessage, during, note string, err error) {
	b, waited, err := s.ReadBeside(ctx, ss, place)
	if err != nil {
		return nil, "", "", err
	}
	if b != nil {
		defer b.Release()
		raw, err := b.Query(ctx, src, args)
		return raw, b.RunID(), b.Note(), err
	}
	raw, err = s.QueryInTurn(ctx, ss, place, src, args)
	if err != nil && waited != "" {
		err = fmt.Errorf("%v (%s)", err, waited)
	}
	return raw, "", waited, err
}

// BesideRead is the reader beside the session's run in progress, for a
// request that takes no turn (complete, inspect): nil when there is none,
// and note then says why the request waits for the run, if it does.
func (s *Engine) BesideRead(ctx context.Context, ss *Session) (b *Beside, note string, err error) {
	b, why, err := ss.Beside(ctx)
	if err != nil {
		return nil, "", err
	}
	if b != nil {
		return b, "", nil
	}
	if r := ss.CurrentRun(); r != nil && why != "" {
		return nil, fmt.Sprintf("Waited for run %s to end: %s.", r.View().RunID, why), nil
	}
	return nil, "", nil
}
