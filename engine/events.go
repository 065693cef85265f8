// The event stream.
//
// The engine publishes what happens to its sessions and runs as a stream of
// events: a session created or deleted, a kernel started, died, restarted or
// stopped, a run queued, started, producing output, asking for input and
// finishing, a session's history growing. Anything that wants to follow
// sessions and runs as they change — a live notebook view, progress
// notifications for a running tool call, resource-updated notifications —
// subscribes to a Hub and reads events, instead of polling through tool calls.
//
// The guarantees:
//
//   - Order. Every published event gets the next engine-wide sequence number
//     (Seq, from 1, one more per event), and every subscriber reads its events
//     in Seq order. Events of one session therefore arrive in the order they
//     were published.
//   - Bounded buffers. Each subscriber has a buffer of a fixed number of
//     events; the hub never holds more than that for it.
//   - The publisher never waits. Publish appends to each subscriber's buffer
//     under one short lock and returns; it never blocks on a subscriber that
//     does not read, and there is no goroutine per subscriber.
//   - Missed. When a subscriber's buffer is full, the events it cannot take
//     are dropped for it and counted; it reads one Missed event in their
//     place, in the position of the gap: after the events buffered before it
//     and before the ones published after it. The subscriber then knows its
//     view is stale and catches up from the sessions' history and the runs'
//     state, which the engine keeps whatever the subscribers read.

package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Kind names what happened.
type Kind string

// The kinds of events.
const (
	SessionCreated  Kind = "session_created"
	SessionDeleted  Kind = "session_deleted"
	KernelStarted   Kind = "kernel_started"
	KernelDied      Kind = "kernel_died"
	KernelRestarted Kind = "kernel_restarted"
	KernelStopped   Kind = "kernel_stopped"
	RunQueued       Kind = "run_queued"
	RunStarted      Kind = "run_started"
	RunOutput       Kind = "run_output" // a stream chunk, a display, an update_display_data or a clear_output, as it arrives (Output.Type says which)
	InputRequested  Kind = "input_requested"
	InputAnswered   Kind = "input_answered"
	RunFinished     Kind = "run_finished"
	HistoryChanged  Kind = "history_changed"
	WidgetUpdate    Kind = "widget_update" // a widget model of the session's kernel changed (coalesced; see WidgetChange)
	Missed          Kind = "missed"        // stands in for events a slow subscriber's full buffer dropped
)

// Event is one thing that happened in the engine. Fields beyond Seq, Time,
// Kind and Session are set where the kind calls for them.
//
// Every subscriber gets a copy of the Event, but the values its pointer,
// interface and error fields refer to (Output, Result, Err, Widget) are shared by all
// subscribers: treat them as read-only.
//
// A Missed event is not published: a subscription makes it up in place of the
// events its full buffer dropped. Its Seq and Time are those of the last
// event dropped, so the gap covers the Seqs after the event read before it, up
// to and including its own; Missed counts the dropped events (with a filter,
// only those the filter accepted, so Missed may be less than the span of
// Seqs). Its Session is empty. Seq stays strictly increasing across Missed
// events.
type Event struct {
	Seq      uint64         // engine-wide, from 1, increasing by one per published event
	Time     time.Time      // when it was published
	Kind     Kind           // what happened
	Session  string         // the session's name; empty for Missed
	Run      string         // run id ("r3") for run and input events
	Tool     string         // the tool that started the run (run_queued)
	Output   *kernel.Output // run_output
	Prompt   string         // input_requested
	Password bool           // input_requested
	Status   string         // run_finished: "ok", "error", "timeout", "interrupted", "" if it failed to run
	Result   any            // run_finished: the run's result value (opaque here)
	Err      error          // kernel_died: why; run_finished: why it failed to run
	Pid      int            // kernel_started, kernel_restarted
	Entries  int            // history_changed: entries in the history now
	Missed   int            // missed: how many events were dropped here
	Widget   *WidgetChange  // widget_update
}

// DefaultBuffer is the number of events a subscription buffers when
// Subscribe is given no positive size.
const DefaultBuffer = 256

// ErrClosed is returned by Subscription.Next once the subscription has ended
// (the hub or the subscription was closed) and nothing is left to read.
var ErrClosed = errors.New("engine: event stream closed")

