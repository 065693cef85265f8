// Execute: running code, collecting its outputs, answering input() and
// interrupting on cancellation.

package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// ExecuteOptions tunes one execution.
type ExecuteOptions struct {
	// OnEvent, if set, is called for each output as it arrives, on the
	// caller's goroutine inside Execute. It must not call back into Kernel.
	// Outputs an Output widget captures (while its msg_id names this
	// execution, as in JupyterLab) are not reported here nor kept in
	// ExecuteResult.Outputs: they are the widget's (see Widgets).
	OnEvent func(Event)
	// Silent runs the code without broadcasting it or counting it.
	Silent bool
	// StoreHistory: default true; set NoStoreHistory to turn it off.
	NoStoreHistory bool
	// UserExpressions are evaluated after the code; their results come back
	// in ExecuteResult.UserExpressions.
	UserExpressions map[string]string
	// StopOnError (default true) aborts queued executions after an error.
	ContinueOnError bool
	// MaxStreamBytes bounds the text kept of each stream output: the first
	// and the last half of it, with a note of how much was left out
	// between. MaxOutputs bounds the number of outputs kept; later ones
	// (but errors) are counted and dropped. 0 means no limit. OnEvent sees
	// everything either way.
	MaxStreamBytes int
	MaxOutputs     int
	// OnInput, if set, answers the code's input() and getpass(): the
	// execution is sent with allow_stdin, and each input_request calls
	// OnInput on a goroutine of its own with a context that ends when
	// Execute returns. Its reply goes back as the input_reply; an error
	// (a declined or cancelled question) makes input() raise EOFError in the
	// code, as end of input on a terminal does. Without OnInput, input()
	// fails at once with StdinNotImplementedError.
	OnInput func(ctx context.Context, req InputRequest) (string, error)
	// Subshell, when set, runs the code on that subshell: beside the main
	// shell's execution rather than behind it. When ctx ends first, the
	// request is abandoned and never interrupted (see ErrAbandoned).
	Subshell *Subshell
	// OnBusy, if set, is called once when the kernel takes the request up
	// (its busy status arrives), on the caller's goroutine inside Execute.
	OnBusy func()
}

// InputRequest is a kernel's input_request: the code called input() or, with
// Password set, getpass().
type InputRequest struct {
	Prompt   string `json:"prompt"`
	Password bool   `json:"password"`
}

// inputEOF is the input_reply value that ipykernel turns into EOFError.
const inputEOF = "\x04"

