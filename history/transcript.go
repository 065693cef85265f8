package history

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// restartLine separates entries that ran in different kernel processes.
const restartLine = "--- kernel restarted: variables before this point are gone ---"

// Transcript renders entries as the numbered transcript of python-repl-mcp:
// "[N] " + code, continuation lines indented by len("[N] ") spaces, then the
// outputs as text, then the entry's Note. Entries are separated by a blank
// line. first is the 1-based number of entries[0]. A block someone other
// than the assistant wrote is marked after its number: "[3] (by the person) ".
//
// Outputs become text this way: stream text with carriage returns applied
// (text after the last \r in a line replaces it, as a terminal shows a
// progress bar); the text/plain of results and displays, or "[image/png]"
// for an image with no useful text (and "[mime]" for any other bundle
// without text); errors as their traceback followed by "EName: EValue". ANSI
// escape codes are stripped everywhere. When an entry's Generation differs
// from the previous entry's in the list, a line
// "--- kernel restarted: variables before this point are gone ---" precedes
// it. The result is deterministic and ends with a newline, or is empty for
// no entries.
func Transcript(entries []Entry, first int) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
			if e.Generation != entries[i-1].Generation {
				b.WriteString(restartLine)
				b.WriteByte('\n')
			}
		}
		writeEntry(&b, e, first+i)
	}
	return b.String()
}

func writeEntry(b *strings.Builder, e Entry, n int) {
	prefix := "[" + strconv.Itoa(n) + "] "
	if !e.IsCode() {
		prefix += "(" + e.CellType + ") "
	}
	if e.By != "" {
		prefix += "(by the " + oneLine(e.By) + ") "
	}
	code := strings.TrimRight(strings.ReplaceAll(e.Code, "\r\n", "\n"), "\n")
	if code == "" {
		b.WriteString(strings.TrimSpace(prefix))
		b.WriteByte('\n')
	} else {
		indent := strings.Repeat(" ", len(prefix))
		for i, line := range strings.Split(code, "\n") {
			switch {
			case i == 0:
				b.WriteString(prefix)
			case line != "":
				b.WriteString(indent)
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	writeOutputs(b, e.Outputs)
	switch {
	case e.Note != "":
		for _, line := range strings.Split(strings.TrimRight(cleanText(e.Note), "\n"), "\n") {
			b.WriteString("[" + line + "]\n")
		}
	case e.Status == "timeout" || e.Status == "interrupted":
		b.WriteString("[" + e.Status + "]\n")
	case e.Status == "loaded":
		b.WriteString("[loaded from a notebook, not run here]\n")
	}
}

// writeOutputs writes outputs in arrival order. Consecutive stream chunks of
// one name are joined before carriage returns are applied, because a
// progress bar's \r and the text that overwrites it often arrive apart.
func writeOutputs(b *strings.Builder, outs []Output) {
	for i := 0; i < len(outs); i++ {
		o := outs[i]
		switch o.OutputType {
		case "stream":
			text := o.Text
			for i+1 < len(outs) && outs[i+1].OutputType == "stream" && outs[i+1].Name == o.Name {
				i++
				text += outs[i].Text
			}
			writeText(b, applyCR(cleanText(text)))
		case "execute_result", "display_data":
			writeText(b, bundleText(o.Data))
		case "error":
			writeText(b, errorText(o))
		default:
			if o.Text != "" {
				writeText(b, cleanText(o.Text))
			}
		}
	}
}

// writeText writes s, ending it with a newline if it has none.
func writeText(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// imageTypes are the MIME types shown as "[mime]" in a transcript.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/svg+xml", "image/webp"}

// objectReprRE matches Python's default repr, "<IPython.core.display.Image
// object>" or "<foo.Bar object at 0x7f...>": text that says nothing.
var objectReprRE = regexp.MustCompile(`^<[\w.]+ object( at 0x[0-9a-fA-F]+)?>$`)

// bundleText is how a MIME bundle reads as text: its text/plain, then a
// "[image/png]" line per image, or "[mime]" when there is nothing else.
func bundleText(data map[string]json.RawMessage) string {
	plain, hasPlain := mimeString(data, "text/plain")
	plain = strings.TrimRight(cleanText(plain), "\n")
	var images []string
	for _, t := range imageTypes {
		if _, ok := data[t]; ok {
			images = append(images, "["+t+"]")
		}
	}
	if len(images) > 0 {
		if objectReprRE.MatchString(strings.TrimSpace(plain)) {
			plain = ""
		}
		if plain != "" {
			return plain + "\n" + strings.Join(images, "\n")
		}
		return strings.Join(images, "\n")
	}
	if hasPlain {
		return plain
	}
	if len(data) == 0 {
		return ""
	}
	keys := sortedKeys(data)
	for i, k := range keys {
		keys[i] = "[" + k + "]"
	}
	return strings.Join(keys, " ")
}

// mimeString decodes a bundle's value for mime as a string; nbformat also
// allows a list of lines.
func mimeString(data map[string]json.RawMessage, mime string) (string, bool) {
	v, ok := data[mime]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	var lines []string
	if json.Unmarshal(v, &lines) == nil {
		return strings.Join(lines, ""), true
	}
	return string(v), true
}

// errorText is an error output as a reader wants it: the traceback without
// colour, ending with "EName: EValue" (IPython's traceback usually ends with
// that line already, so it is not repeated).
func errorText(o Output) string {
	var lines []string
	for _, f := range o.Traceback {
		for _, l := range strings.Split(strings.TrimRight(cleanText(f), "\n"), "\n") {
			lines = append(lines, strings.TrimRight(l, " \t"))
		}
	}
	head := o.EName
	if o.EValue != "" {
		head += ": " + o.EValue
	}
	head = cleanText(head)
	last := ""
	for k := len(lines) - 1; k >= 0; k-- {
		if strings.TrimSpace(lines[k]) != "" {
			last = strings.TrimSpace(lines[k])
			break
		}
	}
	if head != "" && last != strings.TrimSpace(head) {
		lines = append(lines, head)
	}
	return strings.Join(lines, "\n")
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// cleanText makes kernel text safe to read: valid UTF-8 and no ANSI codes.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.Contains(s, "\x1b") {
		s = ansiRE.ReplaceAllString(s, "")
	}
	return s
}

// PlainText makes kernel text readable as plain text: valid UTF-8, no ANSI
// escape codes, and carriage returns applied as a terminal shows them, so a
// progress bar shows its final state rather than every frame.
func PlainText(s string) string { return applyCR(cleanText(s)) }

// applyCR renders carriage returns as a terminal shows them at the end:
// \r\n is a newline, and within a line the text after the last \r replaces
// what came before. A trailing \r (cursor sent home, nothing written yet)
// keeps the text before it.
func applyCR(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
