// Widget models as the views draw them: the web view reads them all and
// follows widget_update events; the cell view, which has no event stream,
// polls for the models its outputs show (WidgetsSince). Both send the
// person's changes back through SendWidgetMessage.

package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine/widgettext"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// WidgetModel is one widget model as a view's widget manager creates it:
// its state with the binary buffers taken out, each at its buffer path
// (base64), as a comm message carries them.
type WidgetModel struct {
	ModelID     string         `json:"model_id"`
	State       map[string]any `json:"state"`
	BufferPaths [][]any        `json:"buffer_paths"`
	Buffers     []string       `json:"buffers"`
	// Outputs are an Output widget's, as the kernel's tracker captured
	// them; OutputsChanged says they are there (for every Output widget
	// in a full state; in a change, when they changed).
	Outputs        []history.Output `json:"outputs,omitempty"`
	OutputsChanged bool             `json:"outputs_changed,omitempty"`
	Gone           bool             `json:"gone,omitempty"` // the model was closed
}

// NewWidgetModel splits state's buffers out (state is not changed);
// outputs, when not nil, are an Output widget's.
func NewWidgetModel(id string, state map[string]any, outputs []kernel.Output) WidgetModel {
	m := WidgetModel{ModelID: id, BufferPaths: [][]any{}, Buffers: []string{}}
	m.State, _ = splitBuffers(state, nil, &m.BufferPaths, &m.Buffers).(map[string]any)
	if m.State == nil {
		m.State = map[string]any{}
	}
	if outputs != nil {
		m.OutputsChanged = true
	}
	for _, o := range outputs {
		h := historyOutput(o)
		if o.DisplayID != "" {
			h.Transient = &history.Transient{DisplayID: o.DisplayID}
		}
		m.Outputs = append(m.Outputs, h)
	}
	return m
}

// widgetModelOf is w as a view takes it whole.
func widgetModelOf(w kernel.Widget) WidgetModel {
	outs := w.Outputs
	if outs == nil && w.ModelName() == "OutputModel" {
		outs = []kernel.Output{}
	}
	return NewWidgetModel(w.ModelID, w.State, outs)
}

// splitBuffers copies v with each []byte replaced by null, its path and
// base64 recorded, as ipywidgets' _remove_buffers does.
func splitBuffers(v any, path []any, paths *[][]any, bufs *[]string) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = splitBuffers(e, append(path[:len(path):len(path)], k), paths, bufs)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = splitBuffers(e, append(path[:len(path):len(path)], i), paths, bufs)
		}
		return c
	case []byte:
		*paths = append(*paths, path)
		*bufs = append(*bufs, base64.StdEncoding.EncodeToString(v))
		return nil
	default:
		return v
	}
}

// WidgetModels are every widget model of the session's running kernel,
// oldest first; none when no kernel runs.
func (ss *Session) WidgetModels() []WidgetModel {
	models := []WidgetModel{}
	if ws := ss.Widgets(); ws != nil {
		for _, w := range ws.All() {
			models = append(models, widgetModelOf(w))
		}
	}
	return models
}

// WidgetView is what a polling view gets: the models it draws that
// changed since the version it had.
type WidgetView struct {
	// Version is the state's version: the view gives it to its next
	// call.
	Version uint64 `json:"version"`
	// Reset is set when Models are all the models the roots reach, not
	// only the changed ones: the version given was 0, or older than the
	// kernel's models (it restarted, or another kernel runs).
	Reset bool `json:"reset"`
	// Models are the roots and the models their states name (children,
	// layouts, styles, the widgets an Output widget shows), those changed
	// since the version; a root closed since is there with Gone set.
	Models []WidgetModel `json:"models"`
}

// maxWidgetView bounds the models one WidgetView carries.
const maxWidgetView = 2000

