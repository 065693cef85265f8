package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// newTestEngine is an engine with no pool, closed when the test ends.
func newTestEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// runCode runs code as a run of ss and waits for its block.
func runCode(t testing.TB, e *Engine, ss *Session, code string) *Block {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, code, "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Await(ctx, 2*time.Minute); got != AwaitDone {
		t.Fatalf("run %s: await gave %v", r.ID(), got)
	}
	v, err := r.Result()
	if err != nil {
		t.Fatal(err)
	}
	return v.(*Block)
}

// next reads the subscription's next event, failing after a minute.
func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no next event: %v", err)
	}
	return e
}

// TestEngineEventOrder follows one session through its life on the event
// stream, with a real kernel: the kinds come in the order things happen,
// the run's output arrives as output events before it finishes, and the
// run's question and its answer are events too.
func TestEngineEventOrder(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	sub := e.Events().Subscribe(1024, func(ev *Event) bool { return ev.Session == "order" })
	defer sub.Close()
	ss, err := e.LookupOrCreate("order")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		// Nothing printed before the question: stdout (iopub) and the
		// question (stdin) travel on different channels, in either order.
		return r.RunBlock(ctx, "name = input('name? ')\nprint('hello', name)", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	var outputs []string
	var seq uint64
	for {
		ev := next(t, sub)
		if ev.Seq <= seq {
			t.Fatalf("event %d (%s) after %d", ev.Seq, ev.Kind, seq)
		}
		seq = ev.Seq
		if ev.Kind != RunOutput || len(kinds) == 0 || kinds[len(kinds)-1] != RunOutput {
			kinds = append(kinds, ev.Kind)
		}
		switch ev.Kind {
		case RunOutput:
			outputs = append(outputs, ev.Output.Text)
		case InputRequested:
			if ev.Prompt != "name? " || ev.Run != r.ID() {
				t.Errorf("input_requested %+v", ev)
			}
			if _, ok := r.Answer(0, Reply{Text: "bob"}); !ok {
				t.Fatal("the question could not be answered")
			}
		case RunFinished:
			if ev.Status != "ok" || ev.Err != nil {
				t.Fatalf("run_finished: status %q, err %v", ev.Status, ev.Err)
			}
			if b, ok := ev.Result.(*Block); !ok || b.Run != r.ID() {
				t.Fatalf("run_finished carries %T %+v", ev.Result, ev.Result)
			}
		}
		if ev.Kind == RunFinished {
			break
		}
	}
	want := []Kind{SessionCreated, RunQueued, RunStarted, KernelStarted, InputRequested, InputAnswered, RunOutput, HistoryChanged, RunFinished}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events\n got %v\nwant %v", kinds, want)
	}
	if got := strings.Join(outputs, ""); got != "hello bob\n" {
		t.Errorf("output events carried %q", got)
	}

	// A reset restarts the kernel and clears the history; a delete stops
	// it and removes the session.
	if _, err := e.Reset(ctx, ss, nil, true, false); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, ss, nil); err != nil {
		t.Fatal(err)
	}
	kinds = nil
	for len(kinds) < 4 {
		kinds = append(kinds, next(t, sub).Kind)
	}
	if want := []Kind{KernelRestarted, HistoryChanged, KernelStopped, SessionDeleted}; !slices.Equal(kinds, want) {
		t.Fatalf("after the run\n got %v\nwant %v", kinds, want)
	}
}

