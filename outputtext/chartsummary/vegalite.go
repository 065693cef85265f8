package chartsummary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
)

// vlData is the data a Vega-Lite view draws: inline rows, or none when the
// data is loaded from a URL or generated.
type vlData struct {
	key  string // identifies the rows, so each is counted once
	rows json.RawMessage
}

// vlPanel is one plot: a unit view or a layer of them sharing axes.
type vlPanel struct {
	title string
	kinds kindSet
	x, y  *axisAcc
}

func (p *vlPanel) merge(q *vlPanel) {
	if p.title == "" {
		p.title = q.title
	}
	for _, k := range q.kinds {
		p.kinds.add(k)
	}
	p.x.merge(q.x)
	p.y.merge(q.y)
}

func newPanel() *vlPanel { return &vlPanel{x: &axisAcc{}, y: &axisAcc{}} }

// vlWalker walks a Vega-Lite spec's views, gathering what the summary needs.
type vlWalker struct {
	datasets   obj
	seed       maphash.Seed
	kinds      kindSet
	series     seriesAcc
	seriesSeen map[string]bool
	rows       map[string]int
	facet      *Facet
	extra      int // subplots not walked (repeat beyond MaxSubplots)
	views      int // views walked, bounded by maxViews
	rowBudget  int // data rows that may still be scanned
	truncated  bool
}

func summarizeVegaLite(s *Summary, spec obj) {
	w := &vlWalker{datasets: spec.obj("datasets"), seed: maphash.MakeSeed(), rowBudget: maxRowsScanned, seriesSeen: map[string]bool{}, rows: map[string]int{}}
	panels := w.walk(spec, vlData{}, nil, nil, 0)
	s.Title = label(titleText(spec["title"]))
	if s.Title == "" && len(panels) == 1 {
		s.Title = label(panels[0].title)
	}
	s.Kinds = w.kinds
	s.Facet = w.facet
	w.series.fill(s)
	for _, n := range w.rows {
		s.Points += n
	}
	s.Truncated = w.truncated
	switch {
	case len(panels) == 1 && w.extra == 0:
		s.X, s.Y = panels[0].x.axis(), panels[0].y.axis()
	case len(panels) > 0:
		for i, p := range panels {
			if i == MaxSubplots {
				s.MoreSubplots = len(panels) - MaxSubplots
				break
			}
			s.Subplots = append(s.Subplots, Subplot{Title: label(p.title), Kinds: p.kinds, X: p.x.axis(), Y: p.y.axis()})
		}
		s.MoreSubplots += w.extra
	}
}

// data resolves a view's data: its own, or else the one it inherits.
func (w *vlWalker) data(spec obj, inherited vlData) vlData {
	d := spec.obj("data")
	if d == nil {
		return inherited
	}
	if v := d["values"]; len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '[' {
		// Keyed by content: a repeated or layered view decodes the same
		// inline rows afresh, and they must count once.
		return vlData{key: fmt.Sprintf("values:%d:%x", len(v), maphash.Bytes(w.seed, v)), rows: v}
	}
	if name := d.str("name"); name != "" {
		if rows, ok := w.datasets[name]; ok {
			return vlData{key: "dataset:" + name, rows: rows}
		}
	}
	return vlData{}
}

