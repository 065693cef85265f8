package history

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads the sizes of these formats
	_ "image/jpeg"
	_ "image/png"
	"strings"
)

// The preview of a text output is its first PreviewLines lines, at most
// PreviewChars characters.
const (
	PreviewLines = 3
	PreviewChars = 200
)

// Preview returns entries with their outputs shortened to a preview, for a
// transcript that shows what each block did without all it printed: the
// code stays whole; a text output (stream, result, display) keeps its first
// PreviewLines lines, as many whole ones as fit in PreviewChars characters,
// followed by a line "[… N more lines]"; an image becomes one line
// "[image/png 640x480]"; an error becomes its "EName: EValue" line, without
// the traceback. shortened reports whether any output was cut. Preview
// does not modify entries.
func Preview(entries []Entry) (out []Entry, shortened bool) {
	out = make([]Entry, len(entries))
	for i, e := range entries {
		var outs []Output
		for k := 0; k < len(e.Outputs); k++ {
			o := e.Outputs[k]
			var (
				text string
				cut  bool
			)
			switch o.OutputType {
			case "stream":
				joined := o.Text
				for k+1 < len(e.Outputs) && e.Outputs[k+1].OutputType == "stream" && e.Outputs[k+1].Name == o.Name {
					k++
					joined += e.Outputs[k].Text
				}
				text, cut = previewText(PlainText(joined))
			case "execute_result", "display_data":
				text, cut = previewBundle(o.Data)
			case "error":
				text = cleanText(o.EName)
				if o.EValue != "" {
					text += ": " + cleanText(o.EValue)
				}
				cut = len(o.Traceback) > 0
			default:
				text, cut = previewText(cleanText(o.Text))
			}
			shortened = shortened || cut
			if text != "" {
				outs = append(outs, Output{OutputType: "stream", Name: "preview", Text: text + "\n"})
			}
		}
		e.Outputs = outs
		out[i] = e
	}
	return out, shortened
}

// previewText is the first lines of s, without trailing blanks, with a note
// of what is left out: whole lines while they fit in PreviewChars, or the
// start of the first.
func previewText(s string) (string, bool) {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	if len(lines) <= PreviewLines && runeCount(s) <= PreviewChars {
		return s, false
	}
	n, size := 0, 0
	for n < len(lines) && n < PreviewLines && size+runeCount(lines[n]) <= PreviewChars {
		size += runeCount(lines[n]) + 1
		n++
	}
	if n == 0 {
		p := runePrefix(lines[0], PreviewChars)
		if len(lines) == 1 {
			return p + fmt.Sprintf("\n[… %d more characters]", runeCount(s)-runeCount(p)), true
		}
		return p + "\n[… the rest of the line and " + moreLines(len(lines)-1) + "]", true
	}
	return strings.Join(lines[:n], "\n") + "\n[… " + moreLines(len(lines)-n) + "]", true
}

// previewBundle is a MIME bundle's preview: its text/plain, cut, or one
// "[image/png 640x480]" line per image (a figure's text/plain repr says
// nothing the marker does not).
func previewBundle(data map[string]json.RawMessage) (string, bool) {
	var images []string
	for _, t := range imageTypes {
		v, ok := mimeString(data, t)
		if !ok {
			continue
		}
		mark := t
		if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), "")); err == nil {
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(b)); err == nil {
				mark += fmt.Sprintf(" %dx%d", cfg.Width, cfg.Height)
			}
		}
		images = append(images, "["+mark+"]")
	}
	if len(images) > 0 {
		return strings.Join(images, "\n"), false
	}
	return previewText(bundleText(data))
}

func moreLines(n int) string {
	if n == 1 {
		return "1 more line"
	}
	return fmt.Sprintf("%d more lines", n)
}
