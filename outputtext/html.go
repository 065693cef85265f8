package outputtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Bounds on HTMLText. A notebook's HTML output can be megabytes (a Styler
// of a big frame, an embedded plot); the reader needs its start, not all of
// it, and the parser's tree costs several times the input.
const (
	// MaxHTMLInput is the most bytes of HTML parsed; the rest is left out.
	MaxHTMLInput = 2 << 20
	// MaxHTMLText is the most bytes of text made from the HTML.
	MaxHTMLText = 100_000
	// maxTableCells bounds a table's grid, which colspan and rowspan can
	// make far larger than the HTML that declares it.
	maxTableCells = 1 << 20
)

// HTMLText returns the text of an HTML fragment as a reader without a
// browser should see it: tables as aligned columns (header rows first, as
// the HTML has them; a cell spanning columns or rows leaves the others it
// covers empty), block elements on lines of their own, list items after
// "- " (or "1. " in an ordered list), links as their text, and no
// scripts, styles, comments or tags. HTML beyond MaxHTMLInput bytes is not
// read and text beyond MaxHTMLText bytes is cut; the text then ends with a
// note that says so.
func HTMLText(src string) string {
	var inputCut bool
	if len(src) > MaxHTMLInput {
		src, inputCut = src[:MaxHTMLInput], true
	}
	nodes, err := html.ParseFragment(strings.NewReader(src), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		// The tokenizer only fails on a failing reader; a strings.Reader
		// does not.
		return ""
	}
	w := &textWriter{limit: MaxHTMLText}
	for _, n := range nodes {
		w.node(n)
	}
	out := strings.TrimRight(w.b.String(), " \n")
	switch {
	case w.cut:
		out += fmt.Sprintf("\n[text cut: the HTML's text is longer than %d bytes]", MaxHTMLText)
	case inputCut:
		out += fmt.Sprintf("\n[HTML cut: only its first %d MB were read]", MaxHTMLInput>>20)
	}
	return out
}

// textWriter renders nodes as text, collapsing whitespace as a browser does
// outside <pre> and keeping track of line starts so that blocks get their
// own lines without stacking blank ones.
type textWriter struct {
	b     strings.Builder
	limit int
	cut   bool
	// inline renders tables on one line, for a table inside a table cell.
	inline bool

	pre       int  // depth of <pre> elements
	space     bool // whitespace seen since the last word
	lineText  bool // the current line has text (not only a list marker)
	newlines  int  // newlines at the end of b
	listStack []list
}

type list struct {
	ordered bool
	n       int
}

// skipped elements hold no text a reader wants.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Head: true, atom.Title: true, atom.Meta: true, atom.Link: true,
	atom.Iframe: true, atom.Object: true, atom.Svg: true, atom.Canvas: true,
	atom.Select: true, atom.Button: true, atom.Input: true, atom.Textarea: true,
}

// blocks start and end a line; the ones mapped to 2 stand apart by a blank
// line.
var blocks = map[atom.Atom]int{
	atom.P: 2, atom.H1: 2, atom.H2: 2, atom.H3: 2, atom.H4: 2, atom.H5: 2, atom.H6: 2,
	atom.Pre: 2, atom.Blockquote: 2, atom.Table: 2, atom.Figure: 2, atom.Details: 2,
	atom.Div: 1, atom.Section: 1, atom.Article: 1, atom.Header: 1, atom.Footer: 1,
	atom.Nav: 1, atom.Main: 1, atom.Aside: 1, atom.Address: 1, atom.Summary: 1,
	atom.Figcaption: 1, atom.Form: 1, atom.Fieldset: 1, atom.Legend: 1, atom.Hr: 1,
	atom.Dl: 1, atom.Dt: 1, atom.Dd: 1, atom.Ul: 1, atom.Ol: 1, atom.Li: 1,
	atom.Caption: 1, atom.Tr: 1,
}

