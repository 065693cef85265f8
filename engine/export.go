package engine

import (
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// Exported is what an export wrote.
type Exported struct {
	// Blocks counts the blocks written; Left those skip left out.
	Blocks, Left int
	// Bytes is the file's size.
	Bytes int
}

// Export writes the history slice [start:end) to path, atomically, as
// render makes it (what names the kind of file in errors). render gets
// every block of the slice, so that the blocks it keeps keep their
// numbers; skip (nil: none) says which it leaves out, for the count.
func (ss *Session) Export(path ToolPath, what string, start, end *int, skip func(history.Entry) bool, render func([]history.Entry, int, *Session) ([]byte, error)) (Exported, error) {
	entries, first := ss.Slice(start, end)
	var x Exported
	if skip != nil {
		for _, e := range entries {
			if skip(e) {
				x.Left++
			}
		}
	}
	x.Blocks = len(entries) - x.Left
	data, err := render(entries, first, ss)
	if err != nil {
		return x, fmt.Errorf("rendering the %s: %v", what, err)
	}
	// 0666 less the umask, as any program's new file: the user decides
	// who may read an export, as with everything else they write.
	if err := path.WriteFile(data, 0o666); err != nil {
		return x, err
	}
	x.Bytes = len(data)
	return x, nil
}

// FirstLine is the first non-blank line of code, cut to 100 characters, to
// name a block by.
func FirstLine(code string) string {
	for l := range strings.Lines(code) {
		if l = strings.TrimRight(l, " \t\r\n"); strings.TrimSpace(l) != "" {
			if r := []rune(l); len(r) > 100 {
				return string(r[:100]) + "…"
			}
			return l
		}
	}
	return "(empty)"
}
