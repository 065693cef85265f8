package chartsummary

import "encoding/json"

// summarizeVega describes a Vega spec as far as its inline data allows:
// mark types, the title, the axes' titles and their scales' domains, and
// the series of a colour legend. Data loaded from URLs or derived by
// transforms is not evaluated.
func summarizeVega(s *Summary, spec obj) {
	s.Title = label(titleText(spec["title"]))

	data := map[string]json.RawMessage{}
	for _, raw := range asArray(spec["data"]) {
		d := asObj(raw)
		if name := d.str("name"); name != "" && asArray(d["values"]) != nil {
			data[name] = d["values"]
		}
	}
	scales := map[string]obj{}
	var kinds kindSet
	var walkMarks func(raw json.RawMessage, depth int)
	walkMarks = func(raw json.RawMessage, depth int) {
		if depth > maxDepth {
			return
		}
		for _, m := range asArray(raw) {
			mo := asObj(m)
			if t := mo.str("type"); t != "" && t != "group" {
				kinds.add(t)
			}
			walkMarks(mo["marks"], depth+1)
		}
	}
	for _, raw := range asArray(spec["scales"]) {
		sc := asObj(raw)
		if name := sc.str("name"); name != "" {
			scales[name] = sc
		}
	}
	walkMarks(spec["marks"], 0)
	s.Kinds = kinds

	rows, budget := 0, maxRowsScanned
	for _, raw := range asArray(spec["axes"]) {
		a := asObj(raw)
		var target **Axis
		switch a.str("orient") {
		case "bottom", "top":
			target = &s.X
		case "left", "right":
			target = &s.Y
		default:
			continue
		}
		if *target != nil {
			continue
		}
		sc := scales[a.str("scale")]
		acc := &axisAcc{title: titleText(a["title"])}
		switch sc.str("type") {
		case "band", "point", "ordinal":
			acc.categorical = true
		}
		n, truncated := scanDomain(sc, data, &budget, acc.add)
		rows = max(rows, n)
		s.Truncated = s.Truncated || truncated
		*target = acc.axis()
	}

	var series seriesAcc
	for _, raw := range asArray(spec["legends"]) {
		l := asObj(raw)
		for _, k := range []string{"fill", "stroke", "color", "shape"} {
			sc := scales[l.str(k)]
			if sc == nil {
				continue
			}
			series = seriesAcc{}
			n, truncated := scanDomain(sc, data, &budget, func(v json.RawMessage) {
				name := string(v)
				if str, ok := asString(v); ok {
					name = str
				}
				if len(v) > 0 && name != "null" {
					series.add(name, 1)
				}
			})
			rows = max(rows, n)
			s.Truncated = s.Truncated || truncated
			break
		}
		if len(series.names) > 0 {
			break
		}
	}
	series.fill(s)
	s.Points = rows
}

// scanDomain feeds a scale's domain values to fn: a literal array, or the
// field(s) of inline data it refers to. It returns the data rows read.
//
// budget is the values that may still be scanned in this spec; it shrinks
// by the values read, so many axes or legends over big data stay bounded.
func scanDomain(scale obj, data map[string]json.RawMessage, budget *int, fn func(json.RawMessage)) (int, bool) {
	if scale == nil {
		return 0, false
	}
	if lit := asArray(scale["domain"]); lit != nil {
		for i, v := range lit {
			if i == MaxPointsPerTrace {
				return 0, true
			}
			fn(v)
		}
		return 0, false
	}
	d := scale.obj("domain")
	var refs []obj
	if d.has("field") || d.has("fields") {
		refs = append(refs, d)
	}
	for _, f := range asArray(d["fields"]) {
		if fo := asObj(f); fo != nil {
			refs = append(refs, fo)
		}
	}
	rows, truncated := 0, false
	for _, ref := range refs {
		name := ref.str("data")
		if name == "" {
			name = d.str("data")
		}
		var fields []string
		if f := ref.str("field"); f != "" {
			fields = append(fields, f)
		}
		for _, f := range asArray(ref["fields"]) {
			if s, ok := asString(f); ok {
				fields = append(fields, s)
			}
		}
		for _, f := range fields {
			limit := max(0, min(MaxPointsPerTrace, *budget))
			n, t := scanValues(data[name], limit, func(raw json.RawMessage) {
				fn(asObj(raw)[f])
			})
			*budget -= n
			rows, truncated = max(rows, n), truncated || t
		}
	}
	return rows, truncated
}
