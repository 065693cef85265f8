// Widgets: a session's ipywidgets models, as text for the model and as
// widget_update events for a live view.

package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine/widgettext"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// WidgetChange is what a widget_update event carries: the changes to one
// widget model since the last event for it. Changes that follow each other
// quickly (a tqdm loop updates its bar at every step) are coalesced into
// one event, so a subscriber may never see intermediate states; the latest
// state is always in Session.Widgets.
type WidgetChange struct {
	ModelID string
	// State holds the keys that changed, with their latest values (every
	// key for a model new since the last event), as kernel.Widget.State
	// has them.
	State map[string]any
	// OutputsChanged is set when an Output widget's outputs changed;
	// Outputs are then all of them.
	OutputsChanged bool
	Outputs        []kernel.Output
	// Gone is set when the model was closed (or dropped over the kernel's
	// bounds); State is then empty.
	Gone bool
}

// widgetCoalesce is how long widget changes gather before they are
// published; the end of each block publishes what gathered at once.
const widgetCoalesce = 50 * time.Millisecond

// widgetFeed turns the widget changes of a session's kernel into
// widget_update events.
type widgetFeed struct {
	mu     sync.Mutex
	k      *kernel.Kernel // the kernel followed; nil when none
	cancel func()
	dirty  map[string]*WidgetChange
	order  []string // of dirty, first changed first
	timer  *time.Timer
	delay  time.Duration // widgetCoalesce when 0

	flushMu sync.Mutex // one flush at a time, so a model's events keep their order

	// For views that poll (WidgetsSince): ver grows by one for every
	// change to the followed kernel's models and whenever the kernel
	// followed changes; base is ver when the models were last all
	// replaced (a new kernel, a restart): a view's version below it is
	// stale. changed holds each model's ver of its last change; wake is
	// closed (and replaced) when ver grows.
	ver, base uint64
	changed   map[string]uint64
	wake      chan struct{}
}

