// Package traceback shortens IPython tracebacks for a reader: it leaves out
// the frames inside installed libraries and keeps the user's own code and
// the call into a library that raised.
//
//	short := traceback.Short(entries) // entries: the traceback's plain text, one per frame
//
// It works on plain text (colour codes stripped) and does no I/O; the
// history keeps every traceback whole.
package traceback

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// frameFileRE reads the file of a frame in an IPython traceback, after
// colour codes are stripped: "File ~/…/site-packages/pandas/core/frame.py:4330, in …".
var (
	frameFileRE = regexp.MustCompile(`^File "?([^\n]*?)"?:\d+, in `)
	stdlibRE    = regexp.MustCompile(`(?i)/lib/python\d[\d.]*/`)
	// headerPadRE finds the spaces IPython pads its header with:
	// "KeyError                                  Traceback (most recent call last)".
	headerPadRE = regexp.MustCompile(`^(\S+) {2,}Traceback`)
	headerRE    = regexp.MustCompile(`^\S+ Traceback \(most recent call last\)\s*$`)
	omittedRE   = regexp.MustCompile(`^\(\d+ frames? inside .* omitted\)$`)
	// cellLineRE finds a frame of the code's own cell: "Cell In[3], line 2"
	// (IPython ≥ 8.6) or "Cell In [3], line 2" (8.5).
	cellLineRE = regexp.MustCompile(`Cell In ?\[\d+\], line (\d+)`)
)

// LibraryOf names the installed library a traceback frame's file belongs
// to ("pandas", "the standard library"), or "" for a frame of the user's
// code: a cell, or a file outside site-packages, dist-packages and the
// standard library.
func LibraryOf(frame string) string {
	m := frameFileRE.FindStringSubmatch(frame)
	if m == nil {
		return ""
	}
	path := strings.ReplaceAll(m[1], `\`, "/")
	for _, dir := range []string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(path, dir); i >= 0 {
			name, _, _ := strings.Cut(path[i+len(dir):], "/")
			return strings.TrimSuffix(name, ".py")
		}
	}
	switch {
	case strings.HasPrefix(path, "<frozen "):
		return "the standard library"
	case stdlibRE.MatchString(path):
		return "the standard library"
	case !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "~") && !strings.HasPrefix(path, "<") &&
		(strings.HasSuffix(path, ".pyx") || strings.HasSuffix(path, ".pxi") || strings.HasSuffix(path, ".pxd")):
		// A compiled module names its source relative to its package:
		// "pandas/_libs/index.pyx".
		name, _, _ := strings.Cut(path, "/")
		return name
	}
	return ""
}

// Short leaves out of an IPython traceback, given as its plain
// text entries (one per frame), the frames inside installed libraries. It
// keeps every frame of the user's code, the first library frame each one
// calls (where the user's call went in; its file and its "->" line, without
// the lines around it), and every entry that is not a frame (the header, the
// exception lines, "The above exception was …") but IPython's line of
// dashes; the header loses its padding. Each run of left-out frames becomes one line, "(5 frames inside
// pandas omitted)".
func Short(entries []string) []string {
	out := make([]string, 0, len(entries))
	var (
		omitted int
		libs    []string
		prev    = "not a frame"
	)
	flush := func() {
		if omitted == 0 {
			return
		}
		what := "frames"
		if omitted == 1 {
			what = "frame"
		}
		out = append(out, fmt.Sprintf("(%d %s inside %s omitted)", omitted, what, strings.Join(libs, " and ")))
		omitted, libs = 0, nil
	}
	for _, e := range entries {
		isFrame := frameFileRE.MatchString(e)
		lib := ""
		if isFrame {
			lib = LibraryOf(e)
		}
		switch {
		case isRule(e):
			// IPython's line of dashes above the header says nothing.
		case lib == "":
			flush()
			out = append(out, headerPadRE.ReplaceAllString(e, "$1 Traceback"))
		case prev == "":
			flush()
			out = append(out, callLine(e))
		default:
			omitted++
			if !slices.Contains(libs, lib) {
				libs = append(libs, lib)
			}
		}
		switch {
		case !isFrame && !cellLineRE.MatchString(e):
			prev = "not a frame"
		default:
			prev = lib
		}
	}
	flush()
	// A part of a chained traceback with no frame left (the cause, raised
	// and caught inside the library) needs no header: its note and its
	// exception say it all.
	kept := out[:0]
	for i, e := range out {
		if headerRE.MatchString(e) && i+2 < len(out) && omittedRE.MatchString(out[i+1]) && !isFrameEntry(out[i+2]) {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// isFrameEntry reports whether e is a frame of a traceback: a file's or a cell's.
func isFrameEntry(e string) bool { return frameFileRE.MatchString(e) || cellLineRE.MatchString(e) }

// isRule reports whether e is IPython's line of dashes.
func isRule(e string) bool {
	t := strings.TrimSpace(e)
	return len(t) >= 20 && strings.Trim(t, "-") == ""
}

// callLine is a frame with only its first line (file, line, function) and
// its "->" line, the one running when the exception passed; an installed
// library's path starts at its site-packages.
func callLine(frame string) string {
	lines := strings.Split(strings.TrimRight(frame, "\n"), "\n")
	if m := frameFileRE.FindStringSubmatchIndex(lines[0]); m != nil {
		// The path up to site-packages says where Python is installed,
		// not where the call went: "File …/site-packages/pandas/core/frame.py:4330".
		path := lines[0][m[2]:m[3]]
		for _, dir := range []string{"/site-packages/", "/dist-packages/"} {
			if i := strings.LastIndex(path, dir); i > 0 {
				lines[0] = lines[0][:m[2]] + "…" + path[i:] + lines[0][m[3]:]
				break
			}
		}
	}
	keep := lines[:1]
	for _, l := range lines[1:] {
		if strings.HasPrefix(strings.TrimSpace(l), "->") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}

// syntaxLineRE finds the line a SyntaxError names: `File "<cell>", line 3`.
var syntaxLineRE = regexp.MustCompile(`(?:File "?<?[^\n]*?"?, line|line) (\d+)`)

// ErrorLine is the line of the user's code that raised, from a traceback
// (its entries joined): the deepest frame that is in the cell ("Cell
// In[3], line 2", or "Cell In [3], line 2" from IPython 8.5), or for a
// SyntaxError, IndentationError or TabError (ename) the line it names; 0
// when there is none.
func ErrorLine(ename, tb string) int {
	if m := cellLineRE.FindAllStringSubmatch(tb, -1); len(m) > 0 {
		n, _ := strconv.Atoi(m[len(m)-1][1])
		return n
	}
	if ename == "SyntaxError" || ename == "IndentationError" || ename == "TabError" {
		if m := syntaxLineRE.FindAllStringSubmatch(tb, -1); len(m) > 0 {
			n, _ := strconv.Atoi(m[len(m)-1][1])
			return n
		}
	}
	return 0
}
