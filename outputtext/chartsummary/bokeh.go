package chartsummary

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Bokeh's notebook output (show(p) after output_notebook()) is a
// display whose application/javascript embeds the document as
//
//	const docs_json = {"<uuid>": {"roots": [{"type": "object", "name": "Figure", "id": "p1008", "attributes": {...}}], ...}};
//
// Objects are {"type": "object", "name": ..., "id": ..., "attributes":
// ...} the first time they appear and {"id": ...} after; a
// ColumnDataSource's data is {"type": "map", "entries": [[column, values]]}
// with values a JSON array or {"type": "ndarray", "array": {"type":
// "bytes", "data": base64}, "shape": [n], "dtype": "float64"}.

// SummarizeBokeh describes the Bokeh document docsJSON (the value of
// docs_json in Bokeh's notebook JavaScript): each Figure's title, axis
// labels and ranges, glyph kinds and, per renderer, its legend label (or
// glyph) and points. Several figures (a gridplot) are subplots.
func SummarizeBokeh(docsJSON []byte) (*Summary, error) {
	if len(docsJSON) > MaxSpecBytes {
		return nil, fmt.Errorf("chartsummary: %w: %d bytes, the limit is %d", ErrTooLarge, len(docsJSON), MaxSpecBytes)
	}
	var docs map[string]json.RawMessage
	if err := json.Unmarshal(docsJSON, &docs); err != nil {
		return nil, fmt.Errorf("chartsummary: bokeh docs_json is not a JSON object: %w", err)
	}
	b := &bokehDoc{byID: map[string]obj{}}
	for _, d := range docs {
		b.collect(d, 0)
	}
	s := &Summary{Library: "bokeh"}
	var series seriesAcc
	var kinds kindSet
	var panels []Subplot
	var xs, ys []*axisAcc
	for _, fig := range b.figures {
		p, x, y := b.figure(fig, &series, &kinds)
		panels = append(panels, p)
		xs, ys = append(xs, x), append(ys, y)
	}
	s.Kinds = kinds
	switch len(panels) {
	case 0:
		return nil, fmt.Errorf("chartsummary: bokeh document has no figure")
	case 1:
		s.Title = panels[0].Title
		s.X, s.Y = xs[0].axis(), ys[0].axis()
	default:
		for i, p := range panels {
			if i == MaxSubplots {
				s.MoreSubplots = len(panels) - MaxSubplots
				break
			}
			s.Subplots = append(s.Subplots, p)
		}
	}
	series.fill(s)
	for _, n := range series.names {
		s.Points += series.points[n]
	}
	return s, nil
}

type bokehDoc struct {
	byID    map[string]obj
	figures []obj
}

// collect indexes every serialized object by id, and notes the figures in
// the order they appear.
func (b *bokehDoc) collect(raw json.RawMessage, depth int) {
	if depth > 64 || len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '[':
		for _, v := range asArray(raw) {
			b.collect(v, depth+1)
		}
	case '{':
		o := asObj(raw)
		if o.str("type") == "object" && o.str("id") != "" && o.has("name") {
			if _, seen := b.byID[o.str("id")]; !seen {
				b.byID[o.str("id")] = o
				if o.str("name") == "Figure" {
					b.figures = append(b.figures, o)
				}
			}
		}
		for _, v := range o {
			b.collect(v, depth+1)
		}
	}
}

// ref resolves a reference ({"id": ...}) to the object serialized in full.
func (b *bokehDoc) ref(raw json.RawMessage) obj {
	o := asObj(raw)
	if o == nil {
		return nil
	}
	if full, ok := b.byID[o.str("id")]; ok {
		return full
	}
	return o
}

// bokehKinds names glyphs as the other libraries' kinds.
var bokehKinds = map[string]string{
	"VBar": "bar", "HBar": "bar", "Scatter": "scatter", "Circle": "scatter",
	"Line": "line", "MultiLine": "line", "Step": "line",
	"VArea": "area", "HArea": "area", "Patch": "area", "Patches": "area",
}

