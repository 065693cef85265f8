package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

func newTestRun() *Run {
	ss := &Session{id: "s", eng: &Engine{events: NewHub()}}
	return &Run{id: "r1", ss: ss, changed: make(chan struct{}), done: make(chan struct{}), shownSum: newStreamHash(), state: StatusRunning}
}

func stream(r *Run, text string) {
	r.event(kernel.Event{Kind: "stream", Output: kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: text}})
}

// Output taken by wait_run comes once, in order, and a result rendered
// afterwards leaves out exactly what was taken.
func TestRunOutputDeliveredOnce(t *testing.T) {
	r := newTestRun()
	stream(r, "a\n")
	stream(r, "b\n")
	if got := r.TakeOutput(); got != "a\nb\n" {
		t.Fatalf("first take %q", got)
	}
	if got := r.TakeOutput(); got != "" {
		t.Fatalf("second take repeats: %q", got)
	}
	stream(r, "c\n")
	if r.lastLine != "c" {
		t.Errorf("last line %q", r.lastLine)
	}
	sh := r.ConsumeShown()
	if sh.n != 4 {
		t.Fatalf("shown %d bytes, want 4", sh.n)
	}
	// The kernel merged the three prints into one output: its first 4
	// bytes were delivered, and a result may leave them out.
	if skip, repeated := sh.SkipFor([]string{"a\nb\nc\n"}); skip != 4 || repeated {
		t.Errorf("SkipFor: skip %d, repeated %v; want 4, false", skip, repeated)
	}
	if skip, repeated := sh.SkipFor([]string{"a\nX\nc\n"}); skip != 0 || !repeated {
		t.Errorf("SkipFor of other output: skip %d, repeated %v; want 0, true", skip, repeated)
	}
	// After consumeShown the next block starts afresh.
	if got := r.TakeOutput(); got != "" {
		t.Errorf("output after the block's render: %q", got)
	}
}

// When the output differs from what was delivered (clear_output, a cut),
// the result repeats it and says so instead of losing any.
func TestRunOutputRepeatedWhenItDiffers(t *testing.T) {
	r := newTestRun()
	stream(r, "progress 1\n")
	r.TakeOutput()
	sh := r.ConsumeShown()
	if skip, repeated := sh.SkipFor([]string{"done\n"}); skip != 0 || !repeated {
		t.Errorf("SkipFor: skip %d, repeated %v; want 0, true", skip, repeated)
	}
}

// Output between two deliveries is bounded: first and newest halves kept,
// the middle counted.
func TestRunOutputBounded(t *testing.T) {
	r := newTestRun()
	half := maxPendingOutput / 2
	stream(r, "head")
	stream(r, strings.Repeat("x", 3*maxPendingOutput))
	stream(r, "tail")
	got := r.TakeOutput()
	if !strings.HasPrefix(got, "head") || !strings.HasSuffix(got, "tail") {
		t.Fatalf("kept %q ... %q", got[:10], got[len(got)-10:])
	}
	total := 4 + 3*maxPendingOutput + 4
	if want := "[... " + strconv.Itoa(total-2*half) + " bytes of output left out ...]"; !strings.Contains(got, want) {
		t.Errorf("no %q in the text", want)
	}
	if len(got) > maxPendingOutput+100 {
		t.Errorf("took %d bytes, more than the bound", len(got))
	}
	// What was delivered is no longer the output's beginning.
	if sh := r.ConsumeShown(); sh.n != -1 {
		t.Errorf("shown %d after a cut, want -1", sh.n)
	}
}
