package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// drain reads everything s has buffered, without waiting.
func drain(s *Subscription) []Event {
	var es []Event
	for {
		e, ok := s.TryNext()
		if !ok {
			return es
		}
		es = append(es, e)
	}
}

// trace writes events compactly: a Seq per event, "missed(N@Seq)" for a gap.
func trace(es []Event) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte(' ')
		}
		if e.Kind == Missed {
			fmt.Fprintf(&b, "missed(%d@%d)", e.Missed, e.Seq)
		} else {
			fmt.Fprintf(&b, "%d", e.Seq)
		}
	}
	return b.String()
}

func publishN(h *Hub, n int) {
	for range n {
		h.Publish(Event{Kind: RunOutput, Session: "s"})
	}
}

// checkSeqs fails unless es is the whole stream 1..len(es) in order, with
// times that never go backwards.
func checkSeqs(t *testing.T, name string, es []Event) {
	t.Helper()
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("%s: event %d has Seq %d (kind %s), want %d", name, i, e.Seq, e.Kind, i+1)
		}
		if i > 0 && e.Time.Before(es[i-1].Time) {
			t.Fatalf("%s: event Seq %d has a Time before the one of Seq %d", name, e.Seq, es[i-1].Seq)
		}
	}
}

func TestEventsOrderConcurrentPublishers(t *testing.T) {
	const publishers, each = 8, 300
	h := NewHub()
	defer h.Close()

	// One subscriber reads with Next while the events are published, one
	// with Ready and TryNext, one only after all are published.
	next := h.Subscribe(publishers*each, nil)
	selecting := h.Subscribe(publishers*each, nil)
	late := h.Subscribe(publishers*each, nil)
	defer next.Close()
	defer selecting.Close()
	defer late.Close()

	ctx := context.Background()
	var readers sync.WaitGroup
	var gotNext, gotSelect []Event
	readers.Add(2)
	go func() {
		defer readers.Done()
		for len(gotNext) < publishers*each {
			e, err := next.Next(ctx)
			if err != nil {
				t.Errorf("Next: %v", err)
				return
			}
			gotNext = append(gotNext, e)
		}
	}()
	go func() {
		defer readers.Done()
		for len(gotSelect) < publishers*each {
			if _, open := <-selecting.Ready(); !open {
				t.Errorf("Ready closed after %d events", len(gotSelect))
				return
			}
			gotSelect = append(gotSelect, drain(selecting)...)
		}
	}()

	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			for i := range each {
				h.Publish(Event{Kind: RunOutput, Session: fmt.Sprintf("p%d", p), Pid: i})
			}
		}()
	}
	pubs.Wait()
	readers.Wait()
	gotLate := drain(late)

	for _, c := range []struct {
		name string
		es   []Event
	}{{"Next", gotNext}, {"Ready+TryNext", gotSelect}, {"late", gotLate}} {
		if len(c.es) != publishers*each {
			t.Fatalf("%s: got %d events, want %d", c.name, len(c.es), publishers*each)
		}
		checkSeqs(t, c.name, c.es)
		nextPid := map[string]int{}
		for _, e := range c.es {
			if e.Pid != nextPid[e.Session] {
				t.Fatalf("%s: publisher %s's event %d came where %d was due", c.name, e.Session, e.Pid, nextPid[e.Session])
			}
			nextPid[e.Session]++
		}
		// All subscribers saw the same interleaving.
		for i := range c.es {
			if c.es[i].Session != gotLate[i].Session || c.es[i].Pid != gotLate[i].Pid {
				t.Fatalf("%s: Seq %d is %s/%d, but %s/%d for the late reader", c.name, c.es[i].Seq,
					c.es[i].Session, c.es[i].Pid, gotLate[i].Session, gotLate[i].Pid)
			}
		}
	}
}

func TestEventsSlowSubscriber(t *testing.T) {
	h := NewHub()
	defer h.Close()
	slow := h.Subscribe(4, nil)
	fast := h.Subscribe(1000, nil)
	defer slow.Close()
	defer fast.Close()

	// Nobody reads slow while this runs: it returning at all shows Publish
	// does not wait for it.
	publishN(h, 1000)

	got := drain(fast)
	if len(got) != 1000 {
		t.Fatalf("fast subscriber got %d events, want 1000", len(got))
	}
	checkSeqs(t, "fast", got)

	if tr, want := trace(drain(slow)), "1 2 3 4 missed(996@1000)"; tr != want {
		t.Fatalf("slow subscriber read %q, want %q", tr, want)
	}
	publishN(h, 3)
	if tr, want := trace(drain(slow)), "1001 1002 1003"; tr != want {
		t.Fatalf("after catching up, slow subscriber read %q, want %q", tr, want)
	}
	if tr, want := trace(drain(fast)), "1001 1002 1003"; tr != want {
		t.Fatalf("fast subscriber then read %q, want %q", tr, want)
	}
}

