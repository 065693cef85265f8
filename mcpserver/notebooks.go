package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunNotebookInput is the input of run_notebook.
type RunNotebookInput struct {
	SessionID  string   `json:"session_id,omitempty" jsonschema:"session to run in; created if missing (default \"default\")"`
	Path       string   `json:"path" jsonschema:"an nbformat 4 notebook (.ipynb) or a py:percent script (# %% cells); relative paths resolve against the session's working directory"`
	Start      *int     `json:"start,omitempty" jsonschema:"first code cell to take, 0-based (Python slice rules)"`
	End        *int     `json:"end,omitempty" jsonschema:"code cell to stop before (exclusive)"`
	Execute    *bool    `json:"execute,omitempty" jsonschema:"run the cells (default true); false only enters them into the history, for rerun_code and save_notebook"`
	Timeout    *float64 `json:"timeout,omitempty" jsonschema:"seconds allowed for each cell; 0 means no limit"`
	Background bool     `json:"background,omitempty" jsonschema:"return at once with the run's id; wait_run gives the result"`
}

// notebookCell is one cell read from a notebook.
type notebookCell struct {
	// Index is the cell's place among all the notebook's cells, 0-based,
	// so that a cell taken by start/end is still named as the notebook
	// numbers it.
	Index          int
	Type           string // code, markdown or raw
	Source         string
	Outputs        []history.Output // as the notebook has them
	ExecutionCount int
}

// maxNotebookSize bounds the file run_notebook reads.
const maxNotebookSize = 64 << 20

// readNotebook reads an nbformat 4 notebook or a py:percent script. The
// language is the notebook's own, "" when it names none.
func readNotebook(tp engine.ToolPath) (cells []notebookCell, language string, err error) {
	b, err := tp.ReadFile("read", maxNotebookSize)
	if err != nil {
		return nil, "", err
	}
	path := tp.String()
	if strings.EqualFold(filepath.Ext(path), ".ipynb") || bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return parseIPynb(path, b)
	}
	return parsePercent(path, b)
}