func (b *bokehDoc) figure(fig obj, series *seriesAcc, kinds *kindSet) (Subplot, *axisAcc, *axisAcc) {
	attrs := fig.obj("attributes")
	p := Subplot{Title: label(b.ref(attrs["title"]).obj("attributes").str("text"))}
	x := &axisAcc{title: b.axisLabel(attrs["below"], attrs["above"])}
	y := &axisAcc{title: b.axisLabel(attrs["left"], attrs["right"])}
	names := b.legendLabels(attrs)
	var pk kindSet
	for _, r := range asArray(attrs["renderers"]) {
		ro := b.ref(r)
		if ro.str("name") != "GlyphRenderer" {
			continue
		}
		ra := ro.obj("attributes")
		glyph := b.ref(ra["glyph"])
		kind := bokehKinds[glyph.str("name")]
		if kind == "" {
			kind = strings.ToLower(glyph.str("name"))
		}
		if kind != "" {
			kinds.add(kind)
			pk.add(kind)
		}
		data := b.columns(b.ref(ra["data_source"]))
		ga := glyph.obj("attributes")
		xk, yk := "x", "y"
		switch glyph.str("name") {
		case "VBar":
			yk = "top"
		case "HBar":
			xk = "right"
		}
		n := 0
		for _, ax := range []struct {
			acc *axisAcc
			key string
		}{{x, xk}, {y, yk}} {
			if col, ok := data[asObj(ga[ax.key]).str("field")]; ok {
				m, _ := scanValues(col.values, MaxPointsPerTrace, ax.acc.add)
				n = max(n, m, col.shape)
			}
		}
		name := names[ro.str("id")]
		if name == "" {
			name = label(ra.str("name"))
		}
		if name == "" {
			name = kind
		}
		series.add(name, n)
	}
	p.Kinds = pk
	p.X, p.Y = x.axis(), y.axis()
	return p, x, y
}

// axisLabel is the label of the first axis in the lists given.
func (b *bokehDoc) axisLabel(lists ...json.RawMessage) string {
	for _, l := range lists {
		for _, a := range asArray(l) {
			if t, ok := asString(b.ref(a).obj("attributes")["axis_label"]); ok && t != "" {
				return t
			}
		}
	}
	return ""
}

// legendLabels maps renderer ids to their legend labels.
func (b *bokehDoc) legendLabels(figAttrs obj) map[string]string {
	out := map[string]string{}
	for _, side := range []string{"center", "right", "left", "above", "below"} {
		for _, l := range asArray(figAttrs[side]) {
			lo := b.ref(l)
			if lo.str("name") != "Legend" {
				continue
			}
			for _, it := range asArray(lo.obj("attributes")["items"]) {
				ia := b.ref(it).obj("attributes")
				lbl := ia.obj("label")
				text := lbl.str("value")
				if text == "" {
					text = lbl.str("field")
				}
				for _, r := range asArray(ia["renderers"]) {
					if id := asObj(r).str("id"); id != "" && text != "" {
						out[id] = label(text)
					}
				}
			}
		}
	}
	return out
}

// bokehDtypes maps Bokeh's ndarray dtypes to plotly's typed-array ones.
var bokehDtypes = map[string]string{"float64": "f8", "float32": "f4", "int32": "i4", "uint32": "u4", "int16": "i2", "uint16": "u2", "int8": "i1", "uint8": "u1"}

// column is one column of a ColumnDataSource: a JSON array or a plotly
// typed array (see scanTyped), and for an ndarray its length.
type column struct {
	values json.RawMessage
	shape  int
}

// columns returns a ColumnDataSource's columns by name.
func (b *bokehDoc) columns(src obj) map[string]column {
	out := map[string]column{}
	data := src.obj("attributes").obj("data")
	for _, e := range asArray(data["entries"]) {
		kv := asArray(e)
		if len(kv) != 2 {
			continue
		}
		name, ok := asString(kv[0])
		if !ok || name == "" {
			continue
		}
		c := column{values: kv[1]}
		if o := asObj(kv[1]); o != nil && o.str("type") == "ndarray" {
			c.shape, _ = typedShape(o["shape"])
			c.values = nil
			if dt := bokehDtypes[o.str("dtype")]; dt != "" && o.str("order") != "big" {
				if b64, ok := gunzipBase64(o.obj("array").str("data")); ok {
					c.values, _ = json.Marshal(map[string]json.RawMessage{"dtype": jsonString(dt), "bdata": jsonString(b64), "shape": o["shape"]})
				}
			}
		}
		out[name] = c
	}
	return out
}

// gunzipBase64 returns an ndarray's base64 bytes uncompressed: Bokeh
// gzips large arrays. At most MaxSpecBytes are inflated.
func gunzipBase64(b64 string) (string, bool) {
	if !strings.HasPrefix(b64, "H4sI") { // base64 of the gzip magic
		return b64, true
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", false
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return "", false
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxSpecBytes))
	if err != nil {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(out), true
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
