package webview

import (
	"context"
	"mime"
	"net/http"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Cell is one notebook cell as both views render it (engine.Cell).
type Cell = engine.Cell

// SessionRow is one session in the list.
type SessionRow struct {
	SessionID    string          `json:"session_id"`
	State        string          `json:"state"`
	Language     string          `json:"language"`
	HistoryCount int             `json:"history_count"`
	Run          *engine.RunView `json:"run"`
}

func (v *view) sessions(w http.ResponseWriter, r *http.Request) {
	rows := []SessionRow{}
	for _, ss := range v.o.Engine.Sessions() {
		d := ss.Describe()
		rows = append(rows, SessionRow{SessionID: d.SessionID, State: d.State, Language: language(ss), HistoryCount: d.History, Run: d.Run})
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": rows})
}

// language is the session's kernel language, for highlighting; python
// until a kernel has said.
func language(ss *engine.Session) string {
	if l := ss.KernelInfo().Language; l != "" {
		return strings.ToLower(l)
	}
	return "python"
}

func (v *view) cells(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cells": Cells(ss)})
}

// Cells is the session's notebook: its history, then its runs still queued
// or running, with what they printed so far.
func Cells(ss *engine.Session) []Cell { return ss.Cells(language(ss)) }

// Tool is the name runs started from the web view go by in list_sessions
// and session_status.
const Tool = "web_view"

func (v *view) run(w http.ResponseWriter, r *http.Request) {
	if v.o.ReadOnly {
		httpError(w, http.StatusForbidden, "the web view is read-only (--ui-readonly): running cells from it is turned off")
		return
	}
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	var in struct {
		Code string `json:"code"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.Code) == "" {
		httpError(w, http.StatusBadRequest, "code is empty: type the cell's code")
		return
	}
	// The run joins the queue behind whatever is there; it is the
	// session's, not the request's, so it goes on when the page closes.
	run, err := v.o.Engine.StartRun(r.Context(), ss, nil, Tool, func(ctx context.Context, run *engine.Run) (any, error) {
		return run.RunBlock(ctx, in.Code, "", 0)
	}, engine.WithCode(in.Code), engine.WrittenBy(history.ByPerson))
	if err != nil {
		httpError(w, http.StatusConflict, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"run_id": run.ID()})
}

func (v *view) interrupt(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	msg, _, err := v.o.Engine.Interrupt(r.Context(), ss)
	if err != nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": msg})
}

func (v *view) input(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	var in struct {
		RunID string `json:"run_id"`
		Text  string `json:"text"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	var run *engine.Run
	if in.RunID == "" {
		run = ss.AskingRun()
	}
	if run == nil {
		var err error
		if run, err = ss.FindRun(in.RunID); err != nil {
			httpError(w, http.StatusNotFound, err.Error())
			return
		}
	}
	ir, answered := run.Answer(0, engine.Reply{Text: in.Text})
	if !answered {
		httpError(w, http.StatusConflict, "run "+run.ID()+" in session "+ss.ID()+" is not waiting for input (it is "+run.View().Status+"); nothing was sent")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Answered " + quoteOrNothing(ir.Prompt) + "of run " + run.ID() + "."})
}

func quoteOrNothing(prompt string) string {
	if prompt == "" {
		return ""
	}
	return "“" + prompt + "” "
}

func (v *view) notebook(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	nb, err := history.Notebook(ss.History(), 1, ss.NotebookMeta())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	download(w, "application/x-ipynb+json", ss.ID()+".ipynb", nb)
}

func (v *view) script(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.session(w, r)
	if !ok {
		return
	}
	download(w, "text/x-python; charset=utf-8", ss.ID()+".py", []byte(history.Script(ss.History(), 1, ss.ID())))
}

func download(w http.ResponseWriter, contentType, name string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Write(body)
}

// historyOutput is a kernel output in the history's vocabulary, as the
// cells carry it.
func historyOutput(o kernel.Output) history.Output {
	h := history.Output{OutputType: o.Type, Name: o.Name, Text: o.Text, Data: o.Data, Metadata: o.Metadata,
		ExecutionCount: o.ExecutionCount, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback}
	if o.DisplayID != "" {
		// The page replaces a display when an update_display_data names it.
		h.Transient = &history.Transient{DisplayID: o.DisplayID}
	}
	return h
}
