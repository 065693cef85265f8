package chartsummary

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

var libraryNames = map[string]string{"plotly": "Plotly", "vega-lite": "Vega-Lite", "vega": "Vega", "bokeh": "Bokeh"}

// Text renders the summary in one line of at most MaxTextRunes runes, e.g.
//
//	Plotly scatter chart "Iris" — x: sepal_width (2–4.4), y: sepal_length (4.3–7.9); 3 series: setosa (50 points), versicolor (50), virginica (50)
//
// When the series do not all fit, fewer are listed and the rest counted
// ("and 9 more"); a rendering still too long is cut at a word boundary and
// ends in "…".
func (s *Summary) Text() string {
	if s == nil {
		return ""
	}
	for shown := len(s.Series); shown > 0; shown-- {
		if t := s.render(shown); utf8.RuneCountInString(t) <= MaxTextRunes {
			return t
		}
	}
	return cut(s.render(0), MaxTextRunes)
}

// render renders the summary listing only the first shown series.
func (s *Summary) render(shown int) string {
	var b strings.Builder
	b.WriteString(libraryNames[s.Library])
	if len(s.Kinds) > 0 {
		b.WriteString(" " + strings.Join(s.Kinds, "/"))
	}
	b.WriteString(" chart")
	if s.Title != "" {
		b.WriteString(` "` + s.Title + `"`)
	}
	var parts []string
	if axes := axesText(s.X, s.Y, s.Z); axes != "" {
		parts = append(parts, axes)
	}
	if f := s.Facet; f != nil {
		t := strconv.Itoa(f.Count) + " facets"
		if f.Count == 0 {
			t = "facets"
		}
		if len(f.Fields) > 0 {
			t += " by " + strings.Join(f.Fields, " and ")
		}
		if len(f.Values) > 0 {
			t += " (" + listText(f.Values, f.Count) + ")"
		}
		parts = append(parts, t)
	}
	if n := len(s.Subplots) + s.MoreSubplots; n > 0 {
		var sub []string
		for i, sp := range s.Subplots {
			t := "[" + strconv.Itoa(i+1) + "]"
			if len(sp.Kinds) > 0 {
				t += " " + strings.Join(sp.Kinds, "/")
			}
			if sp.Title != "" {
				t += ` "` + sp.Title + `"`
			}
			if axes := axesText(sp.X, sp.Y, sp.Z); axes != "" {
				t += " " + axes
			}
			sub = append(sub, t)
		}
		if s.MoreSubplots > 0 {
			sub = append(sub, "and "+strconv.Itoa(s.MoreSubplots)+" more")
		}
		parts = append(parts, strconv.Itoa(n)+" subplots: "+strings.Join(sub, "; "))
	}
	if n := len(s.Series) + s.MoreSeries; n > 0 {
		var ser []string
		for i, se := range s.Series[:shown] {
			t := se.Name + " (" + strconv.Itoa(se.Points)
			if i == 0 {
				t += plural(se.Points, " point", " points")
			}
			ser = append(ser, t+")")
		}
		if more := n - shown; more > 0 {
			ser = append(ser, "and "+strconv.Itoa(more)+" more")
		}
		parts = append(parts, strconv.Itoa(n)+" series: "+strings.Join(ser, ", "))
	} else if s.Points > 0 {
		parts = append(parts, strconv.Itoa(s.Points)+plural(s.Points, " point", " points"))
	}
	if s.Truncated {
		parts = append(parts, "only the first "+strconv.Itoa(MaxPointsPerTrace)+" values of long arrays were read")
	}
	if len(parts) > 0 {
		b.WriteString(" — " + strings.Join(parts, "; "))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// axesText renders "x: title (range), y: title (range), z: range".
func axesText(x, y, z *Axis) string {
	var parts []string
	for _, a := range []struct {
		name string
		ax   *Axis
	}{{"x", x}, {"y", y}, {"z", z}} {
		if a.ax != nil {
			parts = append(parts, a.name+": "+axisText(a.ax))
		}
	}
	return strings.Join(parts, ", ")
}

func axisText(a *Axis) string {
	var rng string
	switch {
	case a.Categories > 0:
		n := strconv.Itoa(a.Categories)
		if a.MoreCategories {
			n = "over " + n
		}
		rng = n + " categories: " + listText(a.FirstCategories, a.Categories)
		if a.Categories == 1 {
			rng = "1 category: " + listText(a.FirstCategories, 1)
		}
	case a.From != "":
		rng = a.From + " – " + a.To
	case a.Min != nil && a.Max != nil:
		rng = number(*a.Min) + "–" + number(*a.Max)
	}
	switch {
	case a.Title == "":
		return rng
	case rng == "":
		return a.Title
	}
	return a.Title + " (" + rng + ")"
}

// listText joins the shown values, with "…" when there are more in all.
func listText(shown []string, all int) string {
	t := strings.Join(shown, ", ")
	if all > len(shown) {
		t += ", …"
	}
	return t
}

// number formats a value briefly: integers in full, others with up to six
// significant digits.
func number(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// cut shortens s to at most n runes, at a word boundary, ending in "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	end, count := 0, 0
	for i := range s {
		if count == n-1 {
			end = i
			break
		}
		count++
	}
	head := s[:end]
	if sp := strings.LastIndexAny(head, " "); sp > len(head)/2 {
		head = head[:sp]
	}
	return strings.TrimRight(head, " ,;—:") + "…"
}
