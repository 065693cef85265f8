package webview

import (
	"errors"
	"net/http"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// maxWidgetBody bounds a widget message's body: a slider's value is a few
// bytes, a text box's a few kilobytes; a drawing widget's buffer may be
// more, but not a cell's worth.
const maxWidgetBody = 1 << 20

// widgets answers the state of every widget model of the session's
// kernel; none when no kernel runs.
func (v *view) widgets(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": ss.WidgetModels()})
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
	var in engine.WidgetMessage
	r.Body = http.MaxBytesReader(w, r.Body, maxWidgetBody)
	if !readJSON(w, r, &in) {
		return
	}
	err := ss.SendWidgetMessage(r.Context(), r.PathValue("model"), in)
	switch {
	case errors.Is(err, engine.ErrBadWidgetMessage):
		httpError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), engine.ErrBadWidgetMessage.Error()+": "))
	case errors.Is(err, engine.ErrUnknownWidget), errors.Is(err, engine.ErrNoKernel):
		httpError(w, http.StatusNotFound, err.Error()+" (session "+ss.ID()+")")
	case err != nil:
		httpError(w, http.StatusBadGateway, strings.TrimPrefix(err.Error(), "kernel: "))
	default:
		writeJSON(w, http.StatusOK, map[string]string{"message": "sent"})
	}
}
