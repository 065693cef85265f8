package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NotebookMeta describes the kernel a notebook was run with. Empty fields
// default to ipykernel's: "python3", "Python 3", "python".
type NotebookMeta struct {
	KernelName, DisplayName, Language, LanguageVersion string
}

// Notebook renders entries as a valid nbformat 4.5 notebook, formatted as
// Jupyter writes it (sorted keys, 1-space indent, trailing newline).
//
// Each entry becomes one code cell with the id "cell-<N>" (first is the
// 1-based number of entries[0]), its source split into lines as nbformat does
// (a list of strings keeping "\n"), its execution_count (null when 0) and
// its outputs as nbformat output dicts: stream (name, text), execute_result
// (data, metadata, execution_count), display_data (data, metadata) and error
// (ename, evalue, traceback, colours kept for Jupyter to render). Images stay
// base64 in data, so the notebook opens with its plots. Outputs of any other
// type are left out. Timing goes into the cell's metadata.execution as
// JupyterLab records it, and the kernel generation, status, note and who
// wrote the block (by: "person", left out for the assistant) into
// metadata.kernel_mcp. The notebook's metadata has kernelspec {name,
// display_name, language} and language_info {name, version}.
func Notebook(entries []Entry, first int, meta NotebookMeta) ([]byte, error) {
	return NotebookWithout(entries, first, meta, nil)
}

// NotebookWithout is Notebook without the entries skip reports (nil: none).
// The cells kept keep their numbers, so that "cell-<N>" still names block
// [N] of the transcript; the ids skip the blocks left out.
func NotebookWithout(entries []Entry, first int, meta NotebookMeta, skip func(Entry) bool) ([]byte, error) {
	if meta.KernelName == "" {
		meta.KernelName = "python3"
	}
	if meta.DisplayName == "" {
		meta.DisplayName = "Python 3"
	}
	if meta.Language == "" {
		meta.Language = "python"
	}
	langInfo := map[string]any{"name": meta.Language}
	if meta.LanguageVersion != "" {
		langInfo["version"] = meta.LanguageVersion
	}
	cells := make([]any, 0, len(entries))
	for i, e := range entries {
		if skip == nil || !skip(e) {
			cells = append(cells, notebookCell(e, first+i))
		}
	}
	nb := map[string]any{
		"cells": cells,
		"metadata": map[string]any{
			"kernelspec": map[string]any{
				"name":         meta.KernelName,
				"display_name": meta.DisplayName,
				"language":     meta.Language,
			},
			"language_info": langInfo,
		},
		"nbformat":       4,
		"nbformat_minor": 5,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // Jupyter writes <, > and & as they are
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func notebookCell(e Entry, n int) map[string]any {
	if !e.IsCode() {
		md := map[string]any{}
		if e.By != "" {
			md["kernel_mcp"] = map[string]any{"by": e.By}
		}
		return map[string]any{
			"cell_type": e.CellType,
			"id":        "cell-" + strconv.Itoa(n),
			"metadata":  md,
			"source":    splitLines(e.Code),
		}
	}
	var count any // null when the kernel gave no count
	if e.ExecutionCount > 0 {
		count = e.ExecutionCount
	}
	outputs := make([]any, 0, len(e.Outputs))
	for _, o := range e.Outputs {
		if out := notebookOutput(o); out != nil {
			outputs = append(outputs, out)
		}
	}
	md := map[string]any{}
	if !e.Start.IsZero() && !e.End.IsZero() {
		md["execution"] = map[string]any{
			"iopub.execute_input": e.Start.UTC().Format(time.RFC3339Nano),
			"shell.execute_reply": e.End.UTC().Format(time.RFC3339Nano),
		}
	}
	km := map[string]any{"generation": e.Generation, "status": e.Status}
	if e.Note != "" {
		km["note"] = e.Note
	}
	if e.Source != "" {
		km["source"] = e.Source
	}
	if e.Truncated {
		km["truncated"] = true
	}
	if e.By != "" {
		km["by"] = e.By
	}
	md["kernel_mcp"] = km
	return map[string]any{
		"cell_type":       "code",
		"execution_count": count,
		"id":              "cell-" + strconv.Itoa(n),
		"metadata":        md,
		"outputs":         outputs,
		"source":          splitLines(e.Code),
	}
}

// notebookOutput converts o to an nbformat output dict, or nil for a type
// nbformat 4 does not have.
func notebookOutput(o Output) map[string]any {
	switch o.OutputType {
	case "stream":
		name := o.Name
		if name == "" {
			name = "stdout"
		}
		return map[string]any{"output_type": "stream", "name": name, "text": splitLines(o.Text)}
	case "execute_result":
		var count any
		if o.ExecutionCount > 0 {
			count = o.ExecutionCount
		}
		return map[string]any{
			"output_type":     "execute_result",
			"data":            notebookData(o.Data),
			"metadata":        notebookMetadata(o.Metadata),
			"execution_count": count,
		}
	case "display_data":
		return map[string]any{
			"output_type": "display_data",
			"data":        notebookData(o.Data),
			"metadata":    notebookMetadata(o.Metadata),
		}
	case "error":
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		return map[string]any{"output_type": "error", "ename": o.EName, "evalue": o.EValue, "traceback": tb}
	}
	return nil
}

// notebookData is a MIME bundle as nbformat writes it: text values split
// into lines, everything else (base64 images, JSON) as it is.
func notebookData(data map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(data))
	for mime, v := range data {
		var s string
		if splitMIME(mime) && json.Unmarshal(v, &s) == nil {
			out[mime] = splitLines(s)
			continue
		}
		out[mime] = v
	}
	return out
}

// splitMIME reports whether nbformat stores values of mime as a list of lines.
func splitMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "application/javascript" || mime == "image/svg+xml"
}

func notebookMetadata(md map[string]json.RawMessage) map[string]json.RawMessage {
	if md == nil {
		return map[string]json.RawMessage{}
	}
	return md
}

// splitLines is Python's s.splitlines(keepends=True), the form nbformat
// writes multi-line strings in: lines end at \n, \r, \r\n and the other
// Unicode line boundaries, and keep their ending.
func splitLines(s string) []string {
	lines := []string{}
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\r':
			if strings.HasPrefix(s[i+1:], "\n") {
				size++
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		default:
			i += size
			continue
		}
		i += size
		lines = append(lines, s[start:i])
		start = i
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}
