package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/engine/traceback"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
	"github.com/kernel-mcp/kernel-mcp/outputtext/chartsummary"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// widgetViewMIME is the MIME type of an ipywidgets view (its model_id).
const widgetViewMIME = "application/vnd.jupyter.widget-view+json"

// maxInlineImage is the largest image (decoded bytes) render puts inline
// when it has no image policy.
const maxInlineImage = 5 << 20

// render turns an execution's outputs into MCP content and the structured
// result, with no session to keep images in: an image goes inline up to
// maxInlineImage bytes. Servers use renderFor.
func render(res *kernel.ExecuteResult, out *RunOutput, limit int) []mcp.Content {
	return renderWith(res, out, limit, nil, engine.StreamShown{})
}

// renderWith turns an execution's outputs into MCP content and the
// structured result. Text content follows arrival order; each image becomes
// what pol makes of it (see renderImage). Output beyond limit characters is
// cut in the middle. Stream text that shown says earlier calls returned
// (see wait_run) stays in the structured stdout and stderr but is not
// repeated in the text.
func renderWith(res *kernel.ExecuteResult, out *RunOutput, limit int, pol *imagePolicy, shown engine.StreamShown) []mcp.Content {
	var (
		text    strings.Builder
		content []mcp.Content
		stdout  strings.Builder
		stderr  strings.Builder
	)
	out.Displays = []Display{}
	if res != nil {
		out.ExecutionCount = res.ExecutionCount
		var streams []string
		for _, o := range res.Outputs {
			if o.Type == kernel.OutputStream {
				streams = append(streams, o.Text)
			}
		}
		skip, repeated := shown.SkipFor(streams)
		if skip > 0 {
			text.WriteString("[output before this point was returned by earlier calls]\n")
		} else if repeated {
			text.WriteString("[the output below repeats what earlier calls returned]\n")
		}
		for _, o := range res.Outputs {
			switch o.Type {
			case kernel.OutputStream:
				t := history.PlainText(o.Text)
				if o.Name == "stderr" {
					stderr.WriteString(t)
				} else {
					stdout.WriteString(t)
				}
				switch {
				case skip >= len(o.Text):
					skip -= len(o.Text)
					continue
				case skip > 0:
					t = history.PlainText(o.Text[skip:])
					skip = 0
				}
				text.WriteString(t)
				ensureNewline(&text)
			case kernel.OutputError:
				if skipErrorOutput(o, out.Status) {
					continue
				}
				e := errorInfo(o.EName, o.EValue, o.Traceback)
				out.Errors = append(out.Errors, e)
				if e.Traceback != "" {
					text.WriteString(e.Traceback)
				} else {
					text.WriteString(errorHeadline(&e))
				}
				ensureNewline(&text)
			case kernel.OutputExecuteResult, kernel.OutputDisplayData:
				d := outputtext.Describe(o.Data)
				plain, from := history.PlainText(d.Text), d.From
				if from == outputtext.Plain {
					from = "" // the usual case, left unsaid
				}
				if pol != nil && pol.widgetText != nil {
					// A widget view is its state at the end of the run: a
					// control's value, a progress bar's last line, what an
					// Output widget captured.
					if t, ok := pol.widgetText(o); ok {
						plain, from = history.PlainText(t), widgetViewMIME
					}
				}
				short := plain // what the structured entry carries besides Chart
				if d.Chart != nil {
					short = d.Note
				}
				var (
					img      []mcp.Content
					resource string
					drawn    bool
				)
				if pol != nil && pol.modelImage != nil {
					// A chart or an SVG, drawn as a PNG for the model.
					if png, ok, err := pol.modelImage(o, d); ok {
						if err == nil {
							img, resource, drawn = renderImage(pol, "image/png", png)
						}
						if d.Chart != nil {
							var t string
							t, short = engine.ChartText(d, err)
							plain = history.PlainText(t)
						}
					}
				}
				for _, mt := range engine.ImageTypes {
					if drawn {
						break
					}
					if data, ok := engine.ImageData(o, mt); ok {
						if img, resource, ok = renderImage(pol, mt, data); ok {
							break
						}
					}
				}
				if o.Type == kernel.OutputExecuteResult {
					out.Result, out.ResultFrom, out.ResultChart = short, from, d.Chart
				} else {
					mimes := make([]string, 0, len(o.Data))
					for m := range o.Data {
						mimes = append(mimes, m)
					}
					slices.Sort(mimes)
					out.Displays = append(out.Displays, Display{MimeTypes: mimes, Text: short, TextFrom: from, Chart: d.Chart, Resource: resource})
				}
				// The text/plain of a figure ("<Figure size 640x480 ...>")
				// says nothing the image does not; text made from another
				// type (sympy's LaTeX, an SVG's words) does, and comes first.
				if plain != "" && (len(img) == 0 || from != "") {
					text.WriteString(plain)
					ensureNewline(&text)
				}
				if len(img) > 0 {
					if text.Len() > 0 {
						content = append(content, &mcp.TextContent{Text: text.String()})
						text.Reset()
					}
					content = append(content, img...)
				}
			}
		}
		if res.OmittedOutputs > 0 {
			fmt.Fprintf(&text, "[%d more outputs not kept]\n", res.OmittedOutputs)
		}
		if res.IdleLost {
			text.WriteString("[the kernel's idle status never came after its reply: its output publisher dropped messages under a flood of output, so some output may be missing]\n")
		}
		if res.RateLimited {
			text.WriteString("[output was dropped: the Jupyter server replaced it with its \"IOPub data rate exceeded\" notice; print less, or raise the server's iopub_data_rate_limit]\n")
		}
		if res.Error != nil {
			e := errorInfo(res.Error.EName, res.Error.EValue, res.Error.Traceback)
			out.Error = &e
		}
	}
	var truncated [4]bool
	out.Stdout, truncated[0] = history.CutMiddle(stdout.String(), limit)
	out.Stderr, truncated[1] = history.CutMiddle(stderr.String(), limit)
	out.Result, truncated[2] = history.CutMiddle(out.Result, limit)

	body := text.String()
	lead := errorLead(out)
	if out.Note != "" {
		lead = append(lead, out.Note)
	}
	if out.Error != nil && out.Error.Traceback != "" && !slices.ContainsFunc(out.Errors, out.Error.same) {
		// An error the reply alone reported (a kernel that sends no error
		// output, or a death) still shows its traceback.
		body += "\n" + out.Error.Traceback
	}
	// The limit applies to everything the result says in text.
	for i, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			var t bool
			tc.Text, t = history.CutMiddle(tc.Text, limit)
			truncated[3] = truncated[3] || t
			content[i] = tc
		}
	}
	body, t := history.CutMiddle(body, limit)
	truncated[3] = truncated[3] || t
	out.Truncated = slices.Contains(truncated[:], true) || (res != nil && (res.OmittedBytes > 0 || res.OmittedOutputs > 0 || res.RateLimited))
	if len(lead) > 0 {
		content = append([]mcp.Content{&mcp.TextContent{Text: strings.Join(lead, "\n")}}, content...)
	}
	if strings.TrimSpace(body) != "" {
		content = append(content, &mcp.TextContent{Text: strings.TrimRight(body, "\n")})
	}
	if len(content) == 0 {
		content = append(content, &mcp.TextContent{Text: "(no output)"})
	}
	return content
}

func ensureNewline(b *strings.Builder) {
	s := b.String()
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// limitJoined holds a result joined from several blocks' results (rerun_code,
// run_code with start/end, run_notebook) to the output limit as a whole, as
// one block's result is: its text content in all, and the blocks' results
// and tracebacks in all, each cut in the middle with a note of what was
// left out. Cutting each block on its own let ten blocks return ten times
// the limit.
func (s *Server) limitJoined(res *mcp.CallToolResult, out RunOutput, err error) (*mcp.CallToolResult, RunOutput, error) {
	limit := s.cfg.OutputLimit
	if err != nil || res == nil || limit <= 0 {
		return res, out, err
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	texts, cut := history.CutAcross(texts, limit)
	if cut {
		content := make([]mcp.Content, 0, len(res.Content))
		i := 0
		for _, c := range res.Content {
			if _, ok := c.(*mcp.TextContent); ok {
				if t := texts[i]; t != "" {
					content = append(content, &mcp.TextContent{Text: t})
				}
				i++
				continue
			}
			content = append(content, c)
		}
		c := *res
		c.Content = content
		res = &c
	}
	var strs []string
	for _, b := range out.Blocks {
		strs = append(strs, b.Result)
		if b.Error != nil {
			strs = append(strs, b.Error.Traceback)
		}
	}
	strs, bcut := history.CutAcross(strs, limit)
	if bcut {
		blocks := slices.Clone(out.Blocks)
		i := 0
		for n := range blocks {
			blocks[n].Result = strs[i]
			i++
			if e := blocks[n].Error; e != nil {
				c := *e // shared with the block's own result
				c.Traceback = strs[i]
				blocks[n].Error = &c
				i++
			}
		}
		out.Blocks = blocks
	}
	out.Truncated = out.Truncated || cut || bcut
	return res, out, nil
}
