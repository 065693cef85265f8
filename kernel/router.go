package kernel

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// router reads every message of one Conn and hands each to the request whose
// msg_id is its parent. It never blocks on a slow caller: each request has an
// unbounded mailbox. Messages whose parent nobody waits for are dropped, as
// jupyter_client's client drops iopub messages of other clients.
type router struct {
	mu      sync.Mutex
	pending map[string]*mailbox
	state   atomic.Value // string: last execution_state of the main shell seen on iopub
	done    chan struct{}
	// widgets, if set, sees every iopub comm message, whoever's request
	// it answers, before the request's mailbox gets it (an execution
	// that reads a widget's state after a comm_msg finds it applied), and
	// the outputs no request waits for, which an Output widget may
	// capture (a widget callback's, run for a comm_msg).
	widgets func(*wire.Message)
}

func newRouter(c Conn, widgets func(*wire.Message)) *router {
	r := &router{pending: make(map[string]*mailbox), done: make(chan struct{}), widgets: widgets}
	r.state.Store("starting")
	go r.run(c)
	return r
}

func (r *router) run(c Conn) {
	defer close(r.done)
	for rcv := range c.Messages() {
		// Only the main shell's busy and idle are its state: a subshell's,
		// or a control request's (create_subshell_request is answered on
		// another thread), say nothing of it, and a read beside a long
		// execution must not make the kernel look idle.
		if rcv.Channel == IOPub && rcv.Msg.Header.MsgType == "status" && rcv.Msg.ParentHeader.SubshellID == "" && !controlRequests[rcv.Msg.ParentHeader.MsgType] {
			var st struct {
				ExecutionState string `json:"execution_state"`
			}
			if json.Unmarshal(rcv.Msg.Content, &st) == nil && st.ExecutionState != "" {
				r.state.Store(st.ExecutionState)
			}
		}
		watch := r.widgets != nil && rcv.Channel == IOPub
		if watch && strings.HasPrefix(rcv.Msg.Header.MsgType, "comm_") {
			r.widgets(rcv.Msg)
		}
		r.mu.Lock()
		box := r.pending[rcv.Msg.ParentHeader.MsgID]
		r.mu.Unlock()
		if box != nil {
			box.push(rcv)
		} else if watch && capturedTypes[rcv.Msg.Header.MsgType] {
			r.widgets(rcv.Msg)
		}
	}
}

// controlRequests are the requests sent on control: the kernel handles them
// on a thread of their own, beside whatever the main shell runs.
// jupyter-resource-usage sends usage_request there every few seconds to a
// kernel JupyterLab also uses. Shell message types a client sends on
// control (ipykernel accepts them all there) cannot be told from the same
// types on the shell by their status, and still count.
var controlRequests = map[string]bool{
	"create_subshell_request": true, "list_subshell_request": true, "delete_subshell_request": true,
	"interrupt_request": true, "shutdown_request": true, "debug_request": true, "usage_request": true,
}

// register starts collecting the replies to msgID. Call it before sending
// the request, so no reply can arrive unseen.
func (r *router) register(msgID string) *mailbox {
	b := newMailbox()
	r.registerBox(msgID, b)
	return b
}

// registerBox collects the replies to msgID in an existing mailbox, so one
// reader can wait on several requests.
func (r *router) registerBox(msgID string, b *mailbox) {
	r.mu.Lock()
	r.pending[msgID] = b
	r.mu.Unlock()
}

func (r *router) unregister(msgID string) {
	r.mu.Lock()
	delete(r.pending, msgID)
	r.mu.Unlock()
}

// executionState is the kernel's last reported state: starting, idle or busy.
func (r *router) executionState() string { return r.state.Load().(string) }

// mailbox is an unbounded FIFO with a wake-up channel.
type mailbox struct {
	mu     sync.Mutex
	queue  []Received
	notify chan struct{} // capacity 1: "something is queued"
}

func newMailbox() *mailbox { return &mailbox{notify: make(chan struct{}, 1)} }

func (b *mailbox) push(r Received) {
	b.mu.Lock()
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// take returns everything queued so far.
func (b *mailbox) take() []Received {
	b.mu.Lock()
	q := b.queue
	b.queue = nil
	b.mu.Unlock()
	return q
}