// TestEventsGaps checks where Missed events fall when a subscriber reads
// part of its buffer and falls behind again.
func TestEventsGaps(t *testing.T) {
	type step struct {
		publish int // events to publish
		read    int // then events to read; -1: all
	}
	for _, c := range []struct {
		name   string
		buffer int
		steps  []step
		want   string // all reads, in order
	}{
		{"gap after the buffered ones", 4, []step{{4, 2}, {10, -1}, {1, -1}},
			"1 2 3 4 5 6 missed(8@14) 15"},
		{"read frees a slot while a gap is pending", 4, []step{{10, 1}, {1, -1}},
			"1 2 3 4 missed(6@10) 11"},
		{"two gaps in the buffer", 2, []step{{3, 1}, {2, -1}},
			"1 2 missed(1@3) 4 missed(1@5)"},
		{"gap of one, then three, buffer 1", 1, []step{{2, 1}, {1, 0}, {3, -1}},
			"1 missed(1@2) 3 missed(3@6)"},
		{"no gap when read in time", 2, []step{{2, 2}, {2, 2}, {2, -1}},
			"1 2 3 4 5 6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHub()
			defer h.Close()
			s := h.Subscribe(c.buffer, nil)
			defer s.Close()
			var got []Event
			for _, st := range c.steps {
				publishN(h, st.publish)
				if st.read < 0 {
					got = append(got, drain(s)...)
					continue
				}
				for range st.read {
					e, ok := s.TryNext()
					if !ok {
						t.Fatalf("TryNext found nothing; read so far: %s", trace(got))
					}
					got = append(got, e)
				}
			}
			if tr := trace(got); tr != c.want {
				t.Fatalf("read %q, want %q", tr, c.want)
			}
			// Seq-wise consistent: strictly increasing, and with no filter
			// each Missed spans exactly the Seqs it replaces.
			for i := 1; i < len(got); i++ {
				if got[i].Seq <= got[i-1].Seq {
					t.Fatalf("Seq %d after %d", got[i].Seq, got[i-1].Seq)
				}
				if got[i].Kind == Missed && got[i-1].Seq+uint64(got[i].Missed) != got[i].Seq {
					t.Fatalf("missed(%d@%d) after Seq %d: the counts do not add up", got[i].Missed, got[i].Seq, got[i-1].Seq)
				}
			}
		})
	}
}

func TestEventsDefaultBuffer(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(0, nil)
	defer s.Close()
	publishN(h, DefaultBuffer+44)
	got := drain(s)
	if len(got) != DefaultBuffer+1 {
		t.Fatalf("read %d events, want %d and a Missed", len(got), DefaultBuffer)
	}
	if m := got[DefaultBuffer]; m.Kind != Missed || m.Missed != 44 || m.Seq != DefaultBuffer+44 {
		t.Fatalf("last event read: %+v, want missed(44@%d)", m, DefaultBuffer+44)
	}
}

func TestEventsFilter(t *testing.T) {
	h := NewHub()
	defer h.Close()
	onlyA := h.Subscribe(2, func(e *Event) bool { return e.Session == "a" })
	defer onlyA.Close()

	// Many events of b between those of a: none is buffered for onlyA, and
	// none counts against its buffer.
	for i := range 3 {
		h.Publish(Event{Kind: RunOutput, Session: "a", Pid: i})
		for range 50 {
			h.Publish(Event{Kind: RunOutput, Session: "b"})
		}
		e, ok := onlyA.TryNext()
		if !ok || e.Session != "a" || e.Pid != i {
			t.Fatalf("TryNext = %+v, %v; want a's event %d", e, ok, i)
		}
		if e.Seq != uint64(i*51+1) {
			t.Fatalf("a's event %d has Seq %d, want %d", i, e.Seq, i*51+1)
		}
		if tr := trace(drain(onlyA)); tr != "" {
			t.Fatalf("after a's event, read %q, want nothing", tr)
		}
	}

	// Overflow with a filter: only matching events are counted as missed.
	for range 5 {
		h.Publish(Event{Kind: RunOutput, Session: "a"})
		h.Publish(Event{Kind: RunOutput, Session: "b"})
	}
	got := drain(onlyA)
	// Seqs 154..163: a is at 154, 156, 158, 160, 162.
	if tr, want := trace(got), "154 156 missed(3@162)"; tr != want {
		t.Fatalf("read %q, want %q", tr, want)
	}
}