// bumpLocked records a change: of model id, or of every model when id is
// empty.
func (f *widgetFeed) bumpLocked(id string) {
	f.ver++
	if id == "" || len(f.changed) >= maxWidgetChanges {
		// All replaced (or too many closed models remembered): every
		// view reloads.
		f.base, f.changed = f.ver, nil
	}
	if id != "" {
		if f.changed == nil {
			f.changed = make(map[string]uint64)
		}
		f.changed[id] = f.ver
	}
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// maxWidgetChanges bounds the models whose last change is remembered for
// polling views (closed ones included).
const maxWidgetChanges = 2 * kernel.MaxWidgetModels

// followWidgets makes the session's widget_update events come from k, the
// kernel it now runs.
func (ss *Session) followWidgets(k *kernel.Kernel) {
	f := &ss.widgets
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked()
	f.bumpLocked("")
	f.k = k
	f.cancel = k.Widgets().Subscribe(func(e kernel.WidgetEvent) { ss.widgetChanged(k, e) })
}

// unfollowWidgets stops following k (any kernel when k is nil): the
// session no longer runs it. Changes not yet published are dropped.
func (ss *Session) unfollowWidgets(k *kernel.Kernel) {
	f := &ss.widgets
	f.mu.Lock()
	defer f.mu.Unlock()
	if k == nil || f.k == k {
		f.stopLocked()
		f.bumpLocked("")
	}
}

func (f *widgetFeed) stopLocked() {
	if f.cancel != nil {
		f.cancel()
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	f.k, f.cancel, f.timer, f.dirty, f.order = nil, nil, nil, nil, nil
}

// widgetChanged gathers one change; it runs on the kernel's reading
// goroutine, so it only notes the change and arms the timer.
func (ss *Session) widgetChanged(k *kernel.Kernel, e kernel.WidgetEvent) {
	f := &ss.widgets
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.k != k {
		return
	}
	f.bumpLocked(e.ModelID) // a reset's is empty: every model
	if ss.eng.events.Subscribers() == 0 {
		return // nobody follows; the state stays readable in the kernel
	}
	if e.Kind == kernel.WidgetReset {
		// kernel_restarted says every model is gone.
		f.dirty, f.order = nil, nil
		return
	}
	if f.dirty == nil {
		f.dirty = make(map[string]*WidgetChange)
	}
	c := f.dirty[e.ModelID]
	if c == nil {
		c = &WidgetChange{ModelID: e.ModelID}
		f.dirty[e.ModelID] = c
		f.order = append(f.order, e.ModelID)
	}
	switch e.Kind {
	case kernel.WidgetOpened:
		c.State, c.Gone = e.State, false
	case kernel.WidgetUpdated:
		if c.State == nil {
			c.State = e.State
		} else {
			maps.Copy(c.State, e.State)
		}
	case kernel.WidgetOutput:
		c.OutputsChanged = true
	case kernel.WidgetClosed, kernel.WidgetDropped:
		c.State, c.Gone, c.OutputsChanged = nil, true, false
	}
	if f.timer == nil {
		d := f.delay
		if d <= 0 {
			d = widgetCoalesce
		}
		f.timer = time.AfterFunc(d, ss.flushWidgets)
	}
}

// flushWidgets publishes the changes gathered so far, one widget_update
// per model.
func (ss *Session) flushWidgets() {
	f := &ss.widgets
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	f.mu.Lock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	dirty, order, k := f.dirty, f.order, f.k
	f.dirty, f.order = nil, nil
	f.mu.Unlock()
	for _, id := range order {
		c := dirty[id]
		if c.OutputsChanged && k != nil {
			if w, ok := k.Widgets().Get(id); ok {
				c.Outputs = w.Outputs
			}
		}
		if c.State == nil {
			c.State = map[string]any{}
		}
		ss.eng.events.Publish(Event{Kind: WidgetUpdate, Session: ss.id, Widget: c})
	}
}

// Widgets are the widget models of the session's running kernel, nil when
// no kernel runs.
func (ss *Session) Widgets() *kernel.Widgets {
	if k := ss.RunningKernel(); k != nil {
		return k.Widgets()
	}
	return nil
}

// WidgetText renders the widget view o shows (its
// application/vnd.jupyter.widget-view+json) as text, from the latest state
// of the session's kernel's widgets (see package widgettext). ok is false
// when o shows no widget or the model is gone (closed, or the kernel
// restarted or stopped): o's text/plain stands for it then.
func (ss *Session) WidgetText(o kernel.Output) (text string, ok bool) {
	w := ss.Widgets()
	if w == nil {
		return "", false
	}
	return widgettext.Render(w, o)
}

// ErrUnknownWidget is returned by SendWidgetUpdate for a model the
// session's kernel does not hold (never opened, closed, or dropped).
var ErrUnknownWidget = errors.New("no such widget model in the session's kernel")

// ErrNoKernel is returned by SendWidgetUpdate when the session runs no
// kernel.
var ErrNoKernel = errors.New("the session runs no kernel")

// SendWidgetUpdate sends a change a view made to a widget model to the
// session's kernel, as a frontend does: a comm_msg {"method": "update",
// "state": state, "buffer_paths": bufferPaths} on shell, with buffers. It
// goes only to a model the kernel's widget tracker holds, so that a view
// cannot reach other comms (a kernel's own comm targets) through it. The
// kernel answers with an echo_update, which the tracker applies and a
// widget_update event carries.
func (ss *Session) SendWidgetUpdate(ctx context.Context, modelID string, state map[string]any, bufferPaths [][]any, buffers [][]byte) error {
	k := ss.RunningKernel()
	if k == nil {
		return ErrNoKernel
	}
	if _, ok := k.Widgets().Get(modelID); !ok {
		return fmt.Errorf("%w: %q", ErrUnknownWidget, modelID)
	}
	if state == nil {
		state = map[string]any{}
	}
	if bufferPaths == nil {
		bufferPaths = [][]any{}
	}
	return k.SendCommMsg(ctx, modelID, map[string]any{"method": "update", "state": state, "buffer_paths": bufferPaths}, buffers...)
}
