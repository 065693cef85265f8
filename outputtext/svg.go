package outputtext

import (
	"strings"

	"golang.org/x/net/html"
)

// maxSVGText bounds the text SVGText returns.
const maxSVGText = 4000

// SVGText returns the words an SVG image shows as text: its <title> and
// <text> elements, each on a line of its own, whitespace collapsed, ""
// when it has none (matplotlib draws its text as paths). SVG beyond
// MaxHTMLInput bytes is not read.
func SVGText(src string) string {
	if len(src) > MaxHTMLInput {
		src = src[:MaxHTMLInput]
	}
	z := html.NewTokenizer(strings.NewReader(src))
	var (
		lines []string
		cur   strings.Builder
		depth int // inside a <text> or <title>
		size  int
	)
	flush := func() {
		if t := strings.Join(strings.Fields(cur.String()), " "); t != "" && size < maxSVGText {
			lines = append(lines, t)
			size += len(t) + 1
		}
		cur.Reset()
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			flush()
			return strings.Join(lines, "\n")
		case html.StartTagToken:
			name, _ := z.TagName()
			if n := string(name); n == "text" || n == "title" {
				if depth == 0 {
					flush()
				}
				depth++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if n := string(name); (n == "text" || n == "title") && depth > 0 {
				depth--
				if depth == 0 {
					flush()
				}
			}
		case html.TextToken:
			if depth > 0 {
				cur.WriteByte(' ')
				cur.Write(z.Text())
			}
		}
	}
}
