// Package widgettext renders an ipywidgets view as text for a reader that
// cannot see it: a control as its kind, description and value, a container
// as its children one per line, an Output widget as the outputs it holds,
// and tqdm's notebook bar as the line tqdm prints in a terminal.
//
//	if text, ok := widgettext.Render(k.Widgets(), out); ok {
//		// text stands for out's text/plain ("IntSlider(value=3)")
//	}
//
// It reads the models a kernel.Widgets tracks, as they are when it is
// called: at the end of a run, the widgets' last state.
package widgettext

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Source gives a kernel's widget models by id; *kernel.Widgets is one.
type Source interface {
	Get(modelID string) (kernel.Widget, bool)
}

// The bounds of one rendering: the models are the kernel's to shape, so a
// deep or huge tree is cut rather than followed.
const (
	// MaxDepth is how deep containers are followed.
	MaxDepth = 16
	// MaxLines is the most lines one view renders to.
	MaxLines = 500
	// maxScalar bounds a string shown of an unknown model's field.
	maxScalar = 60
)

// ModelID returns the model id of a widget view output (its
// application/vnd.jupyter.widget-view+json), or false when o shows no
// widget.
func ModelID(o kernel.Output) (string, bool) {
	raw, ok := o.Data[kernel.WidgetViewMIME]
	if !ok {
		return "", false
	}
	var v struct {
		ModelID string `json:"model_id"`
	}
	if json.Unmarshal(raw, &v) != nil || v.ModelID == "" {
		return "", false
	}
	return v.ModelID, true
}

// Render returns the text of the widget view o shows. ok is false when o
// shows no widget or src has no such model (it was closed, or the kernel
// restarted): the caller keeps o's text/plain then.
func Render(src Source, o kernel.Output) (text string, ok bool) {
	id, ok := ModelID(o)
	if !ok {
		return "", false
	}
	return RenderModel(src, id)
}

// RenderModel returns the text of model modelID and its children, one
// line per control, without a trailing newline; ok is false when src has
// no such model.
func RenderModel(src Source, modelID string) (text string, ok bool) {
	w, ok := src.Get(modelID)
	if !ok {
		return "", false
	}
	r := &renderer{src: src, path: map[string]bool{}}
	r.model(w, 0)
	if r.cut > 0 {
		r.lines = append(r.lines, fmt.Sprintf("[%d more lines not shown]", r.cut))
	}
	return strings.Join(r.lines, "\n"), true
}

type renderer struct {
	src   Source
	lines []string
	cut   int
	path  map[string]bool // the models being rendered, to stop at cycles
}

func (r *renderer) line(depth int, s string) {
	for l := range strings.SplitSeq(s, "\n") {
		if len(r.lines) >= MaxLines {
			r.cut++
			continue
		}
		r.lines = append(r.lines, strings.Repeat("  ", depth)+l)
	}
}

// kind is the model's name without its "Model" suffix: "IntSlider".
func kind(w kernel.Widget) string {
	k := strings.TrimSuffix(w.ModelName(), "Model")
	if k == "" {
		return "widget"
	}
	return k
}

func (r *renderer) model(w kernel.Widget, depth int) {
	if depth > MaxDepth {
		r.line(depth, "...")
		return
	}
	if r.path[w.ModelID] {
		r.line(depth, "("+kind(w)+", shown above)")
		return
	}
	r.path[w.ModelID] = true
	defer delete(r.path, w.ModelID)

	k := kind(w)
	switch {
	case k == "Output":
		r.outputs(w, depth)
	case isContainer(k):
		if line, ok := r.tqdm(w); ok {
			r.line(depth, line)
			return
		}
		r.container(w, k, depth)
	default:
		r.line(depth, r.control(w, k))
	}
}

func isContainer(k string) bool {
	switch k {
	case "HBox", "VBox", "Box", "GridBox", "Tab", "Accordion", "Stack":
		return true
	}
	return false
}

// container renders a box's kind, then its children one per line, indented;
// a Tab's or Accordion's children under their titles.
func (r *renderer) container(w kernel.Widget, k string, depth int) {
	r.line(depth, k)
	titles, _ := w.State["titles"].([]any)
	for i, c := range refs(w.State["children"]) {
		d := depth + 1
		if i < len(titles) {
			if t, _ := titles[i].(string); t != "" {
				r.line(d, "["+t+"]")
				d++
			}
		}
		cw, ok := r.src.Get(c)
		if !ok {
			r.line(d, "(a widget no longer available)")
			continue
		}
		r.model(cw, d)
	}
}

// refs returns the model ids an "IPY_MODEL_<id>" list names.
func refs(v any) []string {
	list, _ := v.([]any)
	var ids []string
	for _, e := range list {
		if s, ok := e.(string); ok && strings.HasPrefix(s, "IPY_MODEL_") {
			ids = append(ids, strings.TrimPrefix(s, "IPY_MODEL_"))
		}
	}
	return ids
}

