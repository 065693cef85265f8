package history

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Output is one output of an executed block, in nbformat 4 vocabulary, so a
// notebook can be written from it without translation.
type Output struct {
	OutputType     string                     `json:"output_type"` // stream, execute_result, display_data, error
	Name           string                     `json:"name,omitempty"`
	Text           string                     `json:"text,omitempty"`
	Data           map[string]json.RawMessage `json:"data,omitempty"` // MIME bundle; values usually JSON strings (text, base64 images)
	Metadata       map[string]json.RawMessage `json:"metadata,omitempty"`
	ExecutionCount int                        `json:"execution_count,omitempty"`
	EName          string                     `json:"ename,omitempty"`
	EValue         string                     `json:"evalue,omitempty"`
	Traceback      []string                   `json:"traceback,omitempty"`
	// Transient is what Jupyter's messages carry beside an output and
	// nbformat does not keep: the display id a later update_display_data
	// names. It is set only on what views read while a run goes on (a
	// run's viewer log, the web view's events), never on a recorded
	// output, which has its updates applied already.
	Transient *Transient `json:"transient,omitempty"`
}

// Transient holds an output's display id (see Output.Transient).
type Transient struct {
	DisplayID string `json:"display_id"`
}

// Entry is one executed block: its code, its outputs in arrival order and
// how it ended.
type Entry struct {
	Code           string    `json:"code"`
	Source         string    `json:"source,omitempty"` // "" run_code; "file:/abs/path.py" run_file; "rerun" replayed by rerun_code or run_code start/end
	Outputs        []Output  `json:"outputs"`
	Status         string    `json:"status"` // ok, error, timeout, interrupted
	ExecutionCount int       `json:"execution_count"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	Generation     int       `json:"generation"`          // which kernel process ran it: 1, 2, ... (a restart increments it)
	Truncated      bool      `json:"truncated,omitempty"` // outputs were capped when recorded
	Note           string    `json:"note,omitempty"`      // what happened beyond the code's output: "kernel died (signal 9)", a timeout...
	// CellType is "markdown" or "raw" for a notebook's text cell, kept so
	// save_notebook reproduces the notebook (Code holds its text); empty for
	// code. Such entries are never executed.
	CellType string `json:"cell_type,omitempty"`
	// By is who wrote the block: ByPerson for a cell the person ran from the
	// web view, empty for the assistant (every block before there was a
	// choice).
	By string `json:"by,omitempty"`
	// Run is the id of the run that recorded the block ("r12"); empty for
	// blocks recorded before ids were kept, and for cells entered without
	// running. A restarted server numbers its runs after the highest.
	Run string `json:"run,omitempty"`
}

// ByPerson is Entry.By for a block the person wrote and ran.
const ByPerson = "person"

// IsCode reports whether the entry is code (not a notebook's markdown or raw
// cell).
func (e Entry) IsCode() bool { return e.CellType == "" || e.CellType == "code" }

// Failed reports whether the block did not succeed: status error, timeout
// or interrupted.
func (e Entry) Failed() bool {
	return e.Status == "error" || e.Status == "timeout" || e.Status == "interrupted"
}

// Cap returns e with each text field (stream Text, text/* MIME values,
// traceback) longer than textLimit characters cut in the middle with a note
// "... [N characters omitted] ...", and each MIME value (e.g. a base64 image)
// larger than dataLimit bytes replaced by a text/plain note like
// "[image/png, 3.1 MB, not kept in history]". Truncated is set when anything
// was cut. Limits <= 0 mean no limit. Cap does not modify e's outputs in
// place: the result shares nothing that Cap changed with e.
func Cap(e Entry, textLimit, dataLimit int) Entry {
	if textLimit <= 0 && dataLimit <= 0 {
		return e
	}
	outs := make([]Output, len(e.Outputs))
	for i, o := range e.Outputs {
		var cut bool
		outs[i], cut = capOutput(o, textLimit, dataLimit)
		e.Truncated = e.Truncated || cut
	}
	if e.Outputs != nil {
		e.Outputs = outs
	}
	return e
}

func capOutput(o Output, textLimit, dataLimit int) (Output, bool) {
	cut := false
	if s, c := CutMiddle(o.Text, textLimit); c {
		o.Text, cut = s, true
	}
	if tb, c := capTraceback(o.Traceback, textLimit); c {
		o.Traceback, cut = tb, true
	}
	if len(o.Data) == 0 {
		return o, cut
	}
	data := make(map[string]json.RawMessage, len(o.Data))
	var meta map[string]json.RawMessage
	if o.Metadata != nil {
		meta = make(map[string]json.RawMessage, len(o.Metadata))
		for k, v := range o.Metadata {
			meta[k] = v
		}
	}
	var notes []string
	for _, mime := range sortedKeys(o.Data) {
		v := o.Data[mime]
		if strings.HasPrefix(mime, "text/") && textLimit > 0 {
			var s string
			if json.Unmarshal(v, &s) == nil {
				if short, c := CutMiddle(s, textLimit); c {
					v, cut = jsonString(short), true
				}
			}
		}
		if dataLimit > 0 && len(v) > dataLimit && mime != "text/plain" {
			notes = append(notes, fmt.Sprintf("[%s, %s, not kept in history]", mime, byteSize(len(v))))
			delete(meta, mime)
			cut = true
			continue
		}
		data[mime] = v
	}
	if len(notes) > 0 {
		text := strings.Join(notes, "\n")
		var plain string
		if v, ok := data["text/plain"]; ok && json.Unmarshal(v, &plain) == nil && plain != "" {
			text = plain + "\n" + text
		}
		data["text/plain"] = jsonString(text)
	}
	// text/plain itself is only ever cut, never dropped, so a capped output
	// still says what it was; a huge one gets the same note as any other.
	if v, ok := data["text/plain"]; ok && dataLimit > 0 && len(v) > dataLimit {
		data["text/plain"] = jsonString(fmt.Sprintf("[text/plain, %s, not kept in history]", byteSize(len(v))))
		cut = true
	}
	o.Data, o.Metadata = data, meta
	return o, cut
}

// CutMiddle cuts s to at most limit characters (runes), keeping its start
// and end and noting how many characters were left out between them.
// limit <= 0 means no limit. It walks only the kept ends: cutting 10 MB of
// output to a few thousand characters copies a few thousand characters.
func CutMiddle(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	n := runeCount(s)
	if n <= limit {
		return s, false
	}
	head := limit / 2
	tail := limit - head
	i := 0
	for range head {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	j := len(s)
	for range tail {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
	}
	return s[:i] + omittedNote(n-limit) + s[j:], true
}

// runeCount is utf8.RuneCountInString, eight ASCII bytes at a time: the
// output CutMiddle cuts is mostly ASCII, and counting it byte by byte was
// a measurable part of a 10 MB run_code's time after the kernel finished.
func runeCount(s string) int {
	n := 0
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 == 0 {
			n, s = n+8, s[8:]
			continue
		}
		_, size := utf8.DecodeRuneInString(s)
		n, s = n+1, s[size:]
	}
	return n + utf8.RuneCountInString(s)
}

func omittedNote(n int) string {
	return fmt.Sprintf("\n... [%d characters omitted] ...\n", n)
}

// capTraceback keeps a traceback's first and last frames within limit
// characters in all, replacing the frames in between (a deep recursion) by
// one note; a single frame longer than the limit is itself cut in the middle.
func capTraceback(tb []string, limit int) ([]string, bool) {
	if limit <= 0 || len(tb) == 0 {
		return tb, false
	}
	total := 0
	for _, f := range tb {
		total += utf8.RuneCountInString(f)
	}
	if total <= limit {
		return tb, false
	}
	if len(tb) == 1 {
		s, _ := CutMiddle(tb[0], limit)
		return []string{s}, true
	}
	// Keep the last frame (the exception line) whole if it fits in half the
	// budget, then as many frames from the start as fit in the rest, then
	// more from the end.
	last := tb[len(tb)-1]
	lastN := utf8.RuneCountInString(last)
	if lastN > limit/2 {
		last, _ = CutMiddle(last, limit/2)
		lastN = limit / 2
	}
	budget := limit - lastN
	tail := []string{last}
	var head []string
	i, j := 0, len(tb)-2
	for ; i <= j; i++ {
		n := utf8.RuneCountInString(tb[i])
		if n > budget {
			if i == 0 && budget > 0 {
				f, _ := CutMiddle(tb[0], budget)
				head = append(head, f)
				budget = 0
				i++
			}
			break
		}
		head = append(head, tb[i])
		budget -= n
	}
	for ; j >= i; j-- {
		n := utf8.RuneCountInString(tb[j])
		if n > budget {
			break
		}
		tail = append(tail, tb[j])
		budget -= n
	}
	omitted := 0
	for k := i; k <= j; k++ {
		omitted += utf8.RuneCountInString(tb[k])
	}
	out := make([]string, 0, len(head)+len(tail)+1)
	out = append(out, head...)
	if omitted > 0 {
		out = append(out, fmt.Sprintf("... [%d characters omitted] ...", omitted))
	}
	for k := len(tail) - 1; k >= 0; k-- {
		out = append(out, tail[k])
	}
	return out, true
}

// byteSize formats n bytes the way a person reads a file size.
func byteSize(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonString encodes s as a JSON string; encoding a string cannot fail.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