// Hub publishes events to subscribers. Publish never blocks and never waits
// for a subscriber: each has a bounded buffer; when it is full, the events it
// cannot take are counted, and it reads one Missed event in their place
// (Missed: the count), after the events buffered before the gap and before
// the ones after it. It can then catch up from the history and the runs'
// state.
//
// A Hub is safe for concurrent use. The zero Hub is not ready; use NewHub.
type Hub struct {
	mu     sync.Mutex
	seq    uint64
	subs   []*Subscription // in Subscribe order
	closed bool
	count  atomic.Int32 // len(subs), readable without mu
	cur    Event        // the event being published, under mu
}

// NewHub returns a hub with no subscribers.
func NewHub() *Hub {
	return &Hub{}
}

// Publish sets e's Seq and Time and hands a copy of it to every subscriber
// whose filter accepts it. It does not wait for any subscriber to read. After
// Close it does nothing (and uses no sequence number).
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.seq++
	e.Seq = h.seq
	// Taken under the lock so that Time never goes backwards as Seq goes up.
	e.Time = time.Now()
	// The filters get a pointer to h.cur rather than to e, which would make
	// e escape and cost an allocation per Publish.
	h.cur = e
	for _, s := range h.subs {
		if s.filter != nil && !s.filter(&h.cur) {
			continue
		}
		s.push(&h.cur)
	}
	h.cur = Event{} // hold no references between calls
}

// Seq is the sequence number of the last event published (0 before the
// first): a subscriber that has read an event with this Seq or a later one
// has seen everything published so far.
func (h *Hub) Seq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Subscribe starts a subscription to the events published from now on.
// buffer is how many events it holds unread (DefaultBuffer if buffer <= 0);
// past that, events are counted as missed (see Hub). The buffer's memory
// grows with use, up to that size.
//
// filter, if not nil, picks the events to deliver: it is called from Publish
// under the hub's lock (and sometimes under a session's or a run's), so it
// must be cheap, must not block, must not call the Hub, a Subscription or
// the engine, and must not change the event. Events it
// rejects are neither buffered nor counted as missed.
//
// Subscribe on a closed hub returns a subscription that has already ended.
// The caller must Close the subscription when done with it.
func (h *Hub) Subscribe(buffer int, filter func(*Event) bool) *Subscription {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &Subscription{
		hub:    h,
		filter: filter,
		limit:  buffer,
		ready:  make(chan struct{}, 1),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.from = h.seq
	if h.closed {
		s.end()
		return s
	}
	h.subs = append(h.subs, s)
	h.count.Store(int32(len(h.subs)))
	return s
}

// From is the Seq of the last event published before the subscription
// began: it delivers those after it.
func (s *Subscription) From() uint64 { return s.from }

// Subscribers returns how many subscriptions are open, so that a publisher
// can skip building a costly event when nobody listens. The count may change
// as soon as it is read.
func (h *Hub) Subscribers() int {
	return int(h.count.Load())
}

// Close ends every subscription: each one's Next returns what it has
// buffered, then ErrClosed. Publish does nothing after Close. Close is
// idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, s := range h.subs {
		s.mu.Lock()
		s.end()
		s.mu.Unlock()
	}
	h.subs = nil
	h.count.Store(0)
}

func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.Index(h.subs, s); i >= 0 {
		h.subs = slices.Delete(h.subs, i, i+1)
	}
	h.count.Store(int32(len(h.subs)))
}

// Subscription is one subscriber's view of a Hub: a bounded buffer of the
// events published since Subscribe that its filter accepted. Read it with
// Next, or with Ready and TryNext in a select loop. It is safe for
// concurrent use, but events are meant for one reader: two goroutines reading
// one subscription each see part of the stream.
type Subscription struct {
	hub    *Hub
	from   uint64 // the hub's Seq when it began
	filter func(*Event) bool
	limit  int           // most events buffered
	ready  chan struct{} // holds a value while there is something to read; closed when ended

	mu    sync.Mutex
	ring  []slot // grows by doubling up to limit
	head  int    // index in ring of the oldest slot
	n     int    // slots in use
	gap   gap    // events dropped after the newest slot
	ended bool   // no more events will come; ready is closed
}

// slot is one buffered event and the gap (if any) just before it.
type slot struct {
	before gap
	e      Event
}

// gap counts events dropped in a row for a subscriber with a full buffer;
// last is the newest of them.
type gap struct {
	count    int
	lastSeq  uint64
	lastTime time.Time
}