// outputs renders an Output widget's outputs as a run's text shows them.
func (r *renderer) outputs(w kernel.Widget, depth int) {
	for _, o := range w.Outputs {
		switch o.Type {
		case kernel.OutputStream:
			r.line(depth, strings.TrimSuffix(history.PlainText(o.Text), "\n"))
		case kernel.OutputError:
			r.line(depth, o.EName+": "+o.EValue)
		default:
			if id, ok := ModelID(o); ok {
				if cw, ok := r.src.Get(id); ok {
					r.model(cw, depth)
					continue
				}
			}
			if plain, ok := o.String("text/plain"); ok {
				r.line(depth, strings.TrimSuffix(history.PlainText(plain), "\n"))
			} else if len(o.Data) > 0 {
				mimes := make([]string, 0, len(o.Data))
				for m := range o.Data {
					mimes = append(mimes, m)
				}
				slices.Sort(mimes)
				r.line(depth, "["+strings.Join(mimes, ", ")+"]")
			}
		}
	}
	if w.OmittedOutputs > 0 {
		r.line(depth, fmt.Sprintf("[%d more outputs not kept]", w.OmittedOutputs))
	}
}

// tqdm renders tqdm.notebook's bar, an HBox of an HTML (the text left of
// the bar: description and percentage), a progress bar and an HTML (the
// text right of it: n/total, times, rate, postfix), as the line tqdm
// prints in a terminal. tqdm puts that line's text in the two HTML
// widgets, HTML-escaped and with its spaces as figure spaces (U+2007).
func (r *renderer) tqdm(w kernel.Widget) (string, bool) {
	if kind(w) != "HBox" {
		return "", false
	}
	ids := refs(w.State["children"])
	if len(ids) != 3 {
		return "", false
	}
	var parts [3]kernel.Widget
	for i, id := range ids {
		c, ok := r.src.Get(id)
		if !ok {
			return "", false
		}
		parts[i] = c
	}
	pk := kind(parts[1])
	if kind(parts[0]) != "HTML" || kind(parts[2]) != "HTML" || (pk != "FloatProgress" && pk != "IntProgress") {
		return "", false
	}
	text := func(w kernel.Widget) string {
		s, _ := w.State["value"].(string)
		return strings.ReplaceAll(html.UnescapeString(s), "\u2007", " ")
	}
	left, right := text(parts[0]), text(parts[2])
	if left == "" {
		// No total: tqdm prints no bar, only the count and the rate.
		return strings.TrimLeft(right, " "), true
	}
	value, _ := number(parts[1].State["value"])
	hi, _ := number(parts[1].State["max"])
	frac := 0.0
	if hi > 0 {
		frac = min(max(value/hi, 0), 1)
	}
	return left + "|" + tqdmBar(frac) + "|" + right, true
}

// tqdmBar is tqdm's bar of 10 cells (tqdm.std.Bar with its UTF-8 charset,
// the width tqdm uses when it knows no terminal width).
func tqdmBar(frac float64) string {
	const cells = 10
	charset := []rune(" ▏▎▍▌▋▊▉█")
	nsyms := len(charset) - 1
	full, part := divmod(int(frac*cells*float64(nsyms)), nsyms)
	var b strings.Builder
	b.WriteString(strings.Repeat(string(charset[nsyms]), full))
	if full < cells {
		b.WriteRune(charset[part])
		b.WriteString(strings.Repeat(" ", cells-full-1))
	}
	return b.String()
}

func divmod(a, b int) (int, int) { return a / b, a % b }