func (w *textWriter) node(n *html.Node) {
	if w.cut {
		return
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
	case html.DocumentNode:
		w.children(n)
		return
	default: // comments, doctypes
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	switch n.DataAtom {
	case atom.Br:
		if w.inline {
			w.space = true
			return
		}
		w.write("\n")
		return
	case atom.Table:
		if w.inline {
			w.word(w.inlineTable(n))
			return
		}
		w.breakLines(2)
		w.table(n)
		w.breakLines(2)
		return
	case atom.Img:
		if alt := attr(n, "alt"); strings.TrimSpace(alt) != "" {
			w.word("[image: " + strings.Join(strings.Fields(alt), " ") + "]")
		}
		return
	}
	gap := blocks[n.DataAtom]
	if w.inline && gap > 0 {
		gap = 0
		w.space = true
	}
	w.breakLines(gap)
	switch n.DataAtom {
	case atom.Ul, atom.Ol:
		w.listStack = append(w.listStack, list{ordered: n.DataAtom == atom.Ol})
		w.children(n)
		w.listStack = w.listStack[:len(w.listStack)-1]
	case atom.Li:
		w.marker()
		w.children(n)
	case atom.Pre:
		w.pre++
		w.children(n)
		w.pre--
	default:
		w.children(n)
	}
	w.breakLines(gap)
	if w.inline && blocks[n.DataAtom] > 0 {
		w.space = true
	}
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

// marker starts a list item: "- ", or its number in an ordered list,
// indented by the depth of the list.
func (w *textWriter) marker() {
	m := "- "
	depth := len(w.listStack)
	if depth > 0 {
		l := &w.listStack[depth-1]
		l.n++
		if l.ordered {
			m = strconv.Itoa(l.n) + ". "
		}
	} else {
		depth = 1
	}
	if w.inline {
		w.word(strings.TrimSpace(m))
		return
	}
	w.write(strings.Repeat("  ", depth-1) + m)
	w.lineText = false
}

// text writes a text node: as it is inside <pre>, else its words with
// single spaces between them.
func (w *textWriter) text(s string) {
	if w.pre > 0 && !w.inline {
		w.write(s)
		return
	}
	if s == "" {
		return
	}
	if isSpace(firstRune(s)) {
		w.space = true
	}
	words := strings.Fields(s)
	for i, f := range words {
		if i > 0 {
			w.space = true
		}
		w.word(f)
	}
	if len(words) > 0 && isSpace(lastRune(s)) {
		w.space = true
	}
}

// word writes s after a space if whitespace came before it on the line.
func (w *textWriter) word(s string) {
	if s == "" {
		return
	}
	if w.space && w.lineText {
		w.write(" ")
	}
	w.space = false
	w.write(s)
}

// breakLines ends the current line so that n-1 blank lines follow the text
// before it. It writes nothing at the start of the text or after a list
// marker.
func (w *textWriter) breakLines(n int) {
	if n == 0 || w.b.Len() == 0 || (w.newlines == 0 && !w.lineText) {
		return
	}
	for w.newlines < n && !w.cut {
		w.write("\n")
	}
}

// write appends s up to the limit, keeping track of line ends.
func (w *textWriter) write(s string) {
	if w.cut || s == "" {
		return
	}
	if room := w.limit - w.b.Len(); len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s = s[:room]
		w.cut = true
	}
	w.b.WriteString(s)
	trimmed := strings.TrimRight(s, "\n")
	if trimmed == "" {
		w.newlines += len(s)
	} else {
		w.newlines = len(s) - len(trimmed)
	}
	if w.newlines > 0 {
		w.lineText = false
		w.space = false
	} else {
		w.lineText = true
	}
}

// table writes a table as aligned columns, with its caption above it.
func (w *textWriter) table(n *html.Node) {
	rows, caption := w.tableGrid(n)
	if caption != "" {
		w.word(caption)
		w.breakLines(1)
	}
	widths := []int{}
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var line strings.Builder
	for _, r := range rows {
		line.Reset()
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			line.WriteString(c)
			line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		if l := strings.TrimRight(line.String(), " "); l != "" {
			w.write(l)
			w.write("\n")
		}
		if w.cut {
			return
		}
	}
}

// inlineTable renders a table nested in a table cell on one line:
// "[a | b; c | d]", cells apart by " | " and rows by "; ".
func (w *textWriter) inlineTable(n *html.Node) string {
	rows, caption := w.tableGrid(n)
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		parts = append(parts, strings.Join(r, " | "))
	}
	s := "[" + strings.Join(parts, "; ") + "]"
	if caption != "" {
		s = caption + " " + s
	}
	return s
}

// tableGrid lays out a table's cells in a grid of rows of equal length. A
// cell that spans columns or rows holds its text in its first place and
// leaves the rest empty. Rows of tables nested in cells are not its own.
func (w *textWriter) tableGrid(table *html.Node) (grid [][]string, caption string) {
	var trs []*html.Node
	for c := table.FirstChild; c != nil; c = c.NextSibling {
		switch c.DataAtom {
		case atom.Caption:
			caption = w.cellText(c)
		case atom.Tr:
			trs = append(trs, c)
		case atom.Thead, atom.Tbody, atom.Tfoot:
			for r := c.FirstChild; r != nil; r = r.NextSibling {
				if r.DataAtom == atom.Tr {
					trs = append(trs, r)
				}
			}
		}
	}
	// taken[r][c] marks places a span from an earlier row fills.
	taken := make([]map[int]bool, len(trs))
	cells, width := 0, 0
	for ri, tr := range trs {
		var row []string
		col := 0
		for td := tr.FirstChild; td != nil; td = td.NextSibling {
			if td.Type != html.ElementNode || (td.DataAtom != atom.Td && td.DataAtom != atom.Th) {
				continue
			}
			for taken[ri][col] {
				col++
			}
			colspan := span(td, "colspan", 1000)
			rowspan := min(span(td, "rowspan", 65534), len(trs)-ri)
			cells += colspan * rowspan
			if cells > maxTableCells {
				w.cut = true
				break
			}
			for len(row) < col+colspan {
				row = append(row, "")
			}
			row[col] = w.cellText(td)
			for r := ri + 1; r < ri+rowspan; r++ {
				if taken[r] == nil {
					taken[r] = map[int]bool{}
				}
				for c := col; c < col+colspan; c++ {
					taken[r][c] = true
				}
			}
			col += colspan
		}
		for c := range taken[ri] {
			for len(row) <= c {
				row = append(row, "")
			}
		}
		width = max(width, len(row))
		grid = append(grid, row)
		if w.cut {
			break
		}
	}
	for i := range grid {
		for len(grid[i]) < width {
			grid[i] = append(grid[i], "")
		}
	}
	return grid, caption
}

// cellText is a cell's text on one line, tables in it included.
func (w *textWriter) cellText(n *html.Node) string {
	sub := &textWriter{limit: w.limit, inline: true}
	sub.children(n)
	if sub.cut {
		w.cut = true
	}
	return strings.Join(strings.Fields(sub.b.String()), " ")
}

// span reads a colspan or rowspan: at least 1, at most limit (the bounds
// browsers apply).
func span(n *html.Node, name string, limit int) int {
	v, err := strconv.Atoi(strings.TrimSpace(attr(n, name)))
	if err != nil || v < 1 {
		return 1
	}
	return min(v, limit)
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val
		}
	}
	return ""
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }
func lastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }

// isSpace is whitespace as strings.Fields sees it, so &nbsp; (U+00A0)
// separates words as well as a space does.
func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }
