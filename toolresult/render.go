package toolresult

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
)

// Part is one item of a result's content: a text, an image inline, or a
// link to an image the session keeps. Image or Link is set for those; a
// part with neither is text.
type Part struct {
	Text  string
	Image *Image
	Link  *Link
}

// Image is an image inline in a result.
type Image struct {
	MIME string
	Data []byte
}

// Link points to an image a session keeps whole, as
// session://{id}/outputs/{n}.
type Link struct {
	URI, Name, Title, Description, MIME string
	Size                                *int64
}

func (p Part) isText() bool { return p.Image == nil && p.Link == nil }

// Result is a tool's result: its content, and whether it reports an error
// (a failed run, not a failed call).
type Result struct {
	Parts   []Part
	IsError bool
}

// TextResult is a result of one text.
func TextResult(text string) *Result { return &Result{Parts: []Part{{Text: text}}} }

// widgetViewMIME is the MIME type of an ipywidgets view (its model_id).
const widgetViewMIME = "application/vnd.jupyter.widget-view+json"

// maxInlineImage is the largest image (decoded bytes) render puts inline
// when it has no image policy.
const maxInlineImage = 5 << 20

// render turns an execution's outputs into content and the structured
// result, with no session to keep images in: an image goes inline up to
// maxInlineImage bytes. Servers use Renderer.Block.
func render(res *kernel.ExecuteResult, out *RunOutput, limit int) []Part {
	return Render(res, out, limit, nil, engine.StreamShown{})
}

// Render turns an execution's outputs into content and the structured
// result. Text content follows arrival order; each image becomes
// what pol makes of it (see renderImage). Output beyond limit characters is
// cut in the middle. Stream text that shown says earlier calls returned
// (see wait_run) stays in the structured stdout and stderr but is not
// repeated in the text.
func Render(res *kernel.ExecuteResult, out *RunOutput, limit int, pol *ImagePolicy, shown engine.StreamShown) []Part {
	var (
		text    strings.Builder
		content []Part
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
				if pol != nil && pol.WidgetText != nil {
					// A widget view is its state at the end of the run: a
					// control's value, a progress bar's last line, what an
					// Output widget captured.
					if t, ok := pol.WidgetText(o); ok {
						plain, from = history.PlainText(t), widgetViewMIME
					}
				}
				short := plain // what the structured entry carries besides Chart
				if d.Chart != nil {
					short = d.Note
				}
				var (
					img      []Part
					resource string
					drawn    bool
				)
				if pol != nil && pol.ModelImage != nil {
					// A chart or an SVG, drawn as a PNG for the model.
					if png, ok, err := pol.ModelImage(o, d); ok {
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
						content = append(content, Part{Text: text.String()})
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
	for i := range content {
		if p := &content[i]; p.isText() {
			var t bool
			p.Text, t = history.CutMiddle(p.Text, limit)
			truncated[3] = truncated[3] || t
		}
	}
	body, t := history.CutMiddle(body, limit)
	truncated[3] = truncated[3] || t
	out.Truncated = slices.Contains(truncated[:], true) || (res != nil && (res.OmittedBytes > 0 || res.OmittedOutputs > 0 || res.RateLimited))
	if len(lead) > 0 {
		content = append([]Part{{Text: strings.Join(lead, "\n")}}, content...)
	}
	if strings.TrimSpace(body) != "" {
		content = append(content, Part{Text: strings.TrimRight(body, "\n")})
	}
	if len(content) == 0 {
		content = append(content, Part{Text: "(no output)"})
	}
	return content
}

func ensureNewline(b *strings.Builder) {
	s := b.String()
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// LimitJoined holds a result joined from several blocks' results (rerun_code,
// run_code with start/end, run_notebook) to the output limit as a whole, as
// one block's result is: its text content in all, and the blocks' results
// and tracebacks in all, each cut in the middle with a note of what was
// left out. Cutting each block on its own let ten blocks return ten times
// the limit.
func (rd Renderer) LimitJoined(res *Result, out RunOutput, err error) (*Result, RunOutput, error) {
	limit := rd.Limit
	if err != nil || res == nil || limit <= 0 {
		return res, out, err
	}
	var texts []string
	for _, p := range res.Parts {
		if p.isText() {
			texts = append(texts, p.Text)
		}
	}
	texts, cut := history.CutAcross(texts, limit)
	if cut {
		parts := make([]Part, 0, len(res.Parts))
		i := 0
		for _, p := range res.Parts {
			if p.isText() {
				if t := texts[i]; t != "" {
					parts = append(parts, Part{Text: t})
				}
				i++
				continue
			}
			parts = append(parts, p)
		}
		c := *res
		c.Parts = parts
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