// control renders one control on one line.
func (r *renderer) control(w kernel.Widget, k string) string {
	s := w.State
	desc := description(w)
	head := k
	if desc != "" {
		head += " " + strconv.Quote(desc)
	}
	switch {
	case k == "HTML" || k == "HTMLMath" || k == "Label":
		v, _ := s["value"].(string)
		t := v
		if k != "Label" {
			t = StripHTML(v)
		}
		if desc != "" {
			return desc + ": " + t
		}
		return t
	case k == "Button":
		return "Button " + strconv.Quote(desc)
	case k == "Password":
		return head + ": (hidden)"
	case k == "Dropdown" || k == "RadioButtons" || k == "Select" || k == "ToggleButtons" || k == "SelectionSlider":
		labels := strList(s["_options_labels"])
		sel := "(none)"
		if i, ok := number(s["index"]); ok && i >= 0 && int(i) < len(labels) {
			sel = labels[int(i)]
		}
		return fmt.Sprintf("%s: %s (options: %s)", head, sel, strings.Join(labels, ", "))
	case k == "SelectMultiple" || k == "SelectionRangeSlider":
		labels := strList(s["_options_labels"])
		idx, _ := s["index"].([]any)
		var sel []string
		for _, e := range idx {
			if i, ok := number(e); ok && i >= 0 && int(i) < len(labels) {
				sel = append(sel, labels[int(i)])
			}
		}
		sep := ", "
		if k == "SelectionRangeSlider" {
			sep = "–"
		}
		return fmt.Sprintf("%s: %s (options: %s)", head, strings.Join(sel, sep), strings.Join(labels, ", "))
	case k == "Checkbox" || k == "ToggleButton" || k == "Valid":
		return head + ": " + scalar(s["value"])
	case k == "Text" || k == "Textarea" || k == "Combobox":
		v, _ := s["value"].(string)
		return head + ": " + strconv.Quote(v)
	}
	if v, ok := s["value"]; ok && isNumeric(k) {
		line := head + ": " + value(v)
		if lo, hi := s["min"], s["max"]; lo != nil && hi != nil {
			rng := scalar(lo) + "–" + scalar(hi)
			if k == "FloatLogSlider" {
				b := scalar(s["base"])
				rng = b + "^" + scalar(lo) + "–" + b + "^" + scalar(hi)
			}
			if st, ok := s["step"]; ok && st != nil && !strings.HasSuffix(k, "Progress") {
				rng += ", step " + scalar(st)
			}
			line += " (" + rng + ")"
		}
		return line
	}
	return unknown(w, head)
}

func isNumeric(k string) bool {
	for _, p := range []string{"Slider", "Progress", "Text", "Play"} {
		if strings.HasSuffix(k, p) {
			return true
		}
	}
	return false
}

// value renders a control's value: a number, or a range's two ends.
func value(v any) string {
	if pair, ok := v.([]any); ok && len(pair) == 2 {
		return scalar(pair[0]) + "–" + scalar(pair[1])
	}
	return scalar(v)
}

// unknown renders a model this package has no rule for: its name and a
// few of its scalar fields.
func unknown(w kernel.Widget, head string) string {
	keys := make([]string, 0, len(w.State))
	for k, v := range w.State {
		if strings.HasPrefix(k, "_") || k == "description" || skipField[k] || v == nil {
			continue
		}
		switch v := v.(type) {
		case string:
			if strings.HasPrefix(v, "IPY_MODEL_") {
				continue
			}
		case json.Number, bool, []byte:
		default:
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 6 {
		keys = keys[:6]
	}
	fields := make([]string, len(keys))
	for i, k := range keys {
		fields[i] = k + ": " + scalar(w.State[k])
	}
	if len(fields) == 0 {
		return head
	}
	return head + " (" + strings.Join(fields, ", ") + ")"
}

// skipField are the fields of every widget that say nothing of its content.
var skipField = map[string]bool{"layout": true, "style": true, "tabbable": true, "tooltip": true,
	"disabled": true, "description_allow_html": true, "continuous_update": true, "readout": true,
	"readout_format": true, "orientation": true, "behavior": true, "placeholder": true}

// scalar renders a scalar state value.
func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case string:
		if len(v) > maxScalar {
			v = strings.ToValidUTF8(v[:maxScalar], "") + "…"
		}
		return strconv.Quote(v)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(v))
	default:
		return fmt.Sprintf("<%T>", v)
	}
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func strList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func description(w kernel.Widget) string {
	d, _ := w.State["description"].(string)
	if allow, _ := w.State["description_allow_html"].(bool); allow {
		d = StripHTML(d)
	}
	return d
}

// StripHTML returns the text of an HTML fragment: tags dropped (a '>'
// inside a quoted attribute value does not end one), with the contents of
// script and style elements; line-breaking tags (br, p, div, li, tr,
// h1–h6) as newlines; entities decoded; runs of blanks as one space. It is
// a plain scanner, not a parser (the module has no HTML parser): it never
// interprets the markup, it only keeps the text between tags, which is all
// a reader of the widget's text needs. An unclosed tag ends the text.
func StripHTML(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		end := tagEnd(s)
		if end < 0 {
			break // an unclosed tag: the rest is markup
		}
		closing := strings.HasPrefix(strings.TrimLeft(s[1:end], " "), "/")
		tag := strings.ToLower(strings.TrimLeft(s[1:end], "/ "))
		if f := strings.IndexAny(tag, " \t\n/"); f >= 0 {
			tag = tag[:f]
		}
		s = s[end+1:]
		switch tag {
		case "script", "style":
			if closing {
				break
			}
			if j := strings.Index(strings.ToLower(s), "</"+tag); j >= 0 {
				s = s[j:]
			} else {
				s = ""
			}
		case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
			b.WriteByte('\n')
		}
	}
	text := html.UnescapeString(b.String())
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// tagEnd is the index of the '>' that ends the tag s starts with, outside
// quoted attribute values; -1 when there is none.
func tagEnd(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i
		}
	}
	return -1
}
