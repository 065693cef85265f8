package engine

import (
	"context"
	"sync"
)

// Turnstile hands out places in line per session in the order requests
// arrive, and lets the holder of the lowest unfinished ticket through. The
// adapter takes a ticket where requests are read one after another (its
// ordering transport) and hands it to the call's handler, which joins the
// session's queue with it (Turnstile.Place): calls that the SDK runs on
// goroutines of their own still join in the order they were sent.
type Turnstile struct {
	mu    sync.Mutex
	queue map[string]*turnQueue
}

// Ticket is a place in one session's line.
type Ticket struct {
	Session string
	N       uint64
}

type turnQueue struct {
	next     uint64          // next ticket to hand out
	finished map[uint64]bool // finished tickets above head
	head     uint64          // lowest unfinished ticket
	changed  chan struct{}   // closed and replaced when head moves
}

// NewTurnstile returns a turnstile with no tickets out.
func NewTurnstile() *Turnstile { return &Turnstile{queue: make(map[string]*turnQueue)} }

func (t *Turnstile) q(session string) *turnQueue {
	q := t.queue[session]
	if q == nil {
		q = &turnQueue{finished: map[uint64]bool{}, changed: make(chan struct{})}
		t.queue[session] = q
	}
	return q
}

// Take hands out the session's next ticket.
func (t *Turnstile) Take(session string) Ticket {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.q(session)
	n := q.next
	q.next++
	return Ticket{Session: session, N: n}
}

// Wait blocks until tk is the session's lowest unfinished ticket.
func (t *Turnstile) Wait(ctx context.Context, tk Ticket) error {
	for {
		t.mu.Lock()
		q := t.q(tk.Session)
		if q.head >= tk.N {
			t.mu.Unlock()
			return nil
		}
		ch := q.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done finishes tk; finishing twice is harmless.
func (t *Turnstile) Done(tk Ticket) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.q(tk.Session)
	if tk.N < q.head {
		return
	}
	q.finished[tk.N] = true
	moved := false
	for q.finished[q.head] {
		delete(q.finished, q.head)
		q.head++
		moved = true
	}
	if moved {
		close(q.changed)
		q.changed = make(chan struct{})
	}
}

// Place is tk as the session's queue takes it (see Place).
func (t *Turnstile) Place(tk Ticket) Place { return place{t: t, tk: tk} }

type place struct {
	t  *Turnstile
	tk Ticket
}

func (p place) Wait(ctx context.Context) error { return p.t.Wait(ctx, p.tk) }
func (p place) Done()                          { p.t.Done(p.tk) }