func TestEventsFilterSeesSeqAndTime(t *testing.T) {
	h := NewHub()
	defer h.Close()
	odd := h.Subscribe(10, func(e *Event) bool { return e.Seq%2 == 1 && !e.Time.IsZero() })
	defer odd.Close()
	publishN(h, 6)
	if tr, want := trace(drain(odd)), "1 3 5"; tr != want {
		t.Fatalf("read %q, want %q", tr, want)
	}
}

func TestEventsPublishSetsSeqAndTimeAndKeepsFields(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(1, nil)
	defer s.Close()
	out := &kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: "hi\n"}
	cause := errors.New("boom")
	h.Publish(Event{Seq: 99, Kind: RunOutput, Session: "s", Run: "r3", Output: out, Err: cause, Result: 7})
	e, ok := s.TryNext()
	if !ok {
		t.Fatal("nothing to read")
	}
	if e.Seq != 1 || e.Time.IsZero() {
		t.Fatalf("Seq %d, Time %v: Publish must set both", e.Seq, e.Time)
	}
	if e.Kind != RunOutput || e.Session != "s" || e.Run != "r3" || e.Output != out || e.Err != cause || e.Result != 7 {
		t.Fatalf("event changed on its way: %+v", e)
	}
}

func TestEventsNextWaitsForPublish(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(1, nil)
	defer s.Close()
	got := make(chan Event)
	go func() {
		e, err := s.Next(context.Background())
		if err != nil {
			t.Errorf("Next: %v", err)
		}
		got <- e
	}()
	h.Publish(Event{Kind: SessionCreated, Session: "x"})
	if e := <-got; e.Kind != SessionCreated || e.Session != "x" || e.Seq != 1 {
		t.Fatalf("Next = %+v", e)
	}
}

func TestEventsNextContext(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(4, nil)
	defer s.Close()

	// A Next that is waiting (or about to) ends with ctx's error.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Next(ctx)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next past deadline: %v, want context.DeadlineExceeded", err)
	}

	// What is buffered is returned even when ctx is done.
	publishN(h, 1)
	if e, err := s.Next(ctx); err != nil || e.Seq != 1 {
		t.Fatalf("Next with a buffered event and an ended ctx = %+v, %v", e, err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next once drained: %v, want context.DeadlineExceeded", err)
	}
}

func TestEventsHubCloseDrainsThenErrClosed(t *testing.T) {
	h := NewHub()
	s := h.Subscribe(2, nil)
	defer s.Close()
	waiting := h.Subscribe(2, nil)
	defer waiting.Close()

	publishN(h, 3) // s: 1 2 and a gap of 1; waiting's reader takes what comes
	for range 3 {
		if _, err := waiting.Next(context.Background()); err != nil {
			t.Fatalf("Next: %v", err)
		}
	}
	done := make(chan error)
	go func() {
		_, err := waiting.Next(context.Background())
		done <- err
	}()

	h.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiting Next after hub Close: %v, want ErrClosed", err)
	}
	h.Publish(Event{Kind: SessionCreated}) // does nothing
	h.Close()                              // idempotent

	var got []Event
	for {
		e, err := s.Next(context.Background())
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, e)
	}
	if tr, want := trace(got), "1 2 missed(1@3)"; tr != want {
		t.Fatalf("read after hub Close %q, want %q", tr, want)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next again: %v, want ErrClosed", err)
	}
	if _, open := <-s.Ready(); open {
		t.Fatal("Ready not closed after hub Close")
	}
	if n := h.Subscribers(); n != 0 {
		t.Fatalf("Subscribers after Close = %d", n)
	}

	late := h.Subscribe(1, nil)
	defer late.Close()
	if _, err := late.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next on a subscription to a closed hub: %v, want ErrClosed", err)
	}
}

