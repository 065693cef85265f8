package chartsummary

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
)

// plotlyNoAxes are the trace types drawn without cartesian x/y axes.
var plotlyNoAxes = map[string]bool{
	"pie": true, "sunburst": true, "treemap": true, "icicle": true, "funnelarea": true,
	"sankey": true, "table": true, "parcoords": true, "parcats": true, "indicator": true,
	"scatter3d": true, "surface": true, "mesh3d": true, "cone": true, "streamtube": true,
	"volume": true, "isosurface": true, "scattergeo": true, "choropleth": true,
	"scattermapbox": true, "choroplethmapbox": true, "densitymapbox": true,
	"scattermap": true, "choroplethmap": true, "densitymap": true,
	"scatterpolar": true, "scatterpolargl": true, "barpolar": true,
	"scatterternary": true, "scattersmith": true, "carpet": true,
}

// plotlyZ are the trace types that colour a grid of z values; they show no
// legend entry unless asked to.
var plotlyZ = map[string]bool{"heatmap": true, "heatmapgl": true, "contour": true}

// scanCells feeds the values of a z grid to fn: a typed array (any shape)
// or a JSON array of rows. It returns the cells read and whether the limit
// cut the scan short.
func scanCells(raw json.RawMessage, limit int, fn func(json.RawMessage)) (int, bool) {
	if o := asObj(raw); o != nil {
		return scanTyped(o, limit, fn)
	}
	cells, truncated := 0, false
	scanValues(raw, limit, func(row json.RawMessage) {
		if truncated {
			return
		}
		if len(row) > 0 && row[0] == '[' {
			n, t := scanValues(row, limit-cells, fn)
			cells += n
			truncated = t
			return
		}
		cells++
		fn(row)
	})
	return cells, truncated
}

// plotlyPanel is one x/y axis pair and the traces drawn on it.
type plotlyPanel struct {
	xref, yref string
	kinds      kindSet
	x, y, z    *axisAcc
}

var (
	htmlBreak = regexp.MustCompile(`(?i)<br\s*/?>`)
	htmlTag   = regexp.MustCompile(`<[^<>]{0,200}>`)
)

// plotlyText drops the HTML plotly allows in titles and labels.
func plotlyText(s string) string {
	s = htmlBreak.ReplaceAllString(s, " ")
	return htmlTag.ReplaceAllString(s, "")
}

// axisKey turns a trace's axis reference ("x", "x2") into its layout key
// ("xaxis", "xaxis2").
func axisKey(ref string) string {
	if len(ref) < 1 {
		return ""
	}
	return ref[:1] + "axis" + ref[1:]
}

func summarizePlotly(s *Summary, fig obj) {
	layout := fig.obj("layout")
	s.Title = label(plotlyText(titleText(layout["title"])))

	var (
		kinds   kindSet
		series  seriesAcc
		panels  []*plotlyPanel
		byRef   = map[string]*plotlyPanel{}
		noAxes  = &plotlyPanel{}
		used    bool // some trace was drawn without axes
		budget  = maxRowsScanned
		traces  = asArray(fig["data"])
		axisObj = func(ref string) obj { return layout.obj(axisKey(ref)) }
	)
	for _, raw := range traces {
		t := asObj(raw)
		if t == nil {
			continue
		}
		typ := t.str("type")
		if typ == "" {
			typ = "scatter"
		}
		kind := typ
		if (typ == "scatter" || typ == "scattergl") && strings.Contains(t.str("mode"), "lines") {
			kind = "line"
		}
		kinds.add(kind)

		var p *plotlyPanel
		if plotlyNoAxes[typ] {
			p, used = noAxes, true
		} else {
			xref, yref := t.str("xaxis"), t.str("yaxis")
			if xref == "" || !strings.HasPrefix(xref, "x") {
				xref = "x"
			}
			if yref == "" || !strings.HasPrefix(yref, "y") {
				yref = "y"
			}
			key := xref + "/" + yref
			if p = byRef[key]; p == nil {
				p = &plotlyPanel{xref: xref, yref: yref}
				p.x = plotlyAxis(axisObj(xref))
				p.y = plotlyAxis(axisObj(yref))
				byRef[key] = p
				panels = append(panels, p)
			}
		}
		p.kinds.add(kind)
		if p.x == nil {
			p.x, p.y = &axisAcc{}, &axisAcc{}
		}

		limit := max(0, min(MaxPointsPerTrace, budget))
		if typ == "pie" || typ == "funnelarea" {
			// A pie's legend entries are its labels, one slice each.
			n, tr := scanValues(t["labels"], limit, func(v json.RawMessage) {
				if str, ok := asString(v); ok {
					series.add(plotlyText(str), 1)
				} else if len(v) > 0 && v[0] != 'n' {
					series.add(string(v), 1)
				}
			})
			s.Truncated = s.Truncated || tr
			budget -= n
			s.Points += n
			continue
		}
		nx, tx := scanValues(t["x"], limit, p.x.add)
		ny, ty := scanValues(t["y"], limit, p.y.add)
		budget -= nx + ny
		points := max(nx, ny)
		var tz bool
		if plotlyZ[typ] {
			if p.z == nil {
				p.z = &axisAcc{quantitative: true}
			}
			var cells int
			cells, tz = scanCells(t["z"], max(0, min(MaxPointsPerTrace, budget)), p.z.add)
			budget -= cells
			points = cells
		}
		s.Truncated = s.Truncated || tx || ty || tz
		s.Points += points
		legend := t.boolOr("showlegend", !plotlyZ[typ])
		if name := plotlyText(t.str("name")); name != "" && legend && t.boolOr("visible", true) {
			series.add(name, points)
		}
	}
	s.Kinds = kinds
	series.fill(s)

	facet := plotlyFacets(layout)
	if facet != nil {
		facet.Count = max(facet.Count, len(panels))
		s.Facet = facet
	}
	all := panels
	if used {
		all = append(all, noAxes)
	}
	switch {
	case len(all) == 0:
	case len(all) == 1 || facet != nil:
		x, y, z := &axisAcc{}, &axisAcc{}, &axisAcc{}
		for _, p := range all {
			x.merge(p.x)
			y.merge(p.y)
			z.merge(p.z)
		}
		s.X, s.Y, s.Z = x.axis(), y.axis(), z.axis()
	default:
		titles := subplotTitles(layout, panels, axisObj)
		for i, p := range all {
			if i == MaxSubplots {
				s.MoreSubplots = len(all) - MaxSubplots
				break
			}
			sp := Subplot{Kinds: p.kinds, X: p.x.axis(), Y: p.y.axis(), Z: p.z.axis()}
			if i < len(titles) {
				sp.Title = titles[i]
			}
			s.Subplots = append(s.Subplots, sp)
		}
	}
}

