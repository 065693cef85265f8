package mcpserver

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newTestRun() *run {
	return &run{id: "r1", changed: make(chan struct{}), done: make(chan struct{}), shownSum: newStreamHash(), state: runRunning}
}

func stream(r *run, text string) {
	r.event(kernel.Event{Kind: "stream", Output: kernel.Output{Type: kernel.OutputStream, Name: "stdout", Text: text}})
}

// Output taken by wait_run comes once, in order, and a result rendered
// afterwards leaves out exactly what was taken.
func TestRunOutputDeliveredOnce(t *testing.T) {
	r := newTestRun()
	stream(r, "a\n")
	stream(r, "b\n")
	if got := r.takeOutput(); got != "a\nb\n" {
		t.Fatalf("first take %q", got)
	}
	if got := r.takeOutput(); got != "" {
		t.Fatalf("second take repeats: %q", got)
	}
	stream(r, "c\n")
	if r.lastLine != "c" {
		t.Errorf("last line %q", r.lastLine)
	}
	sh := r.consumeShown()
	if sh.n != 4 {
		t.Fatalf("shown %d bytes, want 4", sh.n)
	}
	// The kernel merged the three prints into one output.
	res := &kernel.ExecuteResult{Outputs: []kernel.Output{{Type: kernel.OutputStream, Name: "stdout", Text: "a\nb\nc\n"}}}
	var out RunOutput
	content := renderWith(res, &out, 1000, nil, sh)
	text := contentText(content)
	if strings.Contains(text, "a\n") || strings.Contains(text, "b\n") || !strings.Contains(text, "c") {
		t.Errorf("final text repeats or loses output: %q", text)
	}
	if out.Stdout != "a\nb\nc\n" {
		t.Errorf("structured stdout %q, want all of it", out.Stdout)
	}
	// After consumeShown the next block starts afresh.
	if got := r.takeOutput(); got != "" {
		t.Errorf("output after the block's render: %q", got)
	}
}

// When the output differs from what was delivered (clear_output, a cut),
// the result repeats it and says so instead of losing any.
func TestRunOutputRepeatedWhenItDiffers(t *testing.T) {
	r := newTestRun()
	stream(r, "progress 1\n")
	r.takeOutput()
	sh := r.consumeShown()
	res := &kernel.ExecuteResult{Outputs: []kernel.Output{{Type: kernel.OutputStream, Name: "stdout", Text: "done\n"}}}
	var out RunOutput
	text := contentText(renderWith(res, &out, 1000, nil, sh))
	if !strings.Contains(text, "repeats what earlier calls returned") || !strings.Contains(text, "done") {
		t.Errorf("text %q", text)
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
	got := r.takeOutput()
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
	if sh := r.consumeShown(); sh.n != -1 {
		t.Errorf("shown %d after a cut, want -1", sh.n)
	}
}

func contentText(cs []mcp.Content) string {
	var b strings.Builder
	for _, c := range cs {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestRunListenersStack: when two calls wait on one run and the newer one
// leaves, progress goes to the older one again instead of to nobody.
func TestRunListenersStack(t *testing.T) {
	r := newTestRun()
	first, second := &attachment{token: "a"}, &attachment{token: "b"}
	leaveFirst := r.attach(first)
	leaveSecond := r.attach(second)
	if r.listenerLocked() != second {
		t.Fatalf("attached %v, want the newest call", r.listenerLocked())
	}
	leaveSecond()
	if r.listenerLocked() != first {
		t.Fatalf("after the newer call left, attached %v, want the older one", r.listenerLocked())
	}
	leaveSecond() // leaving twice changes nothing
	if r.listenerLocked() != first {
		t.Fatalf("a second detach moved the listener to %v", r.listenerLocked())
	}
	leaveFirst()
	if r.listenerLocked() != nil || len(r.listeners) != 0 {
		t.Fatalf("after both left: attached %v, %d listeners", r.listenerLocked(), len(r.listeners))
	}
	// Leaving out of order keeps the newest that is still there.
	leaveFirst, leaveSecond = r.attach(first), r.attach(second)
	leaveFirst()
	if r.listenerLocked() != second {
		t.Fatalf("the older call leaving moved the listener to %v", r.listenerLocked())
	}
	leaveSecond()
}