// TestEngineRunsDoNotOverlapOnTheStream: a session runs one thing at a
// time, and its events say so: the next run starts after the previous one
// finished, never between its end and its run_finished.
func TestEngineRunsDoNotOverlapOnTheStream(t *testing.T) {
	e := newTestEngine(t, Config{})
	sub := e.Events().Subscribe(4096, func(ev *Event) bool { return ev.Kind == RunStarted || ev.Kind == RunFinished })
	defer sub.Close()
	ss, err := e.LookupOrCreate("turns")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var last *Run
	for range n {
		if last, err = e.StartRun(context.Background(), ss, nil, "test", func(context.Context, *Run) (any, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	<-last.Done()
	running := ""
	for range 2 * n {
		ev := next(t, sub)
		switch ev.Kind {
		case RunStarted:
			if running != "" {
				t.Fatalf("%s started while %s had not finished", ev.Run, running)
			}
			running = ev.Run
		case RunFinished:
			if ev.Run != running {
				t.Fatalf("%s finished while %q was the one running", ev.Run, running)
			}
			running = ""
		}
	}
}

// TestEngineSlowSubscriber: a subscriber that reads nothing neither slows
// a run nor another subscriber; it is told how many events it missed and
// catches up from the history.
func TestEngineSlowSubscriber(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	slow := e.Events().Subscribe(4, nil)
	defer slow.Close()
	fast := e.Events().Subscribe(4096, func(ev *Event) bool { return ev.Kind == RunOutput })
	defer fast.Close()
	ss, err := e.LookupOrCreate("slow")
	if err != nil {
		t.Fatal(err)
	}
	const lines = 300
	got := make(chan [2]int)
	go func() {
		n, events := 0, 0
		for n < lines {
			ev, err := fast.Next(context.Background())
			if err != nil {
				break
			}
			events++
			n += strings.Count(ev.Output.Text, "\n")
		}
		got <- [2]int{n, events}
	}()
	// Each line flushed on its own, so each is an event of its own.
	b := runCode(t, e, ss, fmt.Sprintf("for i in range(%d):\n    print(i, flush=True)", lines))
	if b.Status != "ok" {
		t.Fatalf("run: %s %s", b.Status, b.Note)
	}
	res := <-got
	if res[0] != lines {
		t.Fatalf("the fast subscriber got %d lines, want %d", res[0], lines)
	}
	// The slow one has its first 4 events, then the count of the rest:
	// every event published after them, the run's output among them.
	var first, gap Event
	for i := 0; i < 5; i++ {
		ev, ok := slow.TryNext()
		if !ok {
			t.Fatalf("the slow subscriber has only %d events", i)
		}
		if i == 0 {
			first = ev
		}
		if i < 4 && ev.Kind == Missed {
			t.Fatalf("event %d is %+v, before the buffer was full", i, ev)
		}
		gap = ev
	}
	if gap.Kind != Missed || gap.Missed < res[1]-4 || int(gap.Seq-first.Seq)+1 != 4+gap.Missed {
		t.Fatalf("after 4 events from seq %d: %+v; the run published %d output events", first.Seq, gap, res[1])
	}
	// What it missed is in the history.
	if h := ss.History(); len(h) != 1 || h[0].Outputs[0].Text == "" {
		t.Fatalf("history after the run: %+v", h)
	}
}

// BenchmarkOutputEventLatency measures how long a run's output takes from
// the engine receiving it from the kernel (the event's Time, set as the
// engine publishes it) to a subscriber reading it; it reports the median
// and the 99th percentile in microseconds.
func BenchmarkOutputEventLatency(b *testing.B) {
	ipytest.Require(b)
	e := newTestEngine(b, Config{})
	ss, err := e.LookupOrCreate("bench")
	if err != nil {
		b.Fatal(err)
	}
	runCode(b, e, ss, "1") // the kernel is up
	sub := e.Events().Subscribe(8192, func(ev *Event) bool { return ev.Kind == RunOutput })
	defer sub.Close()
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := sub.Next(context.Background())
			if err != nil {
				return
			}
			lat = append(lat, time.Since(ev.Time))
		}
	}()
	b.ResetTimer()
	for range b.N {
		runCode(b, e, ss, "import time\nfor i in range(20):\n    print(i, flush=True)\n    time.sleep(0.001)")
	}
	b.StopTimer()
	sub.Close()
	<-done
	if len(lat) == 0 {
		b.Fatal("no output events")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")
	b.ReportMetric(float64(len(lat))/float64(b.N), "events/op")
}