func (g gap) event() Event {
	return Event{Seq: g.lastSeq, Time: g.lastTime, Kind: Missed, Missed: g.count}
}

// push buffers e, or counts it as missed when the buffer is full. Called
// under the hub's lock.
func (s *Subscription) push(e *Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.n == s.limit {
		s.gap.count++
		s.gap.lastSeq = e.Seq
		s.gap.lastTime = e.Time
		return
	}
	if s.n == len(s.ring) {
		s.grow()
	}
	sl := &s.ring[(s.head+s.n)%len(s.ring)]
	sl.before = s.gap
	sl.e = *e
	s.gap = gap{}
	s.n++
	s.signal()
}

func (s *Subscription) grow() {
	size := 2 * len(s.ring)
	if size == 0 {
		size = 16
	}
	if size > s.limit {
		size = s.limit
	}
	ring := make([]slot, size)
	for i := 0; i < s.n; i++ {
		ring[i] = s.ring[(s.head+i)%len(s.ring)]
	}
	s.ring, s.head = ring, 0
}

// signal makes sure ready holds a value. Called under s.mu, not after end.
func (s *Subscription) signal() {
	if len(s.ready) > 0 {
		return // only readers take the value, and they take s.mu after
	}
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// end marks the subscription as ended and wakes every reader. Called under
// s.mu (or before s is shared).
func (s *Subscription) end() {
	if !s.ended {
		s.ended = true
		// Drop a pending value, so that a receive from Ready reports the
		// end at once rather than one value later.
		select {
		case <-s.ready:
		default:
		}
		close(s.ready)
	}
}

// pop takes the next event: a Missed event for a gap, else the oldest
// buffered event. Called under s.mu.
func (s *Subscription) pop() (e Event, ok bool) {
	ok = true
	switch {
	case s.n > 0 && s.ring[s.head].before.count > 0:
		sl := &s.ring[s.head]
		e = sl.before.event()
		sl.before = gap{}
	case s.n > 0:
		sl := &s.ring[s.head]
		e = sl.e
		*sl = slot{} // drop references to Output, Result, Err
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	case s.gap.count > 0:
		e = s.gap.event()
		s.gap = gap{}
	default:
		ok = false
	}
	if !s.ended {
		if s.n > 0 || s.gap.count > 0 {
			s.signal() // for a reader that took the value while more was left
		} else if len(s.ready) > 0 {
			select {
			case <-s.ready: // nothing left: no stale value for select loops
			default:
			}
		}
	}
	return e, ok
}

// Next returns the next event, waiting for one if none is buffered. It
// returns ctx's error if ctx ends first, and ErrClosed once the subscription
// has ended and its buffer is drained. A buffered event is returned even if
// ctx has already ended.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		e, ok := s.pop()
		ended := s.ended
		s.mu.Unlock()
		switch {
		case ok:
			return e, nil
		case ended:
			return Event{}, ErrClosed
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// TryNext returns the next event and true if one is buffered, or false at
// once if none is.
func (s *Subscription) TryNext() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pop()
}

// Ready returns a channel that holds a value while the subscription has
// something to read, and that is closed when the subscription ends. It lets a
// select loop wait for events next to other channels:
//
//	for {
//		select {
//		case _, open := <-sub.Ready():
//			for {
//				e, ok := sub.TryNext()
//				if !ok {
//					break
//				}
//				handle(e)
//			}
//			if !open {
//				return // ended, and everything buffered was read
//			}
//		case <-other:
//			...
//		}
//	}
//
// After a receive from Ready, call TryNext until it returns false: the value
// stands for all buffered events, not one, and a new one is sent only when
// an event arrives after TryNext reported the buffer empty. If another
// goroutine reads the same subscription, a value may be stale and TryNext
// returns false at once; that is harmless in the loop above. Once the channel
// is closed, no more events arrive; TryNext still returns what is buffered.
func (s *Subscription) Ready() <-chan struct{} {
	return s.ready
}

// Close unsubscribes: the hub stops delivering to s, what s buffered is
// dropped, Next returns ErrClosed and TryNext false. Close is idempotent and
// safe to call concurrently with Publish and with reads of s.
func (s *Subscription) Close() {
	s.hub.remove(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end()
	s.ring, s.head, s.n, s.gap = nil, 0, 0, gap{}
}