// WidgetsSince answers the models that roots reach which changed after
// version since. When none did, it waits up to wait (or until ctx ends)
// for a change of the session's widgets and answers then.
func (ss *Session) WidgetsSince(ctx context.Context, roots []string, since uint64, wait time.Duration) WidgetView {
	f := &ss.widgets
	f.mu.Lock()
	if wait > 0 && since == f.ver && since >= f.base && since > 0 {
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		ch := f.wake
		f.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		f.mu.Lock()
	}
	v := WidgetView{Version: f.ver, Reset: since == 0 || since < f.base || since > f.ver, Models: []WidgetModel{}}
	f.mu.Unlock()

	// The walk reads state at least as new as v.Version: a change after
	// it is answered again next time, which views apply twice harmlessly.
	ws := ss.Widgets()
	seen := make(map[string]bool)
	var reached []kernel.Widget
	var gone []string
	queue := append([]string(nil), roots...)
	for len(queue) > 0 && len(reached) < maxWidgetView {
		id := queue[0]
		queue = queue[1:]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		var w kernel.Widget
		ok := false
		if ws != nil {
			w, ok = ws.Get(id)
		}
		if !ok {
			gone = append(gone, id)
			continue
		}
		reached = append(reached, w)
		queue = append(queue, widgetRefs(w)...)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	fresh := func(id string) bool { return v.Reset || f.changed[id] > since }
	for _, w := range reached {
		if fresh(w.ModelID) {
			v.Models = append(v.Models, widgetModelOf(w))
		}
	}
	for _, id := range gone {
		if v.Reset || f.changed[id] > since {
			v.Models = append(v.Models, WidgetModel{ModelID: id, State: map[string]any{}, BufferPaths: [][]any{}, Buffers: []string{}, Gone: true})
		}
	}
	return v
}

// widgetRefs are the models w's state names ("IPY_MODEL_<id>" strings:
// children, layout, style) and those of the widget views its outputs
// show (an Output widget's).
func widgetRefs(w kernel.Widget) []string {
	var ids []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if id, ok := strings.CutPrefix(v, "IPY_MODEL_"); ok {
				ids = append(ids, id)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(w.State)
	for _, o := range w.Outputs {
		if id, ok := widgettext.ModelID(o); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// WidgetMessage is a message a view sends to a widget model: a change of
// state ("update", with the buffers at their paths in base64), or a
// widget's own message ("custom": a button's click is {"event": "click"}).
type WidgetMessage struct {
	Method      string         `json:"method,omitempty" jsonschema:"\"update\" (the default) or \"custom\""`
	State       map[string]any `json:"state,omitempty" jsonschema:"update: the keys that changed"`
	BufferPaths [][]any        `json:"buffer_paths,omitempty" jsonschema:"update: where each buffer goes in state"`
	Buffers     []string       `json:"buffers,omitempty" jsonschema:"base64; one per buffer path (update) or as the widget sends them (custom)"`
	Content     map[string]any `json:"content,omitempty" jsonschema:"custom: the message's content"`
}

// ErrBadWidgetMessage is returned by SendWidgetMessage for a message it
// does not send.
var ErrBadWidgetMessage = errors.New("bad widget message")

// SendWidgetMessage checks m and sends it to model modelID of the
// session's kernel (see SendWidgetUpdate).
func (ss *Session) SendWidgetMessage(ctx context.Context, modelID string, m WidgetMessage) error {
	bufs := make([][]byte, len(m.Buffers))
	for i, s := range m.Buffers {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%w: buffer %d is not base64", ErrBadWidgetMessage, i)
		}
		bufs[i] = b
	}
	switch m.Method {
	case "", "update":
		if len(m.State) == 0 {
			return fmt.Errorf("%w: state is empty: nothing to send", ErrBadWidgetMessage)
		}
		if len(m.BufferPaths) != len(m.Buffers) {
			return fmt.Errorf("%w: %d buffer paths for %d buffers", ErrBadWidgetMessage, len(m.BufferPaths), len(m.Buffers))
		}
		return ss.SendWidgetUpdate(ctx, modelID, m.State, m.BufferPaths, bufs)
	case "custom":
		if m.Content == nil {
			return fmt.Errorf("%w: a custom message needs content", ErrBadWidgetMessage)
		}
		k := ss.RunningKernel()
		if k == nil {
			return ErrNoKernel
		}
		if _, ok := k.Widgets().Get(modelID); !ok {
			return fmt.Errorf("%w: %q", ErrUnknownWidget, modelID)
		}
		return k.SendCommMsg(ctx, modelID, map[string]any{"method": "custom", "content": m.Content}, bufs...)
	default:
		return fmt.Errorf("%w: method %q: give \"update\" or \"custom\"", ErrBadWidgetMessage, m.Method)
	}
}