// plotlyAxis starts an axis from its layout entry.
func plotlyAxis(layoutAxis obj) *axisAcc {
	return &axisAcc{
		title:       plotlyText(titleText(layoutAxis["title"])),
		categorical: layoutAxis.str("type") == "category" || layoutAxis.str("type") == "multicategory",
	}
}

// facetLabel matches the "field=value" annotations plotly express writes
// above (facet_col) or beside (facet_row) each facet.
var facetLabel = regexp.MustCompile(`^([^=<>]{1,200})=(.*)$`)

// plotlyFacets recognises plotly express facets from the layout's
// annotations: every annotation is "field=value" placed on the paper.
func plotlyFacets(layout obj) *Facet {
	anns := asArray(layout["annotations"])
	if len(anns) == 0 {
		return nil
	}
	f := &Facet{}
	var fields kindSet
	for _, raw := range anns {
		a := asObj(raw)
		m := facetLabel.FindStringSubmatch(a.str("text"))
		if m == nil || a.str("xref") != "paper" || a.str("yref") != "paper" {
			return nil
		}
		fields.add(m[1])
		if len(f.Values) < MaxCategoriesShown {
			f.Values = append(f.Values, label(plotlyText(m[2])))
		}
		f.Count++
	}
	f.Fields = fields
	if len(fields) > 1 {
		// Rows × columns: the panel count is set by the caller.
		f.Count = 0
	}
	return f
}

// subplotTitles finds make_subplots' titles: paper annotations centred
// above a panel (x within its x domain, y at the top of its y domain).
func subplotTitles(layout obj, panels []*plotlyPanel, axisObj func(string) obj) []string {
	// Only the panels the summary describes need titles; reading each
	// panel's domains once keeps this linear in the annotations.
	panels = panels[:min(len(panels), MaxSubplots)]
	type box struct{ x0, x1, top float64 }
	boxes := make([]box, len(panels))
	for i, p := range panels {
		boxes[i].x0, boxes[i].x1 = domain(axisObj(p.xref))
		_, boxes[i].top = domain(axisObj(p.yref))
	}
	titles := make([]string, len(panels))
	for _, raw := range asArray(layout["annotations"]) {
		a := asObj(raw)
		if a.str("xref") != "paper" || a.str("yref") != "paper" {
			continue
		}
		ax, okx := asNumber(a["x"])
		ay, oky := asNumber(a["y"])
		if !okx || !oky {
			continue
		}
		for i, b := range boxes {
			if titles[i] == "" && ax >= b.x0 && ax <= b.x1 && math.Abs(ay-b.top) < 0.05 {
				titles[i] = label(plotlyText(a.str("text")))
				break
			}
		}
	}
	return titles
}

// domain reads an axis's [start, end] domain on the paper (default [0, 1]).
func domain(axis obj) (float64, float64) {
	d := asArray(axis["domain"])
	if len(d) != 2 {
		return 0, 1
	}
	lo, ok1 := asNumber(d[0])
	hi, ok2 := asNumber(d[1])
	if !ok1 || !ok2 {
		return 0, 1
	}
	return lo, hi
}