// Execute runs code and returns its outputs once the kernel has both sent
// execute_reply and reported idle for it. input() fails at once unless
// opts.OnInput answers it.
//
// Success and failure follow execute_reply's status, as in a notebook: when
// it is "error", the result has Status "error" and the returned error is the
// reply's *ExecError. Tracebacks a cell showed and survived (showtraceback,
// %run of a failing script) are error outputs in the result, not an error.
// When ctx ends while the kernel runs this request, the kernel is
// interrupted and Execute waits up to InterruptGrace for it to finish,
// returning the outputs so far and ctx.Err(); if the kernel does not finish,
// the error also matches ErrInterruptIgnored. Execute never interrupts code
// that is not its own: when ctx ends before the kernel has started the
// request (it waits behind other code), Execute waits up to InterruptGrace
// for it to start and interrupts it then; if it does not start, Execute
// returns ctx.Err() and ErrNotStarted without interrupting, and the kernel
// runs the request later anyway (Jupyter has no way to withdraw a queued
// request). On a subshell (opts.Subshell) nothing is ever interrupted: when
// ctx ends before the reply, Execute returns at once with ctx.Err() and
// ErrAbandoned. When the kernel dies, the error matches ErrKernelDied.
func (k *Kernel) Execute(ctx context.Context, code string, opts ExecuteOptions) (*ExecuteResult, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if d := g.dead(); d != nil {
		return nil, d
	}
	uexpr := opts.UserExpressions
	if uexpr == nil {
		uexpr = map[string]string{}
	}
	msg, err := wire.NewMessage("execute_request", k.session, map[string]any{
		"code":             code,
		"silent":           opts.Silent,
		"store_history":    !opts.NoStoreHistory && !opts.Silent,
		"user_expressions": uexpr,
		"allow_stdin":      opts.OnInput != nil,
		"stop_on_error":    !opts.ContinueOnError,
	})
	if err != nil {
		return nil, err
	}
	if msg.Header.SubshellID, err = onSubshell(g, opts.Subshell); err != nil {
		return nil, err
	}
	res := &ExecuteResult{MsgID: msg.Header.MsgID}
	box := g.router.register(msg.Header.MsgID)
	defer g.router.unregister(msg.Header.MsgID)
	if err := g.conn.Send(ctx, Shell, msg); err != nil {
		return nil, err
	}

	col := newCollector(res, opts)
	col.widgets = k.widgets
	defer col.finish()
	// Questions asked through stdin are answered on goroutines of their
	// own, so that the loop below keeps reading output and can interrupt.
	inputCtx, stopInput := context.WithCancel(context.Background())
	var inputs sync.WaitGroup
	defer inputs.Wait()
	defer stopInput()
	var (
		// busy is set by the iopub busy status whose parent is this
		// request: the kernel has taken it up, so until its reply or idle
		// it runs this code and no other. inputSeen is set by its
		// execute_input, published once ipykernel's SIGINT handler is in
		// place: a SIGINT between busy and that point would be ignored.
		// Silent requests publish no execute_input; busy must do.
		busy, inputSeen, replied, idle bool
		// waiting is set while ctx has ended but the request has not
		// started: the interrupt is owed, to be sent once it does.
		waiting bool
		ctxDone = ctx.Done()
		grace   <-chan time.Time
		ctxErr  error
	)
	handle := func(rs []Received) {
		for _, r := range rs {
			switch {
			case r.Channel == Shell && r.Msg.Header.MsgType == "execute_reply":
				replied = true
				col.reply(r.Msg.Content)
			case r.Channel == Stdin && r.Msg.Header.MsgType == "input_request" && opts.OnInput != nil:
				var ir InputRequest
				_ = json.Unmarshal(r.Msg.Content, &ir)
				parent := r.Msg.Header
				sid := msg.Header.SubshellID
				inputs.Go(func() { k.answerInput(inputCtx, g, parent, sid, ir, opts.OnInput) })
			case r.Channel == IOPub && r.Msg.Header.MsgType == "status":
				var st iopubContent
				if json.Unmarshal(r.Msg.Content, &st) == nil {
					switch st.ExecutionState {
					case "busy":
						if !busy && opts.OnBusy != nil {
							opts.OnBusy()
						}
						busy = true
					case "idle":
						idle = true
					}
				}
			case r.Channel == IOPub:
				if r.Msg.Header.MsgType == "execute_input" {
					inputSeen = true
				}
				col.iopub(r.Msg.Header.MsgType, r.Msg.Content)
			}
		}
	}
	running := func() bool { return (inputSeen || busy && opts.Silent) && !replied && !idle }
	var graceTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	startGrace := func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
		graceTimer = time.NewTimer(k.opts.InterruptGrace)
		grace = graceTimer.C
	}
	interrupt := func() error {
		waiting = false
		res.Interrupted = true
		ictx, cancel := context.WithTimeout(context.Background(), k.opts.InterruptGrace)
		ierr := k.interrupt(ictx, g)
		cancel()
		if ierr != nil && g.dead() == nil {
			return errors.Join(ctxErr, ErrInterruptIgnored, ierr)
		}
		startGrace()
		return nil
	}
	// noReply fires when the kernel reported idle but sent no reply: an
	// interrupt that lands while ipykernel is already handling one makes it
	// drop the reply, and waiting for it would wait forever.
	var noReply <-chan time.Time
	// noIdle fires when the reply is in and the request's iopub messages
	// have stopped for noIdleWait without an idle status: a PUB socket drops
	// what a subscriber that falls behind cannot take (ZeroMQ's high-water
	// mark), and a flood of output can take the idle with it. Waiting for
	// it would wait forever, whatever ctx says.
	var (
		noIdle  *time.Timer
		noIdleC <-chan time.Time
	)
	defer func() {
		if noIdle != nil {
			noIdle.Stop()
		}
	}()
	for !(replied && idle) {
		if idle && !replied && noReply == nil {
			t := time.NewTimer(noReplyWait)
			defer t.Stop()
			noReply = t.C
		}
		if replied && !idle && noIdle == nil {
			noIdle = time.NewTimer(noIdleWait)
			noIdleC = noIdle.C
		}
		select {
		case <-noReply:
			if ctxErr != nil {
				return res, errors.Join(ctxErr, ErrNoReply)
			}
			return res, ErrNoReply
		case <-noIdleC:
			res.IdleLost = true
			if ctxErr != nil {
				return res, ctxErr
			}
			if res.Error != nil {
				return res, res.Error
			}
			return res, nil
		case <-box.notify:
			handle(box.take())
			if noIdle != nil {
				noIdle.Reset(noIdleWait)
			}
			if waiting && running() {
				if err := interrupt(); err != nil {
					return res, err
				}
			}
		case <-g.died:
			// Drain what arrived before the death.
			for _, r := range box.take() {
				if r.Channel == IOPub {
					col.iopub(r.Msg.Header.MsgType, r.Msg.Content)
				}
			}
			return res, g.diedErr
		case <-ctxDone:
			ctxDone = nil
			ctxErr = ctx.Err()
			if opts.Subshell != nil {
				// An interrupt would stop the main thread's code, not
				// this request's.
				handle(box.take())
				return res, errors.Join(ctxErr, ErrAbandoned)
			}
			// What already arrived decides whether this request runs:
			// select does not prefer the mailbox when both are ready.
			handle(box.take())
			switch {
			case replied || idle:
				// The code has finished; the rest of its messages are
				// on their way. An interrupt now would hit the next
				// request, someone else's.
			case running():
				if err := interrupt(); err != nil {
					return res, err
				}
			default:
				// Not started: queued behind other code, or about to
				// start. An interrupt now would stop that other code,
				// or be lost; it is sent once this request starts, if
				// that happens within the grace period.
				waiting = true
				startGrace()
			}
		case <-grace:
			if !waiting {
				return res, errors.Join(ctxErr, ErrInterruptIgnored)
			}
			if busy && !replied && !idle {
				// Taken up, but no execute_input came (a kernel that
				// publishes none): the code running is this request's.
				if err := interrupt(); err != nil {
					return res, err
				}
				continue
			}
			return res, errors.Join(ctxErr, ErrNotStarted)
		}
	}
	if ctxErr != nil {
		return res, ctxErr
	}
	if res.Error != nil {
		return res, res.Error
	}
	return res, nil
}

// answerInput asks onInput for the reply to one input_request and sends it
// back on stdin. A failed question is answered with end of input, so the
// code sees EOFError rather than waiting forever.
func (k *Kernel) answerInput(ctx context.Context, g *generation, parent wire.Header, subshellID string, ir InputRequest, onInput func(context.Context, InputRequest) (string, error)) {
	value, err := onInput(ctx, ir)
	if ctx.Err() != nil {
		return // the execution ended meanwhile; nobody waits for the reply
	}
	if err != nil {
		value = inputEOF
	}
	msg, err := wire.NewMessage("input_reply", k.session, map[string]string{"value": value})
	if err != nil {
		return
	}
	msg.ParentHeader = parent
	// A subshell's question is answered to that subshell.
	msg.Header.SubshellID = subshellID
	_ = g.conn.Send(ctx, Stdin, msg)
}
