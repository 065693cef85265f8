package engine

import (
	"context"
	"testing"
	"time"
)

// The turnstile lets tickets through strictly in order, whatever order the
// holders arrive in, and a finished ticket that never waited still passes
// the turn on.
func TestTurnstileOrder(t *testing.T) {
	ts := NewTurnstile()
	tickets := make([]Ticket, 5)
	for i := range tickets {
		tickets[i] = ts.Take("s")
	}
	other := ts.Take("other")
	if err := ts.Wait(context.Background(), other); err != nil {
		t.Fatal("another session's first ticket must not wait")
	}
	order := make(chan int, len(tickets))
	for _, i := range []int{4, 2, 3} {
		go func() {
			if err := ts.Wait(context.Background(), tickets[i]); err != nil {
				t.Error(err)
				return
			}
			order <- i
			ts.Done(tickets[i])
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := ts.Wait(ctx, tickets[4]); err == nil {
		t.Fatal("ticket 4 passed before 0 and 1 finished")
	}
	cancel()
	ts.Done(tickets[1]) // finished out of turn (e.g. failed validation)
	ts.Done(tickets[0])
	for _, want := range []int{2, 3, 4} {
		if got := <-order; got != want {
			t.Fatalf("ticket %d went before %d", got, want)
		}
	}
	ts.Done(tickets[4]) // twice is harmless
}
