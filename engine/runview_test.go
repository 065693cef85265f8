package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

func display(r *Run, text string) {
	r.event(kernel.Event{Kind: "display_data", Output: kernel.Output{Type: kernel.OutputDisplayData,
		Data: map[string]json.RawMessage{"text/plain": json.RawMessage(`"` + text + `"`)}}})
}

// kinds names a snapshot's outputs: "stdout:text", "display_data", "clear_output".
func kinds(outs []history.Output) []string {
	var k []string
	for _, o := range outs {
		if o.OutputType == kernel.OutputStream {
			k = append(k, o.Name+":"+o.Text)
		} else {
			k = append(k, o.OutputType)
		}
	}
	return k
}

// A viewer gets the outputs from its cursor on, stream chunks merged until
// someone has read them, and takes nothing from wait_run.
func TestViewSinceDelta(t *testing.T) {
	r := newTestRun()
	stream(r, "a\n")
	stream(r, "b\n")
	display(r, "x")
	s := r.ViewSince(0)
	if got, want := kinds(s.Outputs), []string{"stdout:a\nb\n", "display_data"}; !slices.Equal(got, want) {
		t.Fatalf("first snapshot %q, want %q", got, want)
	}
	if s.Cursor != 2 || s.View.RunID != "r1" || s.View.Status != StatusRunning || s.Truncated {
		t.Fatalf("first snapshot %+v", s)
	}
	stream(r, "c\n")
	stream(r, "d\n")
	s2 := r.ViewSince(s.Cursor)
	if got, want := kinds(s2.Outputs), []string{"stdout:c\nd\n"}; !slices.Equal(got, want) || s2.Cursor != 3 {
		t.Fatalf("delta %q cursor %d, want %q cursor 3", got, s2.Cursor, want)
	}
	// Read entries never change: a chunk after a read is a new entry.
	stream(r, "e\n")
	if got := kinds(r.ViewSince(0).Outputs); !slices.Equal(got, []string{"stdout:a\nb\n", "display_data", "stdout:c\nd\n", "stdout:e\n"}) {
		t.Fatalf("from 0: %q", got)
	}
	if s := r.ViewSince(99); len(s.Outputs) != 0 || s.Cursor != 4 {
		t.Errorf("a cursor past the end: %d outputs, cursor %d", len(s.Outputs), s.Cursor)
	}
	if got := r.TakeOutput(); got != "a\nb\nc\nd\ne\n" {
		t.Errorf("wait_run's output after the viewers read: %q", got)
	}
}

// clear_output is logged (with its wait flag); what no viewer read before
// it is dropped, what one read stays.
func TestViewSinceClearOutput(t *testing.T) {
	r := newTestRun()
	stream(r, "kept\n")
	cur := r.ViewSince(0).Cursor
	for i := range 100 {
		r.event(kernel.Event{Kind: "clear_output", Wait: true})
		stream(r, strings.Repeat("#", i)+"\n")
	}
	s := r.ViewSince(cur)
	if got, want := kinds(s.Outputs), []string{"clear_output", "stdout:" + strings.Repeat("#", 99) + "\n"}; !slices.Equal(got, want) {
		t.Fatalf("after 100 redraws %q, want %q", got, want)
	}
	if w := string(s.Outputs[0].Metadata["wait"]); w != "true" {
		t.Errorf("clear_output(wait=True) has metadata %v", s.Outputs[0].Metadata)
	}
	r.event(kernel.Event{Kind: "clear_output"})
	s = r.ViewSince(0)
	if got := kinds(s.Outputs); !slices.Equal(got, []string{"stdout:kept\n", "clear_output", "stdout:" + strings.Repeat("#", 99) + "\n", "clear_output"}) {
		t.Fatalf("from 0: %q", got)
	}
	if s.Outputs[3].Metadata != nil {
		t.Errorf("clear_output(wait=False) has metadata %v", s.Outputs[3].Metadata)
	}
	if r.log.bytes != 4*viewEntryCost+len("stdout")*2+len("kept\n")+100+len("wait")+len("true") {
		t.Errorf("log counts %d bytes after dropping entries", r.log.bytes)
	}
}

// The log is bounded by outputs and by bytes, and says when it stopped.
func TestViewSinceBounded(t *testing.T) {
	r := newTestRun()
	for range MaxOutputs + 10 {
		display(r, "x")
	}
	s := r.ViewSince(0)
	if len(s.Outputs) != MaxOutputs || !s.Truncated {
		t.Fatalf("%d displays logged, truncated %v; want %d, true", len(s.Outputs), s.Truncated, MaxOutputs)
	}

	r = newTestRun()
	stream(r, "head\n")
	big := strings.Repeat("x", maxViewBytes/4)
	for range 5 {
		stream(r, big)
	}
	s = r.ViewSince(0)
	if !s.Truncated || len(s.Outputs) != 1 || len(s.Outputs[0].Text) > maxViewBytes || !strings.HasPrefix(s.Outputs[0].Text, "head\n") {
		t.Fatalf("truncated %v, %d outputs", s.Truncated, len(s.Outputs))
	}
	stream(r, "more")
	if s2 := r.ViewSince(s.Cursor); len(s2.Outputs) != 0 {
		t.Errorf("a truncated log grew: %q", kinds(s2.Outputs))
	}
	if !strings.HasSuffix(r.TakeOutput(), "more") {
		t.Errorf("wait_run lost output when the viewer log filled up")
	}
}

