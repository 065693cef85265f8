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