func parseIPynb(path string, b []byte) ([]notebookCell, string, error) {
	var nb struct {
		NBFormat   *int `json:"nbformat"`
		Worksheets []json.RawMessage
		Metadata   struct {
			Kernelspec struct {
				Language string `json:"language"`
			} `json:"kernelspec"`
			LanguageInfo struct {
				Name string `json:"name"`
			} `json:"language_info"`
		} `json:"metadata"`
		Cells []struct {
			CellType       string            `json:"cell_type"`
			Source         json.RawMessage   `json:"source"`
			Outputs        []json.RawMessage `json:"outputs"`
			ExecutionCount *int              `json:"execution_count"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		return nil, "", fmt.Errorf("%s is not a notebook: %v", path, err)
	}
	switch {
	case nb.NBFormat == nil:
		return nil, "", fmt.Errorf("%s is not a notebook: it has no nbformat field", path)
	case *nb.NBFormat < 4:
		return nil, "", fmt.Errorf("%s is an nbformat %d notebook; run_notebook reads nbformat 4: convert it with `jupyter nbconvert --to notebook --nbformat 4 %s`", path, *nb.NBFormat, filepath.Base(path))
	case *nb.NBFormat > 4:
		return nil, "", fmt.Errorf("%s is an nbformat %d notebook; run_notebook reads nbformat 4", path, *nb.NBFormat)
	}
	cells := make([]notebookCell, 0, len(nb.Cells))
	for i, c := range nb.Cells {
		src, err := multiline(c.Source)
		if err != nil {
			return nil, "", fmt.Errorf("%s: cell %d: source: %v", path, i, err)
		}
		cell := notebookCell{Index: i, Type: c.CellType, Source: src}
		switch c.CellType {
		case "code":
			if c.ExecutionCount != nil {
				cell.ExecutionCount = *c.ExecutionCount
			}
			for j, raw := range c.Outputs {
				o, err := notebookOutput(raw)
				if err != nil {
					return nil, "", fmt.Errorf("%s: cell %d, output %d: %v", path, i, j, err)
				}
				cell.Outputs = append(cell.Outputs, o)
			}
		case "markdown", "raw":
		default:
			return nil, "", fmt.Errorf("%s: cell %d has cell_type %q; nbformat 4 has code, markdown and raw", path, i, c.CellType)
		}
		cells = append(cells, cell)
	}
	lang := nb.Metadata.LanguageInfo.Name
	if lang == "" {
		lang = nb.Metadata.Kernelspec.Language
	}
	return cells, lang, nil
}

// multiline reads an nbformat multiline string: a string or a list of them.
func multiline(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return "", errors.New("want a string or a list of strings")
	}
	return strings.Join(lines, ""), nil
}

// notebookOutput turns an nbformat output into a history output. MIME
// values that are multiline strings are joined; others (JSON) stay as they
// are.
func notebookOutput(raw json.RawMessage) (history.Output, error) {
	var o struct {
		OutputType     string                     `json:"output_type"`
		Name           string                     `json:"name"`
		Text           json.RawMessage            `json:"text"`
		Data           map[string]json.RawMessage `json:"data"`
		Metadata       map[string]json.RawMessage `json:"metadata"`
		ExecutionCount *int                       `json:"execution_count"`
		EName          string                     `json:"ename"`
		EValue         string                     `json:"evalue"`
		Traceback      []string                   `json:"traceback"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return history.Output{}, err
	}
	text, err := multiline(o.Text)
	if err != nil {
		return history.Output{}, err
	}
	out := history.Output{OutputType: o.OutputType, Name: o.Name, Text: text, Metadata: o.Metadata, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback}
	if o.ExecutionCount != nil {
		out.ExecutionCount = *o.ExecutionCount
	}
	if len(o.Data) > 0 {
		out.Data = make(map[string]json.RawMessage, len(o.Data))
		for mime, v := range o.Data {
			if s, err := multiline(v); err == nil && !strings.HasSuffix(mime, "json") {
				v, _ = json.Marshal(s)
			}
			out.Data[mime] = v
		}
	}
	return out, nil
}

// percentMarker is a py:percent cell marker: "# %%", with an optional title
// and [markdown] or [raw].
var percentMarker = regexp.MustCompile(`^#\s*%%(.*)$`)

// parsePercent reads a py:percent script, as jupytext and VS Code write it.
// Text before the first marker is a cell of its own when it is not blank,
// except jupytext's header (see percentHeader), which is metadata.
func parsePercent(path string, b []byte) ([]notebookCell, string, error) {
	if !bytes.Contains(b, []byte("# %%")) && !bytes.Contains(b, []byte("#%%")) {
		return nil, "", fmt.Errorf("%s is neither an nbformat 4 notebook (.ipynb) nor a py:percent script (no \"# %%%%\" cell markers)", path)
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".py" && ext != "" {
		return nil, "", fmt.Errorf("%s: a py:percent script must be a .py file", path)
	}
	var cells []notebookCell
	cur := notebookCell{Type: "code"}
	var lines []string
	flush := func() {
		src := strings.Trim(strings.Join(lines, "\n"), "\n")
		if cur.Type != "code" {
			// Text cells are commented out: "# " before each line.
			var un []string
			for _, l := range strings.Split(src, "\n") {
				l = strings.TrimPrefix(l, "#")
				un = append(un, strings.TrimPrefix(l, " "))
			}
			src = strings.Join(un, "\n")
		}
		if strings.TrimSpace(src) != "" {
			cur.Source = src
			cur.Index = len(cells)
			cells = append(cells, cur)
		}
		lines = nil
	}
	all := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	for _, line := range all[percentHeader(all):] {
		if m := percentMarker.FindStringSubmatch(line); m != nil {
			flush()
			cur = notebookCell{Type: "code"}
			switch {
			case strings.Contains(m[1], "[markdown]") || strings.Contains(m[1], "[md]"):
				cur.Type = "markdown"
			case strings.Contains(m[1], "[raw]"):
				cur.Type = "raw"
			}
			continue
		}
		lines = append(lines, line)
	}
	flush()
	return cells, "python", nil
}

// percentHeader is the number of lines at the start of a py:percent script
// that are jupytext's YAML header: a "# ---" line, commented YAML, and a
// closing "# ---", before the first cell marker, after blank lines only.
// It is 0 when there is no such header.
func percentHeader(lines []string) int {
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || strings.TrimRight(lines[i], " \t") != "# ---" {
		return 0
	}
	for j := i + 1; j < len(lines); j++ {
		l := strings.TrimRight(lines[j], " \t")
		switch {
		case l == "# ---":
			return j + 1
		case percentMarker.MatchString(l), !strings.HasPrefix(l, "#"):
			return 0 // not a header: a cell whose text starts with "# ---"
		}
	}
	return 0
}

// selectCells picks the code cells [start:end) (Python slice rules) and the
// text cells among them: those after the code cell before the first one
// taken, up to the last one taken, and the notebook's closing text when the
// slice reaches its last code cell.
func selectCells(cells []notebookCell, start, end *int) (picked []notebookCell, codeLo, codeHi, codeN int) {
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

func (s *Server) runNotebook(ctx context.Context, req *mcp.CallToolRequest, in RunNotebookInput) (*mcp.CallToolResult, RunOutput, error) {
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	var (
		path, lang string
		picked     []notebookCell
		lo, hi     int
	)
	ss, err := s.eng.LookupOrCreateChecked(sessionOr(in.SessionID), func(ss *engine.Session) error {
		tp, err := ss.ResolvePath(in.Path, engine.ReadAccess)
		if err != nil {
			return fmt.Errorf("run_notebook needs a path: %v", err)
		}
		path = tp.String()
		var cells []notebookCell
		cells, lang, err = readNotebook(tp)
		if err != nil {
			return err
		}
		var codeN int
		picked, lo, hi, codeN = selectCells(cells, in.Start, in.End)
		if codeN == 0 {
			return fmt.Errorf("%s has no code cells", path)
		}
		if len(picked) == 0 {
			return fmt.Errorf("no code cells in that range: %s has %d (indices 0 to %d)", path, codeN, codeN-1)
		}
		// A notebook of another language is refused before a session is
		// made for it; a kernel already running is asked again below.
		return s.checkLanguage(ss, lang, path)
	})
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	execute := in.Execute == nil || *in.Execute
	if !execute {
		// Entering cells in the history is quick, but it takes its turn
		// like any other change to the session.
		release, err := s.eng.WaitTurn(ctx, ss, s.placeOf(ss.ID(), req.Params.Meta))
		if err != nil {
			return errResult[RunOutput]("%v", err)
		}
		defer release()
		if err := s.checkLanguage(ss, lang, path); err != nil {
			return errResult[RunOutput]("%v", err)
		}
		return s.loadCells(ss, path, picked, lo, hi)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, RunOutput, error) {
		if _, _, err := ss.Kernel(ctx); err != nil {
			return errResult[RunOutput]("session %q: cannot start a kernel: %v", ss.ID(), err)
		}
		if err := s.checkLanguage(ss, lang, path); err != nil {
			return errResult[RunOutput]("%v", err)
		}
		return s.limitJoined(s.runCells(ctx, r, ss, path, picked, lo, hi, timeout))
	}, runHandoff(ss))
}

// checkLanguage refuses a notebook written for another language than the
// session's kernel (when both are known).
func (s *Server) checkLanguage(ss *engine.Session, lang, path string) error {
	have := ss.Describe().Language
	if have == "" && ss.Choice().Kernel == "" && s.cfg.Kernel == "" {
		have = "python" // the kernel that will start is the interpreter's ipykernel
	}
	if lang == "" || have == "" || strings.EqualFold(lang, have) {
		return nil
	}
	return fmt.Errorf("%s is a %s notebook, but session %q runs %s: create_session with a %s kernel (see list_kernels) and run it there", path, lang, ss.ID(), have, lang)
}

// loadCells enters cells into the history without running them. Code
// cells keep the outputs the notebook has.
func (s *Server) loadCells(ss *engine.Session, path string, cells []notebookCell, lo, hi int) (*mcp.CallToolResult, RunOutput, error) {
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
	return textResult(msg), RunOutput{SessionID: ss.ID(), Status: "ok", Displays: []Display{}, Note: msg}, nil
}

// cellLabel names a code cell in a result: its index among the code cells
// (what start/end count) and its number among all the notebook's cells,
// both of the whole notebook, whatever slice was taken.
func cellLabel(code int, c notebookCell) string {
	return fmt.Sprintf("code cell %d, cell %d of the notebook", code, c.Index+1)
}

// runCells runs a notebook's cells in order in the caller's turn, each code
// cell as one history block, stopping at the first that does not succeed.
func (s *Server) runCells(ctx context.Context, r *engine.Run, ss *engine.Session, path string, cells []notebookCell, lo, hi int, timeout time.Duration) (*mcp.CallToolResult, RunOutput, error) {
	var (
		content []mcp.Content
		last    = RunOutput{SessionID: ss.ID(), RunID: r.ID(), Status: "ok", Displays: []Display{}}
		blocks  []BlockSummary
	)
	name := filepath.Base(path)
	total := hi - lo
	n := lo // the code cell's index in the notebook
	for _, c := range cells {
		if c.Type != "code" {
			now := time.Now()
			ss.Record(history.Entry{Code: c.Source, CellType: c.Type, Source: "notebook:" + path, Generation: ss.Generation(), Start: now, End: now, Outputs: []history.Output{}})
			continue
		}
		cc, out, err := s.runBlock(ctx, r, ss, c.Source, "notebook:"+path, timeout)
		if err != nil {
			return errResult[RunOutput]("running code cell %d of %s: %v", n, name, err)
		}
		block := ss.HistoryLen()
		blocks = append(blocks, BlockSummary{Block: block, Status: out.Status, ExecutionCount: out.ExecutionCount, Result: out.Result, Error: out.Error})
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf("[%s] %s", cellLabel(n, c), out.Status)})
		content = append(content, cc...)
		last = out
		if out.Status != "ok" {
			head := fmt.Sprintf("Stopped at code cell %d of %s (%s); %d of %d code cells ran.", n, name, out.Status, n-lo+1, total)
			if out.Error != nil {
				head = fmt.Sprintf("Stopped at code cell %d of %s: %s. %d of %d code cells ran.", n, name, errorHeadline(out.Error), n-lo+1, total)
			}
			last.Blocks = blocks
			return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...), IsError: true}, last, nil
		}
		n++
	}
	last.Blocks = blocks
	head := fmt.Sprintf("Ran %d code cells of %s (%d to %d); all succeeded. Each is a block of the history.", total, name, lo, hi-1)
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...)}, last, nil
}