// mergeEncoding lets a view's channels override the ones it inherits.
func mergeEncoding(inherited, own obj) obj {
	if len(inherited) == 0 {
		return own
	}
	out := obj{}
	for k, v := range inherited {
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}

// walk returns the panels a view draws; repeat binds {"repeat": …} fields.
func (w *vlWalker) walk(spec obj, inherited vlData, enc obj, repeat map[string]string, depth int) []*vlPanel {
	if spec == nil || depth > maxDepth || w.views >= maxViews {
		return nil
	}
	w.views++
	data := w.data(spec, inherited)
	enc = mergeEncoding(enc, spec.obj("encoding"))
	title := titleText(spec["title"])

	if layers := asArray(spec["layer"]); layers != nil {
		p := newPanel()
		p.title = title
		for _, l := range layers {
			for _, q := range w.walk(asObj(l), data, enc, repeat, depth+1) {
				p.merge(q)
			}
		}
		return []*vlPanel{p}
	}
	for _, key := range []string{"hconcat", "vconcat", "concat"} {
		if views := asArray(spec[key]); views != nil {
			var out []*vlPanel
			for _, v := range views {
				out = append(out, w.walk(asObj(v), data, nil, repeat, depth+1)...)
			}
			return out
		}
	}
	if inner := spec.obj("spec"); inner != nil && spec.has("facet") {
		w.addFacet(facetFields(spec["facet"], repeat), data)
		p := newPanel()
		p.title = title
		for _, q := range w.walk(inner, data, nil, repeat, depth+1) {
			p.merge(q)
		}
		return []*vlPanel{p}
	}
	if inner := spec.obj("spec"); inner != nil && spec.has("repeat") {
		return w.repeat(spec["repeat"], inner, data, repeat, depth)
	}
	if !spec.has("mark") {
		return nil
	}
	return []*vlPanel{w.unit(spec, data, enc, repeat, title)}
}

// repeat walks a repeated view once per row × column combination (one
// panel each), layering the "layer" fields within a panel.
func (w *vlWalker) repeat(rep json.RawMessage, inner obj, data vlData, outer map[string]string, depth int) []*vlPanel {
	strs := func(raw json.RawMessage) []string {
		var out []string
		for _, v := range asArray(raw) {
			if s, ok := asString(v); ok {
				out = append(out, s)
			}
		}
		return out
	}
	var rows, cols, layers []string
	key := "repeat"
	if list := strs(rep); list != nil {
		cols = list
	} else if o := asObj(rep); o != nil {
		rows, cols, layers = strs(o["row"]), strs(o["column"]), strs(o["layer"])
		key = ""
	}
	if rows == nil {
		rows = []string{""}
	}
	if cols == nil {
		cols = []string{""}
	}
	if layers == nil {
		layers = []string{""}
	}
	// Only the outermost repeat is walked per combination: a repeat nested
	// in another is walked once, so nesting cannot multiply the work.
	maxPanels, maxLayers := MaxSubplots, MaxSubplots
	if outer != nil {
		maxPanels, maxLayers = 1, 1
	}
	var out []*vlPanel
	for _, r := range rows[:min(len(rows), maxPanels)] {
		for _, c := range cols[:min(len(cols), maxPanels)] {
			if len(out) == maxPanels {
				break
			}
			p := newPanel()
			for _, l := range layers[:min(len(layers), maxLayers)] {
				bind := map[string]string{}
				for k, v := range outer {
					bind[k] = v
				}
				if key != "" {
					bind[key] = c
				} else {
					bind["row"], bind["column"], bind["layer"] = r, c, l
				}
				for _, q := range w.walk(inner, data, nil, bind, depth+1) {
					p.merge(q)
				}
			}
			out = append(out, p)
		}
	}
	if outer == nil {
		// Both lists come from the spec, so their product is bounded by its size.
		w.extra += len(rows)*len(cols) - len(out)
	}
	return out
}

// channelField reads a channel's field, resolving {"repeat": "column"}.
func channelField(ch obj, repeat map[string]string) string {
	if f, ok := asString(ch["field"]); ok {
		return f
	}
	if r := ch.obj("field"); r != nil {
		return repeat[r.str("repeat")]
	}
	return ""
}

// facetFields reads the fields of a facet operator: {"field": …} or
// {"row": {"field": …}, "column": {"field": …}}.
func facetFields(raw json.RawMessage, repeat map[string]string) []string {
	f := asObj(raw)
	if f == nil {
		return nil
	}
	if name := channelField(f, repeat); name != "" {
		return []string{name}
	}
	var out []string
	for _, k := range []string{"row", "column", "facet"} {
		if name := channelField(f.obj(k), repeat); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func (w *vlWalker) addFacet(fields []string, data vlData) {
	if len(fields) == 0 {
		return
	}
	if w.facet == nil {
		w.facet = &Facet{}
	}
	count := 1
	for _, f := range fields {
		acc := &axisAcc{categorical: true}
		w.scanRows(data, []string{f}, func(v []json.RawMessage) { acc.add(v[0]) })
		w.facet.Fields = append(w.facet.Fields, label(f))
		count *= max(1, len(acc.catSet))
		if len(fields) == 1 {
			for _, c := range acc.cats {
				w.facet.Values = append(w.facet.Values, label(c))
			}
		}
	}
	if data.rows == nil {
		count = 0
	}
	w.facet.Count = count
}

// vlChannel is one positional channel of a unit view.
type vlChannel struct {
	field string
	acc   *axisAcc
}

// channel reads a positional channel into an axis accumulator.
func channel(ch obj, repeat map[string]string) vlChannel {
	if ch == nil {
		return vlChannel{}
	}
	field := channelField(ch, repeat)
	agg := ch.str("aggregate")
	acc := &axisAcc{}
	switch ch.str("type") {
	case "quantitative":
		acc.quantitative = true
	case "nominal", "ordinal":
		acc.categorical = true
	}
	switch {
	case ch.has("title"):
		acc.title = titleText(ch["title"])
	case ch.obj("axis").has("title"):
		acc.title = titleText(ch.obj("axis")["title"])
	case agg == "count":
		acc.title = "Count of Records"
	case agg != "":
		acc.title = agg + " of " + field
	default:
		acc.title = field
	}
	if agg != "" {
		acc.noRange = true
		field = ""
	}
	return vlChannel{field: field, acc: acc}
}

// unit summarizes a single-mark view.
func (w *vlWalker) unit(spec obj, data vlData, enc obj, repeat map[string]string, title string) *vlPanel {
	mark, ok := asString(spec["mark"])
	if !ok {
		mark = spec.obj("mark").str("type")
	}
	w.kinds.add(mark)
	p := &vlPanel{title: title}
	p.kinds.add(mark)

	x := channel(enc.obj("x"), repeat)
	y := channel(enc.obj("y"), repeat)
	var colorField string
	for _, c := range []string{"color", "fill", "stroke"} {
		ch := enc.obj(c)
		if f := channelField(ch, repeat); f != "" && ch.str("aggregate") == "" && ch.str("type") != "quantitative" {
			colorField = f
			break
		}
	}
	var facets []string
	for _, c := range []string{"row", "column", "facet"} {
		if f := channelField(enc.obj(c), repeat); f != "" {
			facets = append(facets, f)
		}
	}
	w.addFacet(facets, data)

	fields := []string{x.field, y.field, colorField}
	seriesKey := data.key + "\x00" + colorField
	countSeries := colorField != "" && !w.seriesSeen[seriesKey]
	w.seriesSeen[seriesKey] = true
	var colors seriesAcc
	n, truncated := w.scanRows(data, fields, func(v []json.RawMessage) {
		if x.acc != nil && x.field != "" {
			x.acc.add(v[0])
		}
		if y.acc != nil && y.field != "" {
			y.acc.add(v[1])
		}
		if countSeries && len(v[2]) > 0 {
			name := string(v[2])
			if s, ok := asString(v[2]); ok {
				name = s
			}
			colors.add(name, 1)
		}
	})
	if data.rows != nil {
		w.rows[data.key] = n
	}
	w.truncated = w.truncated || truncated
	for _, name := range colors.names {
		w.series.add(name, colors.points[name])
	}
	p.x, p.y = x.acc, y.acc
	if p.x == nil {
		p.x = &axisAcc{}
	}
	if p.y == nil {
		p.y = &axisAcc{}
	}
	return p
}

// scanRows feeds the named fields of up to MaxPointsPerTrace rows to fn
// (an absent field is nil) and returns the rows read.
func (w *vlWalker) scanRows(data vlData, fields []string, fn func([]json.RawMessage)) (int, bool) {
	vals := make([]json.RawMessage, len(fields))
	limit := max(0, min(MaxPointsPerTrace, w.rowBudget))
	defer func() { w.rowBudget -= limit }()
	return scanValues(data.rows, limit, func(raw json.RawMessage) {
		row := asObj(raw)
		for i, f := range fields {
			vals[i] = nil
			if f == "" || row == nil {
				continue
			}
			v, ok := row[f]
			if !ok && strings.Contains(f, `\`) {
				// Altair escapes dots and brackets in column names.
				v = row[strings.NewReplacer(`\.`, ".", `\[`, "[", `\]`, "]").Replace(f)]
			}
			vals[i] = bytes.TrimSpace(v)
		}
		fn(vals)
	})
}
