package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine/widgettext"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

func requireWidgets(t *testing.T) {
	t.Helper()
	ipytest.Require(t)
	if out, err := exec.Command("python3", "-c", "import ipywidgets, tqdm").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and python3 lacks ipywidgets or tqdm: %v %s", err, out)
		}
		t.Skipf("python3 lacks ipywidgets or tqdm: %s", out)
	}
}

// widgetView is the block's widget view output.
func widgetView(t *testing.T, b *Block) kernel.Output {
	t.Helper()
	for _, o := range b.Result.Outputs {
		if _, ok := widgettext.ModelID(o); ok {
			return o
		}
	}
	t.Fatalf("no widget view among %d outputs of %q", len(b.Result.Outputs), b.Code)
	return kernel.Output{}
}

// TestWidgetText: the text a run's widget view stands for, from the
// widgets' state at the end of the run, with a real kernel.
func TestWidgetText(t *testing.T) {
	requireWidgets(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("w")
	if err != nil {
		t.Fatal(err)
	}
	text := func(code string) string {
		t.Helper()
		b := runCode(t, e, ss, code)
		if b.Status != "ok" {
			t.Fatalf("%q: status %s %v", code, b.Status, b.Result.Error)
		}
		s, ok := ss.WidgetText(widgetView(t, b))
		if !ok {
			t.Fatalf("%q: the widget view was not rendered", code)
		}
		return s
	}
	if got, want := text("import ipywidgets as w\nw.IntSlider(value=3, min=0, max=10, description='n')"), `IntSlider "n": 3 (0–10, step 1)`; got != want {
		t.Errorf("slider:\n got %q\nwant %q", got, want)
	}
	// tqdm.auto shows the notebook bar, then updates it; the run's text is
	// the line of its last state, as tqdm prints it in a terminal.
	got := text("from tqdm.auto import tqdm\nfor i in tqdm(range(5)): pass")
	if !regexp.MustCompile(`^100%\|██████████\| 5/5 \[\d\d:\d\d<00:00, +\d+(\.\d+)?(it/s|s/it)\]$`).MatchString(got) {
		t.Errorf("tqdm: %q", got)
	}
	if got, want := text("out = w.Output()\nwith out:\n    print('hi')\nout"), "hi"; got != want {
		t.Errorf("Output:\n got %q\nwant %q", got, want)
	}
	b := runCode(t, e, ss, "def f(x):\n    print('x is', x)\n    return x * 2\nw.interact(f, x=5);")
	if got := len(b.Result.Outputs); got != 1 {
		t.Errorf("interact left %d outputs in the cell, want its view alone", got)
	}
	s, ok := ss.WidgetText(widgetView(t, b))
	if want := "VBox\n  IntSlider \"x\": 5 (-5–15, step 1)\n  x is 5\n  10"; !ok || s != want {
		t.Errorf("interact:\n got %q\nwant %q", s, want)
	}
}

// TestWidgetUpdateEvents: a tqdm loop's changes reach the event stream as
// widget_update events, coalesced, before the run's run_finished; the last
// one for the bar carries its final value.
func TestWidgetUpdateEvents(t *testing.T) {
	requireWidgets(t)
	e := newTestEngine(t, Config{})
	sub := e.Events().Subscribe(1<<16, func(ev *Event) bool {
		return ev.Session == "ev" && (ev.Kind == WidgetUpdate || ev.Kind == RunFinished)
	})
	defer sub.Close()
	ss, err := e.LookupOrCreate("ev")
	if err != nil {
		t.Fatal(err)
	}
	// Every step updates the bar (mininterval=0): 300 comm_msg updates of
	// the FloatProgress, and as many of each HTML. (Not many more: iopub
	// is PUB/SUB, and a flood larger than the kernel's send queue drops
	// messages when the reader falls behind, as under the race detector.)
	const steps = 300
	b := runCode(t, e, ss, "from tqdm.auto import tqdm\nfor i in tqdm(range(300), mininterval=0, miniters=1): pass")
	box, _ := widgettext.ModelID(widgetView(t, b))
	w, ok := ss.Widgets().Get(box)
	if !ok {
		t.Fatal("the bar's box is not tracked")
	}
	children := w.State["children"].([]any)
	progress := children[1].(string)[len("IPY_MODEL_"):]
	var (
		events int
		last   any
	)
	for {
		ev := next(t, sub)
		if ev.Kind == RunFinished {
			break
		}
		if c := ev.Widget; c.ModelID == progress {
			events++
			if v, ok := c.State["value"]; ok {
				last = v
			}
		}
	}
	if last != json.Number("300.0") {
		t.Errorf("the last widget_update of the bar says value %v, want 300.0", last)
	}
	if events == 0 || events > steps {
		t.Errorf("%d widget_update events for the bar's %d updates", events, steps)
	}
	t.Logf("%d widget_update events for %d updates", events, steps)
}

// TestWidgetUpdatesCoalesce: the changes gathered between two flushes make
// one widget_update per model, with the latest value of each key changed;
// a closed model's says it is gone; a restart drops what gathered.
func TestWidgetUpdatesCoalesce(t *testing.T) {
	ss := &Session{id: "s", eng: &Engine{events: NewHub()}}
	ss.widgets.delay = time.Hour // flushed by hand only
	sub := ss.eng.events.Subscribe(100, nil)
	defer sub.Close()
	change := func(kind, id string, state map[string]any) {
		ss.widgetChanged(nil, kernel.WidgetEvent{Kind: kind, ModelID: id, State: state})
	}
	change(kernel.WidgetOpened, "p", map[string]any{"value": json.Number("0"), "max": json.Number("9")})
	for i := range 10 {
		change(kernel.WidgetUpdated, "p", map[string]any{"value": json.Number(fmt.Sprint(i))})
		change(kernel.WidgetUpdated, "h", map[string]any{"value": fmt.Sprint(i, "%")})
	}
	change(kernel.WidgetOpened, "gone", map[string]any{"value": true})
	change(kernel.WidgetClosed, "gone", nil)
	ss.flushWidgets()
	got := map[string]WidgetChange{}
	for range 3 {
		e := next(t, sub)
		if e.Kind != WidgetUpdate || e.Session != "s" {
			t.Fatalf("event %+v", e)
		}
		got[e.Widget.ModelID] = *e.Widget
	}
	if e, ok := sub.TryNext(); ok {
		t.Fatalf("more events than models: %+v", e)
	}
	if p := got["p"]; p.State["value"] != json.Number("9") || p.State["max"] != json.Number("9") || p.Gone {
		t.Errorf("p: %+v", p)
	}
	if h := got["h"]; len(h.State) != 1 || h.State["value"] != "9%" {
		t.Errorf("h: %+v", h)
	}
	if g := got["gone"]; !g.Gone || len(g.State) != 0 {
		t.Errorf("gone: %+v", g)
	}
	change(kernel.WidgetUpdated, "p", map[string]any{"value": json.Number("1")})
	change(kernel.WidgetReset, "", nil)
	ss.flushWidgets()
	if e, ok := sub.TryNext(); ok {
		t.Fatalf("an event after the reset: %+v", e)
	}
}

// TestSendWidgetUpdate: a view's change to a widget reaches the kernel's
// model, an interact reruns its function on it, and a comm the tracker
// does not hold is refused.
func TestSendWidgetUpdate(t *testing.T) {
	requireWidgets(t)
	e := newTestEngine(t, Config{})
	ss, err := e.LookupOrCreate("wu")
	if err != nil {
		t.Fatal(err)
	}
	b := runCode(t, e, ss, "import ipywidgets as w\ns = w.IntSlider(value=3)\ns")
	id, ok := widgettext.ModelID(widgetView(t, b))
	if !ok {
		t.Fatal("no model id")
	}
	ctx := t.Context()
	if err := ss.SendWidgetUpdate(ctx, id, map[string]any{"value": 7}, nil, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b := runCode(t, e, ss, "print(s.value)")
		if out := fmt.Sprint(b.Result.Outputs); regexp.MustCompile(`\b7\b`).MatchString(out) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("s.value after the update: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := ss.SendWidgetUpdate(ctx, "nope", map[string]any{"value": 1}, nil, nil); !errors.Is(err, ErrUnknownWidget) {
		t.Errorf("unknown comm: %v, want ErrUnknownWidget", err)
	}

	b = runCode(t, e, ss, "def f(x):\n    print('x is', x)\nw.interact(f, x=5);")
	view := widgetView(t, b)
	text := func() string { s, _ := ss.WidgetText(view); return s }
	var slider string
	for _, m := range ss.Widgets().All() {
		if m.ModelName() == "IntSliderModel" && m.State["description"] == "x" {
			slider = m.ModelID
		}
	}
	if slider == "" {
		t.Fatalf("no slider x among the models: %s", text())
	}
	if err := ss.SendWidgetUpdate(ctx, slider, map[string]any{"value": 9}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for !regexp.MustCompile(`x is 9`).MatchString(text()) {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("interact after the update: %q", text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The versions kept for polling views stay bounded: past
// maxWidgetChanges models remembered, every view reloads instead.
func TestWidgetVersionsBounded(t *testing.T) {
	var f widgetFeed
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range maxWidgetChanges {
		f.bumpLocked(fmt.Sprint(i))
	}
	if f.base != 0 || len(f.changed) != maxWidgetChanges {
		t.Fatalf("before the bound: base %d, %d remembered", f.base, len(f.changed))
	}
	f.bumpLocked("one more")
	if f.base != f.ver || len(f.changed) != 1 || f.changed["one more"] != f.ver {
		t.Errorf("past the bound: base %d ver %d, %d remembered", f.base, f.ver, len(f.changed))
	}
}
