package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Cell is one cell read from a notebook by [ParseNotebook].
type Cell struct {
	// Index is the cell's place among all the notebook's cells, 0-based,
	// so that a cell taken by start/end is still named as the notebook
	// numbers it.
	Index          int
	Type           string // code, markdown or raw
	Source         string
	Outputs        []Output // as the notebook has them
	ExecutionCount int
}

// ParseNotebook reads the bytes of an nbformat 4 notebook or a py:percent
// script; path names the file in errors and picks the format: a .ipynb
// file, or any file whose text starts with "{", is read as nbformat, any
// other as py:percent. The language is the notebook's own ("python" for a
// py:percent script), "" when it names none. It does not read the file:
// the caller does, with its own limits and confinement.
func ParseNotebook(path string, b []byte) (cells []Cell, language string, err error) {
	if strings.EqualFold(filepath.Ext(path), ".ipynb") || bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return parseIPynb(path, b)
	}
	return parsePercent(path, b)
}

func parseIPynb(path string, b []byte) ([]Cell, string, error) {
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
	cells := make([]Cell, 0, len(nb.Cells))
	for i, c := range nb.Cells {
		src, err := multiline(c.Source)
		if err != nil {
			return nil, "", fmt.Errorf("%s: cell %d: source: %v", path, i, err)
		}
		cell := Cell{Index: i, Type: c.CellType, Source: src}
		switch c.CellType {
		case "code":
			if c.ExecutionCount != nil {
				cell.ExecutionCount = *c.ExecutionCount
			}
			for j, raw := range c.Outputs {
				o, err := readOutput(raw)
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

// readOutput turns an nbformat output into an [Output]. MIME values that
// are multiline strings are joined; others (JSON) stay as they are.
func readOutput(raw json.RawMessage) (Output, error) {
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
		return Output{}, err
	}
	text, err := multiline(o.Text)
	if err != nil {
		return Output{}, err
	}
	out := Output{OutputType: o.OutputType, Name: o.Name, Text: text, Metadata: o.Metadata, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback}
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
func parsePercent(path string, b []byte) ([]Cell, string, error) {
	if !bytes.Contains(b, []byte("# %%")) && !bytes.Contains(b, []byte("#%%")) {
		return nil, "", fmt.Errorf("%s is neither an nbformat 4 notebook (.ipynb) nor a py:percent script (no \"# %%%%\" cell markers)", path)
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".py" && ext != "" {
		return nil, "", fmt.Errorf("%s: a py:percent script must be a .py file", path)
	}
	var cells []Cell
	cur := Cell{Type: "code"}
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
			cur = Cell{Type: "code"}
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
