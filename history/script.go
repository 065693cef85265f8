package history

import (
	"strconv"
	"strings"
)

// Script renders the entries' code, without outputs, as a runnable .py file:
// a header comment "# kernel-mcp session <session>, blocks <first>-<last>",
// then each block preceded by a jupytext percent cell marker "# %% [N]"
// (and "# by the person" under it for a block the person wrote).
//
// IPython syntax that plain Python rejects is commented out with a note: a
// line magic or shell escape (a logical line starting with % or !) becomes a
// comment, or "pass  # ..." when indented so the block around it still
// parses; a cell magic (a block starting with %%) is commented out whole,
// except for magics whose body is Python (%%time, %%timeit, %%capture,
// %%prun), whose body is kept. Lines inside strings and bracketed
// continuations are never touched.
func Script(entries []Entry, first int, session string) string {
	var b strings.Builder
	b.WriteString("# kernel-mcp session " + oneLine(session))
	if len(entries) == 0 {
		b.WriteString(", no blocks\n")
		return b.String()
	}
	b.WriteString(", blocks " + strconv.Itoa(first) + "-" + strconv.Itoa(first+len(entries)-1) + "\n")
	for i, e := range entries {
		b.WriteString("\n# %% [" + strconv.Itoa(first+i) + "]")
		if !e.IsCode() {
			b.WriteString(" [" + e.CellType + "]") // as jupytext marks a text cell
		}
		b.WriteByte('\n')
		if e.By != "" {
			b.WriteString("# by the " + oneLine(e.By) + "\n")
		}
		if path, ok := strings.CutPrefix(e.Source, "file:"); ok {
			b.WriteString("# run_file " + oneLine(path) + "\n")
		}
		code := strings.TrimRight(strings.ReplaceAll(e.Code, "\r\n", "\n"), "\n")
		if code == "" {
			continue
		}
		if !e.IsCode() {
			// A notebook's text cell, commented out as jupytext writes it.
			for _, line := range strings.Split(code, "\n") {
				b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
			}
			continue
		}
		b.WriteString(plainPython(code))
		b.WriteByte('\n')
	}
	return b.String()
}

const magicNote = "  # IPython magic, commented out by kernel-mcp"

// pythonBodyMagics are cell magics whose body is ordinary Python.
var pythonBodyMagics = map[string]bool{"time": true, "timeit": true, "capture": true, "prun": true}

// plainPython comments out the IPython-only lines of code.
func plainPython(code string) string {
	lines := strings.Split(code, "\n")
	if strings.HasPrefix(lines[0], "%%") {
		name := strings.TrimPrefix(lines[0], "%%")
		if f := strings.Fields(name); len(f) > 0 {
			name = f[0]
		}
		lines[0] = "# " + lines[0] + magicNote
		if !pythonBodyMagics[name] {
			for i := 1; i < len(lines); i++ {
				lines[i] = "# " + lines[i]
			}
			return strings.Join(lines, "\n")
		}
		lines = append(lines[:1], strings.Split(plainPython(strings.Join(lines[1:], "\n")), "\n")...)
		return strings.Join(lines, "\n")
	}
	var sc lineScanner
	for i, line := range lines {
		if sc.atStatementStart() {
			trimmed := strings.TrimLeft(line, " \t")
			if strings.HasPrefix(trimmed, "%") || strings.HasPrefix(trimmed, "!") {
				indent := line[:len(line)-len(trimmed)]
				if indent == "" {
					lines[i] = "# " + trimmed + magicNote
				} else {
					lines[i] = indent + "pass  # " + trimmed + magicNote
				}
				// A magic's own text is not Python: do not let its quotes
				// or brackets confuse the scan of the lines after it.
				continue
			}
		}
		sc.scan(line)
	}
	return strings.Join(lines, "\n")
}

// lineScanner follows just enough Python lexing to know whether the next
// physical line starts a new statement: not inside a triple-quoted string,
// open brackets, or after a backslash continuation.
type lineScanner struct {
	depth     int    // open (, [, {
	triple    string // `"""` or `'''` while inside one
	backslash bool   // the previous line ended with a continuation backslash
}

func (s *lineScanner) atStatementStart() bool {
	return s.depth == 0 && s.triple == "" && !s.backslash
}

func (s *lineScanner) scan(line string) {
	s.backslash = false
	for i := 0; i < len(line); i++ {
		if s.triple != "" {
			if line[i] == '\\' {
				i++
				continue
			}
			if strings.HasPrefix(line[i:], s.triple) {
				i += 2
				s.triple = ""
			}
			continue
		}
		switch c := line[i]; c {
		case '#':
			return
		case '(', '[', '{':
			s.depth++
		case ')', ']', '}':
			if s.depth > 0 {
				s.depth--
			}
		case '\\':
			if i == len(line)-1 {
				s.backslash = true
			}
			i++
		case '"', '\'':
			q := string(c)
			if strings.HasPrefix(line[i:], q+q+q) {
				s.triple = q + q + q
				i += 2
				continue
			}
			// A one-line string: skip to its closing quote (an unclosed one
			// is a syntax error in the code itself; stop at the line end).
			for i++; i < len(line) && line[i] != c; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		}
	}
}

// oneLine keeps a header comment on one line whatever the name holds.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
