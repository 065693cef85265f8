// Package toolresult makes what a tool call returns for a run of code: the
// parts of its content in the order the model reads them (text in arrival
// order, images inline or downscaled, links to the images a session keeps)
// and its structured form, RunOutput. It also runs the tools whose result
// joins several blocks' (history blocks re-run, a notebook's cells), in the
// run the caller started. It imports no MCP package: the adapter
// (mcpserver) makes each Part one content item.
//
//	rd := toolresult.Renderer{Limit: 20000, MaxInlineImage: 1 << 20}
//	parts, out, err := rd.RunBlock(ctx, run, ss, "1+1", "", 0)
//	// parts: [{Text: "2"}]; out.Status "ok", out.Result "2"
package toolresult

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/engine/traceback"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext/chartsummary"
)

// RunOutput is the structured content of run_code and run_file.
type RunOutput struct {
	SessionID string `json:"session_id"`
	// RunID names the run (see wait_run).
	RunID          string `json:"run_id,omitempty"`
	ExecutionCount int    `json:"execution_count"`
	// Status is ok, error, timeout or interrupted for a run that ended;
	// running, queued or input_requested for one the call handed off.
	Status string `json:"status"`
	// Output is, for a handed-off run, what it printed so far.
	Output string `json:"output,omitempty"`
	// Prompt is, for a run in input_requested, the question the code
	// asked; Password is set for getpass().
	Prompt   string `json:"prompt,omitempty"`
	Password bool   `json:"password,omitempty"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Result is the last expression's value as text, empty if none: its
	// text/plain, or what ResultFrom names (see Display.TextFrom).
	Result     string `json:"result"`
	ResultFrom string `json:"result_from,omitempty"`
	// ResultChart is the summary of a chart that was the last expression
	// (Result is then the line saying how to draw it as an image).
	ResultChart *chartsummary.Summary `json:"result_chart,omitempty"`
	Displays    []Display             `json:"displays,omitempty"`
	// Error is the execute_reply's error: set when the cell failed.
	Error *ErrorInfo `json:"error,omitempty"`
	// Errors lists every traceback the cell showed, in order, whether it
	// failed or not: a cell can show tracebacks and still succeed
	// (showtraceback, %run of a failing script), and a failing one can
	// show several (%pdb's StdinNotImplementedError after the error).
	// On the wire it is left out when it only repeats Error (see
	// MarshalJSON).
	Errors    []ErrorInfo `json:"errors,omitempty"`
	Truncated bool        `json:"truncated"`
	ElapsedMS int64       `json:"elapsed_ms"`
	// Note says what happened to the session beyond the code's own output:
	// a timeout, an interrupt, a kernel death or restart, a history file
	// that is behind.
	Note string `json:"note,omitempty"`
	// HistoryUnsaved is set when the block could not be written to the
	// session's history file (a full disk): it is kept in memory and
	// written once the disk has room.
	HistoryUnsaved *engine.HistoryBacklog `json:"history_unsaved,omitempty"`
	// Blocks lists the history blocks re-run, for run_code with start/end
	// and rerun_code; the fields above then describe the last block run.
	Blocks []BlockSummary `json:"blocks,omitempty"`
}

// Display is one display_data output: its MIME types and its text form.
type Display struct {
	MimeTypes []string `json:"mime_types"`
	Text      string   `json:"text,omitempty"`
	// TextFrom is the MIME type Text was made from when it is not
	// text/plain: text/markdown or text/latex (their source),
	// application/json (compacted), text/html (its text, when the
	// text/plain is only an object's repr), image/svg+xml (an SVG's text)
	// or a chart's MIME type. See outputtext.FromBundle.
	TextFrom string `json:"text_from,omitempty"`
	// Chart is the summary of a Plotly, Vega-Lite, Vega or Bokeh chart (kinds,
	// title, axes, series); Text then says only how to draw it as an
	// image, so that nothing is carried twice.
	Chart *chartsummary.Summary `json:"chart,omitempty"`
	// Resource is the session://{id}/outputs/{n} URI of the display's
	// image, kept whole whatever the result shows of it.
	Resource string `json:"resource,omitempty"`
}

// ErrorInfo describes an exception raised by the code.
type ErrorInfo struct {
	EName     string `json:"ename"`
	EValue    string `json:"evalue"`
	Line      int    `json:"line,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}

// MarshalJSON writes the structured content with each thing in it once,
// since a client that passes structuredContent to the model passes all of
// it: errors only when it holds more than the one traceback error has
// (several, or one that a cell which succeeded showed), error without its
// traceback when errors has it, and the last re-run block without the
// result and traceback that the fields above give for it.
func (o RunOutput) MarshalJSON() ([]byte, error) {
	type plain RunOutput // without this method
	p := plain(o)
	if e := o.Error; e != nil {
		switch {
		case len(o.Errors) == 1 && e.same(o.Errors[0]):
			p.Errors = nil
		case slices.ContainsFunc(o.Errors, e.same):
			c := *e
			c.Traceback = ""
			p.Error = &c
		}
	}
	if n := len(o.Blocks); n > 0 {
		p.Blocks = slices.Clone(o.Blocks)
		last := &p.Blocks[n-1]
		if last.Result == o.Result {
			last.Result = ""
		}
		if e := last.Error; e != nil && o.Error != nil && e.EName == o.Error.EName && e.EValue == o.Error.EValue {
			last.Error = &ErrorInfo{EName: e.EName, EValue: e.EValue, Line: e.Line}
		}
	}
	return json.Marshal(p)
}

// errorHeadline is the line a failed result leads with, e.g.
// "NameError on line 2: name 'x' is not defined".
func errorHeadline(e *ErrorInfo) string {
	where := ""
	if e.Line > 0 {
		where = fmt.Sprintf(" on line %d", e.Line)
	}
	if e.EValue == "" {
		return e.EName + where
	}
	return fmt.Sprintf("%s%s: %s", e.EName, where, e.EValue)
}

// errorInfo describes an exception for the model: colour codes stripped,
// the traceback as one text without the frames inside installed libraries
// (see traceback.Short; the history keeps it whole), and the line of the
// user's code it names.
func errorInfo(ename, evalue string, tbEntries []string) ErrorInfo {
	plain := make([]string, len(tbEntries))
	for i, t := range tbEntries {
		plain[i] = history.PlainText(t)
	}
	tb := strings.Join(traceback.Short(plain), "\n")
	e := ErrorInfo{EName: ename, EValue: history.PlainText(evalue), Traceback: tb}
	e.Line = traceback.ErrorLine(ename, tb)
	return e
}

// same reports whether o is the same exception as e.
func (e *ErrorInfo) same(o ErrorInfo) bool {
	return o.EName == e.EName && o.EValue == e.EValue && o.Traceback == e.Traceback
}

// skipErrorOutput leaves out the KeyboardInterrupt of a run that timed out
// or was cancelled: that interrupt is the server's, not the code's, and the
// note says what happened. History keeps it.
func skipErrorOutput(o kernel.Output, status string) bool {
	return o.EName == "KeyboardInterrupt" && (status == "timeout" || status == "interrupted")
}

// maxErrorLead bounds the other errors a result's first lines name.
const maxErrorLead = 3

// errorLead is what a result leads with about errors. A failed cell names
// the reply's error, then the other tracebacks it showed (often the cause:
// with %pdb on, the ZeroDivisionError comes before the debugger's
// StdinNotImplementedError that ends the cell). A cell that succeeded but
// showed tracebacks says so, since it is not an error.
func errorLead(out *RunOutput) []string {
	var others []string
	seen := map[string]bool{}
	for i := range out.Errors {
		e := &out.Errors[i]
		if out.Error != nil && out.Error.EName == e.EName && out.Error.EValue == e.EValue {
			continue
		}
		if h := errorHeadline(e); !seen[h] {
			seen[h] = true
			others = append(others, h)
		}
	}
	more := ""
	if len(others) > maxErrorLead {
		more = fmt.Sprintf("; and %d more", len(others)-maxErrorLead)
		others = others[:maxErrorLead]
	}
	switch {
	case out.Error != nil && len(others) > 0:
		return []string{errorHeadline(out.Error), "Earlier in the cell: " + strings.Join(others, "; ") + more}
	case out.Error != nil:
		return []string{errorHeadline(out.Error)}
	case len(others) > 0 && out.Status == "ok":
		n := len(out.Errors)
		what := "a traceback"
		if n > 1 {
			what = fmt.Sprintf("%d tracebacks", n)
		}
		return []string{fmt.Sprintf("The cell ran to the end (status ok) but showed %s: %s%s", what, strings.Join(others, "; "), more)}
	}
	return nil
}

// BlockSummary is one re-run block in a run_code or rerun_code result.
type BlockSummary struct {
	Block          int        `json:"block"` // 1-based number in the history it was taken from
	Status         string     `json:"status"`
	ExecutionCount int        `json:"execution_count"`
	Result         string     `json:"result,omitempty"`
	Error          *ErrorInfo `json:"error,omitempty"`
	// Outputs is rerun_code's comparison with the outputs recorded
	// before: "same", or "changed: " and what changed (stdout, image/png...).
	Outputs string `json:"outputs,omitempty"`
}