func TestEventsSubscriptionClose(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(4, nil)
	other := h.Subscribe(4, nil)
	defer other.Close()
	if n := h.Subscribers(); n != 2 {
		t.Fatalf("Subscribers = %d, want 2", n)
	}
	publishN(h, 2)

	s.Close()
	s.Close() // idempotent
	if n := h.Subscribers(); n != 1 {
		t.Fatalf("Subscribers after Close = %d, want 1", n)
	}
	if e, ok := s.TryNext(); ok {
		t.Fatalf("TryNext after Close = %+v, want nothing (Close drops the buffer)", e)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	publishN(h, 1)
	if tr, want := trace(drain(other)), "1 2 3"; tr != want {
		t.Fatalf("other subscriber read %q, want %q", tr, want)
	}
}

// TestEventsCloseDuringPublish closes subscriptions, and finally the hub,
// while other goroutines publish; run with -race.
func TestEventsCloseDuringPublish(t *testing.T) {
	h := NewHub()
	stop := make(chan struct{})
	var pubs sync.WaitGroup
	for range 4 {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			for {
				select {
				case <-stop:
					return
				default:
					h.Publish(Event{Kind: RunOutput, Session: "s"})
				}
			}
		}()
	}

	var subs sync.WaitGroup
	for range 8 {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for range 20 {
				s := h.Subscribe(8, nil)
				var last uint64
				for range 10 {
					e, err := s.Next(context.Background())
					if err != nil {
						t.Errorf("Next: %v", err)
						return
					}
					if e.Seq <= last {
						t.Errorf("Seq %d after %d", e.Seq, last)
					}
					last = e.Seq
				}
				s.Close()
				if _, err := s.Next(context.Background()); !errors.Is(err, ErrClosed) {
					t.Errorf("Next after Close: %v, want ErrClosed", err)
				}
			}
		}()
	}
	subs.Wait()
	if n := h.Subscribers(); n != 0 {
		t.Errorf("Subscribers after every subscription closed = %d", n)
	}

	// A hub Close while publishing goes on ends a waiting reader.
	s := h.Subscribe(8, nil)
	h.Close()
	for {
		if _, err := s.Next(context.Background()); err != nil {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Next after hub Close: %v, want ErrClosed", err)
			}
			break
		}
	}
	s.Close()
	close(stop)
	pubs.Wait()
}

func TestEventsReadyHoldsNoStaleValue(t *testing.T) {
	h := NewHub()
	defer h.Close()
	s := h.Subscribe(4, nil)
	defer s.Close()
	select {
	case <-s.Ready():
		t.Fatal("Ready has a value before any event")
	default:
	}
	publishN(h, 3)
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready has no value with events buffered")
	}
	// The value stands for all three: reading one leaves it set for the rest.
	s.TryNext()
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready has no value with events still buffered after a TryNext")
	}
	drain(s)
	select {
	case <-s.Ready():
		t.Fatal("Ready has a value after TryNext drained the buffer")
	default:
	}
	// A gap left after the buffered events keeps Ready set until it is read.
	publishN(h, 6)
	<-s.Ready()
	for range 4 {
		s.TryNext()
	}
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready has no value with a Missed event still to read")
	}
	if e, ok := s.TryNext(); !ok || e.Kind != Missed || e.Missed != 2 {
		t.Fatalf("TryNext = %+v, %v; want missed(2)", e, ok)
	}
}

// BenchmarkPublish measures Publish with 1 and 8 subscribers: "read" with
// subscribers whose reader keeps up (drained every 64 events, on the same
// goroutine, so the cost of reading is in ns/op too), "full" with buffers
// that nobody reads, so every event is counted as missed.
func BenchmarkPublish(b *testing.B) {
	out := &kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: "x\n"}
	for _, n := range []int{1, 8} {
		for _, mode := range []string{"read", "full"} {
			b.Run(fmt.Sprintf("subscribers=%d/%s", n, mode), func(b *testing.B) {
				h := NewHub()
				defer h.Close()
				subs := make([]*Subscription, n)
				for i := range subs {
					subs[i] = h.Subscribe(DefaultBuffer, nil)
					defer subs[i].Close()
				}
				e := Event{Kind: RunOutput, Session: "s", Run: "r1", Output: out}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					h.Publish(e)
					i++
					if mode == "read" && i%64 == 0 {
						for _, s := range subs {
							for {
								if _, ok := s.TryNext(); !ok {
									break
								}
							}
						}
					}
				}
			})
		}
	}
}
