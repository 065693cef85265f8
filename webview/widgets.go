package webview

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// maxWidgetBody bounds a widget update's body: a slider's value is a few
// bytes, a text box's a few kilobytes; a drawing widget's buffer may be
// more, but not a cell's worth.
const maxWidgetBody = 1 << 20

// WidgetModel is one widget model as the page's widget manager creates it:
// its state with the binary buffers taken out, each at its buffer path
// (base64), as a comm message carries them.
type WidgetModel struct {
	ModelID     string         `json:"model_id"`
	State       map[string]any `json:"state"`
	BufferPaths [][]any        `json:"buffer_paths"`
	Buffers     []string       `json:"buffers"`
	// Outputs are an Output widget's, as the kernel's tracker captured
	// them; OutputsChanged says they are there (in the state answer, for
	// every Output widget; in a widget_update, when they changed).
	Outputs        []history.Output `json:"outputs,omitempty"`
	OutputsChanged bool             `json:"outputs_changed,omitempty"`
	Gone           bool             `json:"gone,omitempty"` // in a widget_update: the model was closed
}

// widgetModel splits state's buffers out; state is not changed.
func widgetModel(id string, state map[string]any, outputs []kernel.Output) WidgetModel {
	m := WidgetModel{ModelID: id, BufferPaths: [][]any{}, Buffers: []string{}}
	m.State, _ = splitBuffers(state, nil, &m.BufferPaths, &m.Buffers).(map[string]any)
	if m.State == nil {
		m.State = map[string]any{}
	}
	if outputs != nil {
		m.OutputsChanged = true
	}
	for _, o := range outputs {
		m.Outputs = append(m.Outputs, historyOutput(o))
	}
	return m
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

// widgets answers the state of every widget model of the session's
// kernel; none when no kernel runs.
func (v *view) widgets(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	models := []WidgetModel{}
	if ws := ss.Widgets(); ws != nil {
		for _, m := range ws.All() {
			outs := m.Outputs
			if outs == nil && m.ModelName() == "OutputModel" {
				outs = []kernel.Output{}
			}
			models = append(models, widgetModel(m.ModelID, m.State, outs))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

// widgetUpdate sends a change the person made to a widget to the kernel.
func (v *view) widgetUpdate(w http.ResponseWriter, r *http.Request) {
	if v.o.ReadOnly {
		httpError(w, http.StatusForbidden, "the web view is read-only (--ui-readonly): changing widgets from it is turned off")
		return
	}
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	var in struct {
		State       map[string]any `json:"state"`
		BufferPaths [][]any        `json:"buffer_paths"`
		Buffers     []string       `json:"buffers"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxWidgetBody)
	if !readJSON(w, r, &in) {
		return
	}
	if len(in.State) == 0 {
		httpError(w, http.StatusBadRequest, "state is empty: nothing to send")
		return
	}
	if len(in.BufferPaths) != len(in.Buffers) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("%d buffer paths for %d buffers", len(in.BufferPaths), len(in.Buffers)))
		return
	}
	bufs := make([][]byte, len(in.Buffers))
	for i, s := range in.Buffers {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			httpError(w, http.StatusBadRequest, "buffer "+fmt.Sprint(i)+" is not base64")
			return
		}
		bufs[i] = b
	}
	err := ss.SendWidgetUpdate(r.Context(), r.PathValue("model"), in.State, in.BufferPaths, bufs)
	switch {
	case errors.Is(err, engine.ErrUnknownWidget), errors.Is(err, engine.ErrNoKernel):
		httpError(w, http.StatusNotFound, err.Error()+" (session "+ss.ID()+")")
	case err != nil:
		httpError(w, http.StatusBadGateway, strings.TrimPrefix(err.Error(), "kernel: "))
	default:
		writeJSON(w, http.StatusOK, map[string]string{"message": "sent"})
	}
}