// With a real kernel: a snapshot taken while the run waits shows its first
// output, code and state; the final one names the blocks it recorded, and a
// second block of the same run starts with a clear.
func TestViewSinceRealKernel(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("view")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := "print('first', flush=True)\nanswer = input('go? ')\nprint('second', answer)"
	r, err := e.StartRun(ctx, ss, nil, "rerun_code", func(ctx context.Context, r *Run) (any, error) {
		if _, err := r.RunBlock(ctx, code, "", 0); err != nil {
			return nil, err
		}
		return r.RunBlock(ctx, "6*7", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	var mid RunSnapshot
	for {
		mid = r.ViewSince(0)
		if len(mid.Outputs) > 0 && mid.View.Status == StatusInputRequested {
			break
		}
		if ctx.Err() != nil || r.Ended() {
			t.Fatalf("no first output while the run waits for input: %+v", mid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := kinds(mid.Outputs); !slices.Equal(got, []string{"stdout:first\n"}) || mid.Code != code || len(mid.Blocks) != 0 || mid.View.Prompt != "go? " {
		t.Fatalf("mid-run snapshot: outputs %q, code %q, blocks %v, view %+v", got, mid.Code, mid.Blocks, mid.View)
	}
	if _, ok := r.Answer(0, Reply{Text: "now"}); !ok {
		t.Fatal("the question could not be answered")
	}
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await gave %v", got)
	}
	end := r.ViewSince(mid.Cursor)
	if !slices.Equal(end.Blocks, []int{0, 1}) || end.View.Status != StatusDone || end.Code != "6*7" || end.ExecutionCount != 2 {
		t.Fatalf("final snapshot: blocks %v, status %s, code %q, execution count %d", end.Blocks, end.View.Status, end.Code, end.ExecutionCount)
	}
	if got, want := kinds(end.Outputs), []string{"stdout:second now\n", "clear_output", "execute_result"}; !slices.Equal(got, want) {
		t.Fatalf("outputs after the question %q, want %q", got, want)
	}
	entries, _ := ss.Slice(nil, nil)
	if len(entries) != 2 || entries[1].Code != "6*7" {
		t.Fatalf("history %+v", entries)
	}
	if got := r.TakeOutput(); got != "" {
		t.Errorf("pending wait_run output after the run: %q", got)
	}
}

// Entries a run records without running them (a notebook's text cells)
// are among its blocks too.
func TestViewSinceRecordedEntries(t *testing.T) {
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("text")
	if err != nil {
		t.Fatal(err)
	}
	ss.Record(history.Entry{Code: "# before", CellType: "markdown", Outputs: []history.Output{}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_notebook", func(ctx context.Context, r *Run) (any, error) {
		r.Record(history.Entry{Code: "# Title", CellType: "markdown", Outputs: []history.Output{}})
		r.Record(history.Entry{Code: "text", CellType: "raw", Outputs: []history.Output{}})
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await gave %v", got)
	}
	if s := r.ViewSince(0); !slices.Equal(s.Blocks, []int{1, 2}) || s.View.Status != StatusDone {
		t.Fatalf("blocks %v, status %s; want [1 2], done", s.Blocks, s.View.Status)
	}
}

// A display with an id carries it to viewers; its updates are outputs of
// type update_display_data naming it, count as no new output, and those
// no viewer read yet are replaced by the next: a display updated in a loop
// is one entry between two reads. The event stream says the same.
func TestViewSinceUpdateDisplay(t *testing.T) {
	r := newTestRun()
	sub := r.ss.eng.events.Subscribe(64, nil)
	defer sub.Close()
	text := func(s string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"text/plain": json.RawMessage(`"` + s + `"`)}
	}
	r.event(kernel.Event{Kind: "display_data", Output: kernel.Output{Type: kernel.OutputDisplayData, Data: text("v0"), DisplayID: "d1"}})
	upd := func(s string) {
		r.event(kernel.Event{Kind: "update_display_data", Output: kernel.Output{Type: kernel.OutputDisplayData, Data: text(s), DisplayID: "d1"}})
	}
	s := r.ViewSince(0)
	if len(s.Outputs) != 1 || s.Outputs[0].Transient == nil || s.Outputs[0].Transient.DisplayID != "d1" {
		t.Fatalf("the display: %+v", s.Outputs)
	}
	for i := 1; i <= 20; i++ {
		upd(fmt.Sprintf("v%d", i))
	}
	s2 := r.ViewSince(s.Cursor)
	if got := kinds(s2.Outputs); !slices.Equal(got, []string{"update_display_data"}) {
		t.Fatalf("after 20 updates: %q, want one update", got)
	}
	if o := s2.Outputs[0]; string(o.Data["text/plain"]) != `"v20"` || o.Transient == nil || o.Transient.DisplayID != "d1" {
		t.Fatalf("the update: %+v", o)
	}
	// A read update stays; the next is an entry of its own.
	upd("v21")
	if got := kinds(r.ViewSince(0).Outputs); !slices.Equal(got, []string{"display_data", "update_display_data", "update_display_data"}) {
		t.Fatalf("from 0: %q", got)
	}
	// An update naming no display is not logged.
	r.event(kernel.Event{Kind: "update_display_data", Output: kernel.Output{Type: kernel.OutputDisplayData, Data: text("x")}})
	if n := len(r.ViewSince(0).Outputs); n != 3 {
		t.Fatalf("an update without an id was logged: %d entries", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var types []string
	for range 22 {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, e.Output.Type+"/"+e.Output.DisplayID)
	}
	if types[0] != "display_data/d1" || types[1] != "update_display_data/d1" || types[21] != "update_display_data/d1" {
		t.Errorf("published: %q", types)
	}
}
