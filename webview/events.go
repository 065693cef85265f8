package webview

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Event is one engine event as the page reads it from the stream.
type Event struct {
	Seq      uint64              `json:"seq"`
	Kind     engine.Kind         `json:"kind"`
	Session  string              `json:"session_id"`
	Run      string              `json:"run_id"`
	Tool     string              `json:"tool,omitempty"`
	Output   *history.Output     `json:"output"`
	Status   string              `json:"status"`
	Prompt   string              `json:"prompt"`
	Password bool                `json:"password"`
	Entries  int                 `json:"entries"`
	Missed   int                 `json:"missed,omitempty"` // kind "missed": the page refetches
	Error    string              `json:"error,omitempty"`  // kernel_died, a run that failed to run
	Widget   *engine.WidgetModel `json:"widget,omitempty"` // widget_update: the keys that changed, or gone
}

func eventOf(e engine.Event) Event {
	ev := Event{Seq: e.Seq, Kind: e.Kind, Session: e.Session, Run: e.Run, Tool: e.Tool, Status: e.Status,
		Prompt: e.Prompt, Password: e.Password, Entries: e.Entries, Missed: e.Missed}
	if e.Output != nil {
		o := historyOutput(*e.Output)
		ev.Output = &o
	}
	if c := e.Widget; c != nil {
		var outs []kernel.Output
		if c.OutputsChanged {
			outs = c.Outputs
			if outs == nil {
				outs = []kernel.Output{} // cleared
			}
		}
		m := engine.NewWidgetModel(c.ModelID, c.State, outs)
		m.Gone = c.Gone
		ev.Widget = &m
	}
	if e.Err != nil {
		ev.Error = e.Err.Error()
	}
	return ev
}

// events streams the engine's events as server-sent events, one
// "data: {json}" each, from a subscription of this request's own that ends
// with it. A comment line goes out every KeepAlive while nothing happens.
func (v *view) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	sub := v.o.Engine.Events().Subscribe(engine.DefaultBuffer, nil)
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The subscription is in place: what happens from now on is sent.
	if _, err := w.Write([]byte(": subscribed\n\n")); err != nil || rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(v.o.KeepAlive)
	defer tick.Stop()
	var buf bytes.Buffer
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case _, open := <-sub.Ready():
			buf.Reset()
			for {
				e, ok := sub.TryNext()
				if !ok {
					break
				}
				b, err := json.Marshal(eventOf(e))
				if err != nil {
					continue // an output the encoder cannot take; the cells still have it
				}
				buf.WriteString("data: ")
				buf.Write(b)
				buf.WriteString("\n\n")
			}
			if buf.Len() > 0 {
				if _, err := w.Write(buf.Bytes()); err != nil || rc.Flush() != nil {
					return
				}
			}
			if !open {
				return // the engine closed
			}
		}
	}
}
