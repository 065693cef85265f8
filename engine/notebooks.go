package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// Notebooks run_notebook reads: an nbformat 4 notebook or a py:percent
// script, its cells picked by start/end, entered into the history with
// or without running them.

// maxNotebookSize bounds the file run_notebook reads.
const maxNotebookSize = 64 << 20

// ReadNotebook reads an nbformat 4 notebook or a py:percent script. The
// language is the notebook's own, "" when it names none.
func ReadNotebook(tp ToolPath) (cells []history.Cell, language string, err error) {
	b, err := tp.ReadFile("read", maxNotebookSize)
	if err != nil {
		return nil, "", err
	}
	return history.ParseNotebook(tp.String(), b)
}

// SelectCells picks the code cells [start:end) (Python slice rules) and the
// text cells among them: those after the code cell before the first one
// taken, up to the last one taken, and the notebook's closing text when the
// slice reaches its last code cell.
func SelectCells(cells []history.Cell, start, end *int) (picked []history.Cell, codeLo, codeHi, codeN int) {
	var codeAt []int
	for i, c := range cells {
		if c.Type == "code" {
			codeAt = append(codeAt, i)
		}
	}
	codeN = len(codeAt)
	lo, hi := history.Slice(codeN, start, end)
	if lo >= hi {
		return nil, lo, hi, codeN
	}
	from := 0
	if lo > 0 {
		from = codeAt[lo-1] + 1
	}
	to := codeAt[hi-1] + 1
	if hi == codeN {
		to = len(cells)
	}
	return cells[from:to], lo, hi, codeN
}

// CellLabel names a code cell in a result: its index among the code cells
// (what start/end count) and its number among all the notebook's cells,
// both of the whole notebook, whatever slice was taken.
func CellLabel(code int, c history.Cell) string {
	return fmt.Sprintf("code cell %d, cell %d of the notebook", code, c.Index+1)
}

// CheckLanguage refuses a notebook at path written for another language
// lang than the session's kernel (when both are known).
func (ss *Session) CheckLanguage(lang, path string) error {
	have := ss.Describe().Language
	if have == "" && ss.Choice().Kernel == "" && ss.eng.cfg.Kernel == "" {
		have = "python" // the kernel that will start is the interpreter's ipykernel
	}
	if lang == "" || have == "" || strings.EqualFold(lang, have) {
		return nil
	}
	return fmt.Errorf("%s is a %s notebook, but session %q runs %s: create_session with a %s kernel (see list_kernels) and run it there", path, lang, ss.ID(), have, lang)
}

// LoadCells enters the cells of the notebook at path into the history
// without running them; code cells keep the outputs the notebook has.
// lo and hi are the code cells taken (see SelectCells). It returns what
// it did, in words, and the history file's backlog when it is behind.
func (ss *Session) LoadCells(path string, cells []history.Cell, lo, hi int) (string, *HistoryBacklog) {
	first := ss.HistoryLen()
	gen := ss.Generation()
	now := time.Now()
	md := 0
	for _, c := range cells {
		e := history.Entry{Code: c.Source, Source: "notebook:" + path, Generation: gen, Start: now, End: now}
		if c.Type == "code" {
			e.Status, e.ExecutionCount, e.Outputs = "loaded", c.ExecutionCount, c.Outputs
		} else {
			e.CellType = c.Type
			md++
		}
		if e.Outputs == nil {
			e.Outputs = []history.Output{}
		}
		ss.Record(e)
	}
	msg := fmt.Sprintf("Loaded %d cells of %s into session %q's history without running them (code cells %d to %d, and %d text cells): blocks [%d] to [%d], 0-based %d to %d. "+
		"run_code {\"session_id\": %q, \"start\": %d} runs them in the live kernel, rerun_code with the same start in a fresh one; save_notebook writes them back.",
		len(cells), filepath.Base(path), ss.ID(), lo, hi-1, md, first+1, first+len(cells), first, first+len(cells)-1, ss.ID(), first)
	behind := ss.HistoryBacklog()
	if behind != nil {
		msg += "\n" + behind.Note()
	}
	return msg, behind
}
