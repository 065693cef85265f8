package chartsummary

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// obj is a JSON object whose members are decoded only when asked for, and
// then leniently: a member of the wrong type reads as absent, so one odd
// field never costs the whole summary.
type obj map[string]json.RawMessage

func asObj(raw json.RawMessage) obj {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var o obj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

func asString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func asNumber(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func asArray(raw json.RawMessage) []json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

func (o obj) str(key string) string {
	s, _ := asString(o[key])
	return s
}

func (o obj) obj(key string) obj { return asObj(o[key]) }

func (o obj) has(key string) bool {
	v, ok := o[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// boolOr reads a JSON boolean, or def when absent or not a boolean.
func (o obj) boolOr(key string, def bool) bool {
	switch string(bytes.TrimSpace(o[key])) {
	case "true":
		return true
	case "false":
		return false
	}
	return def
}

// titleText reads a title that may be a string, {"text": …} or (Vega-Lite)
// an array of lines.
func titleText(raw json.RawMessage) string {
	if s, ok := asString(raw); ok {
		return s
	}
	if o := asObj(raw); o != nil {
		return titleText(o["text"])
	}
	var lines []string
	for _, l := range asArray(raw) {
		if s, ok := asString(l); ok {
			lines = append(lines, s)
		}
	}
	return strings.Join(lines, " ")
}

// sanitize makes untrusted text safe to show: valid UTF-8, no control or
// invisible formatting characters (which could hide or reorder text), and
// runs of white space collapsed to one space.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// label sanitizes and caps one label for the summary.
func label(s string) string {
	return truncateRunes(sanitize(s), MaxLabelRunes)
}

// truncateRunes cuts s to at most n runes, ending in "…" when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// axisAcc gathers the values plotted along one axis.
type axisAcc struct {
	title string
	// categorical forces categories even for numbers (a Plotly axis of
	// type "category", a nominal or ordinal Vega-Lite field).
	categorical bool
	// quantitative ignores non-numeric values (a quantitative Vega-Lite field).
	quantitative bool
	// noRange keeps the data out of the axis (an aggregated Vega-Lite field,
	// whose plotted values are not the data's).
	noRange bool

	nums           int
	min, max       float64
	strs           int
	dates          int
	from, to       string
	cats           []string
	catSet         map[string]struct{}
	moreCategories bool
}

func (a *axisAcc) addNumber(f float64) {
	a.widen(f, f, 1)
	if a.categorical {
		a.addCategory(strconv.FormatFloat(f, 'g', -1, 64))
	}
}

// widen takes n numbers spanning lo..hi.
func (a *axisAcc) widen(lo, hi float64, n int) {
	if a.nums == 0 || lo < a.min {
		a.min = lo
	}
	if a.nums == 0 || hi > a.max {
		a.max = hi
	}
	a.nums += n
}

func (a *axisAcc) addString(s string) {
	a.strs++
	if isDate(s) {
		if a.dates == 0 || s < a.from {
			a.from = s
		}
		if a.dates == 0 || s > a.to {
			a.to = s
		}
		a.dates++
	}
	a.addCategory(s)
}

func (a *axisAcc) addCategory(s string) {
	if a.catSet == nil {
		a.catSet = map[string]struct{}{}
	}
	if _, ok := a.catSet[s]; ok {
		return
	}
	if len(a.catSet) >= maxDistinct {
		a.moreCategories = true
		return
	}
	a.catSet[s] = struct{}{}
	if len(a.cats) < MaxCategoriesShown {
		a.cats = append(a.cats, s)
	}
}

// add takes one JSON value; nulls and objects are skipped.
func (a *axisAcc) add(v json.RawMessage) {
	if len(v) == 0 {
		return
	}
	switch c := v[0]; {
	case c == '"':
		if s, ok := asString(v); ok && !a.quantitative {
			a.addString(s)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if f, ok := asNumber(v); ok {
			a.addNumber(f)
		}
	case c == 't' || c == 'f':
		if !a.quantitative {
			a.addString(string(v))
		}
	case c == '[':
		// A Plotly multi-category axis level, or a nested value: one category.
		if !a.quantitative {
			a.addString(string(v))
		}
	}
}

// axis turns the gathered values into an Axis, or nil when there is
// nothing to say.
func (a *axisAcc) axis() *Axis {
	if a == nil {
		return nil
	}
	ax := &Axis{Title: label(a.title)}
	switch {
	case a.noRange:
	case a.categorical || (a.strs > 0 && a.dates < a.strs):
		ax.Categories = len(a.catSet)
		for _, c := range a.cats {
			ax.FirstCategories = append(ax.FirstCategories, label(c))
		}
		ax.MoreCategories = a.moreCategories
	case a.strs > 0:
		ax.From, ax.To = label(trimMidnight(a.from)), label(trimMidnight(a.to))
	case a.nums > 0:
		lo, hi := a.min, a.max
		ax.Min, ax.Max = &lo, &hi
	}
	if ax.Title == "" && ax.Min == nil && ax.From == "" && ax.Categories == 0 {
		return nil
	}
	return ax
}

// merge folds b's values into a (panels sharing an axis); a's title wins.
func (a *axisAcc) merge(b *axisAcc) {
	if b == nil {
		return
	}
	if a.title == "" {
		a.title = b.title
	}
	a.categorical = a.categorical || b.categorical
	a.noRange = a.noRange && b.noRange
	if b.nums > 0 {
		a.widen(b.min, b.max, b.nums)
	}
	if b.dates > 0 {
		if a.dates == 0 || b.from < a.from {
			a.from = b.from
		}
		if a.dates == 0 || b.to > a.to {
			a.to = b.to
		}
	}
	a.dates += b.dates
	a.strs += b.strs
	for _, c := range b.catOrder() {
		a.addCategory(c)
	}
	a.moreCategories = a.moreCategories || b.moreCategories
}

// catOrder lists a's categories: the first ones in order of appearance,
// then the rest (in an order that does not matter, as they are not shown).
func (a *axisAcc) catOrder() []string {
	out := append(make([]string, 0, len(a.catSet)), a.cats...)
	shown := map[string]bool{}
	for _, c := range a.cats {
		shown[c] = true
	}
	for c := range a.catSet {
		if !shown[c] {
			out = append(out, c)
		}
	}
	return out
}

// trimMidnight shortens "2024-01-31T00:00:00.000000" (how pandas dates
// reach a spec) to "2024-01-31".
func trimMidnight(s string) string {
	if len(s) <= 10 {
		return s
	}
	if isDate(s) && strings.Trim(s[11:], "0:.Z") == "" {
		return s[:10]
	}
	return s
}

// isDate recognises the ISO dates plotly and Altair write ("2024-01-31",
// "2024-01-31T12:00:00", "2024-01-31 12:00:00").
func isDate(s string) bool {
	if len(s) < 10 {
		return false
	}
	for i := 0; i < 10; i++ {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return len(s) == 10 || s[10] == 'T' || s[10] == ' '
}

// scanValues feeds up to limit values of a JSON array, or of a Plotly typed
// array ({"dtype", "bdata"}), to fn. It returns the number of values the
// array holds (exact for typed arrays, which cost nothing to count; at most
// limit for JSON arrays, whose further values are not read) and whether the
// array held more than limit values.
func scanValues(raw json.RawMessage, limit int, fn func(json.RawMessage)) (n int, truncated bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	switch raw[0] {
	case '{':
		return scanTyped(asObj(raw), limit, fn)
	case '[':
	default:
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return 0, false
	}
	for dec.More() {
		if n >= limit {
			return n, true
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return n, false
		}
		n++
		fn(v)
	}
	return n, false
}

// dtypeSizes are the element sizes of the typed-array dtypes plotly writes.
var dtypeSizes = map[string]int{"i1": 1, "u1": 1, "i2": 2, "u2": 2, "i4": 4, "u4": 4, "f4": 4, "f8": 8}

// scanTyped decodes a plotly typed array: little-endian values in base64
// "bdata", with an optional "shape" ("2, 3", [2, 3] or 6) whose product
// bounds the element count.
func scanTyped(o obj, limit int, fn func(json.RawMessage)) (int, bool) {
	dtype := o.str("dtype")
	size := dtypeSizes[dtype]
	b64 := o.str("bdata")
	if size == 0 || b64 == "" {
		return 0, false
	}
	total := decodedLen(b64) / size
	if shape, ok := typedShape(o["shape"]); ok && shape < total {
		total = shape
	}
	n := min(total, limit)
	need := n * size
	enc := min(len(b64), (need+2)/3*4)
	buf, err := base64.StdEncoding.DecodeString(b64[:enc])
	if err != nil {
		// Padding may sit only at the very end; retry the whole string.
		if buf, err = base64.StdEncoding.DecodeString(b64); err != nil {
			return 0, false
		}
	}
	if len(buf) < need {
		n = len(buf) / size
		total = n
	}
	var num [32]byte
	for i := range n {
		p := buf[i*size:]
		var f float64
		switch dtype {
		case "i1":
			f = float64(int8(p[0]))
		case "u1":
			f = float64(p[0])
		case "i2":
			f = float64(int16(binary.LittleEndian.Uint16(p)))
		case "u2":
			f = float64(binary.LittleEndian.Uint16(p))
		case "i4":
			f = float64(int32(binary.LittleEndian.Uint32(p)))
		case "u4":
			f = float64(binary.LittleEndian.Uint32(p))
		case "f4":
			f = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case "f8":
			f = math.Float64frombits(binary.LittleEndian.Uint64(p))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			fn(json.RawMessage("null"))
			continue
		}
		fn(strconv.AppendFloat(num[:0], f, 'g', -1, 64))
	}
	return total, total > limit
}

// decodedLen is the exact number of bytes base64 text decodes to.
func decodedLen(b64 string) int {
	if len(b64)%4 != 0 {
		return len(b64) * 6 / 8
	}
	n := len(b64) / 4 * 3
	for i := 0; i < 2 && len(b64) > i && b64[len(b64)-1-i] == '='; i++ {
		n--
	}
	return n
}

// typedShape reads a typed array's shape as its element count.
func typedShape(raw json.RawMessage) (int, bool) {
	var dims []string
	if s, ok := asString(raw); ok {
		dims = strings.Split(s, ",")
	} else if f, ok := asNumber(raw); ok {
		dims = []string{strconv.FormatFloat(f, 'f', -1, 64)}
	} else if a := asArray(raw); a != nil {
		for _, d := range a {
			dims = append(dims, string(d))
		}
	}
	if len(dims) == 0 {
		return 0, false
	}
	total := 1
	for _, d := range dims {
		v, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || v < 0 {
			return 0, false
		}
		if v != 0 && total > math.MaxInt32/v {
			return 0, false
		}
		total *= v
	}
	return total, true
}
