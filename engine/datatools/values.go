package datatools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// Limits of what the helper code returns.
const (
	getValueMaxCells = 250_000
	getValueMaxBytes = 5 << 20
	maxVariables     = 500
	maxFrameColumns  = 50 // a DataFrame's columns list_variables names
)

// GetValueArgs are the arguments of engine.PyGetValue for expr: orient is
// split (the default) or records, head the rows or items wanted (nil: all).
func GetValueArgs(expr, orient string, head *int) (map[string]any, error) {
	o := strings.ToLower(strings.TrimSpace(orient))
	switch o {
	case "":
		o = "split"
	case "split", "records":
	default:
		return nil, fmt.Errorf("orient %q is not split or records", orient)
	}
	args := map[string]any{"expression": expr, "limit": getValueMaxBytes, "max_cells": getValueMaxCells, "orient": o}
	if head != nil {
		if *head < 0 {
			return nil, fmt.Errorf("head is a number of rows or items, 0 or more, not %d", *head)
		}
		args["head"] = *head
	}
	return args, nil
}

// Value is a value engine.PyGetValue returned.
type Value struct {
	// Type is the Python type of the value (on R, its class).
	Type string
	// Shape says how big the whole value is, e.g. "203 rows x 4 columns".
	Shape string
	// Value is the value decoded, numbers as json.Number; Raw is its JSON.
	Value any
	Raw   json.RawMessage
	// Shown and Total are set when head left part of the value out.
	Shown, Total int
	// Note says so: "showing 5 of 203 rows".
	Note string
}

// ParseValue reads engine.PyGetValue's reply for expr.
func ParseValue(expr string, raw json.RawMessage) (Value, error) {
	var v struct {
		Type      string          `json:"type"`
		Shape     string          `json:"shape"`
		Value     json.RawMessage `json:"value"`
		Total     int             `json:"total"`
		Shown     int             `json:"shown"`
		Unit      string          `json:"unit"`
		EvalError *struct {
			EName  string `json:"ename"`
			EValue string `json:"evalue"`
		} `json:"eval_error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Value{}, fmt.Errorf("bad reply from the kernel: %v", err)
	}
	if e := v.EvalError; e != nil {
		return Value{}, fmt.Errorf("evaluating %s raised %s: %s", expr, e.EName, e.EValue)
	}
	dec := json.NewDecoder(bytes.NewReader(v.Value))
	dec.UseNumber() // integers beyond 2^53 stay exact
	var value any
	if err := dec.Decode(&value); err != nil {
		return Value{}, fmt.Errorf("bad value from the kernel: %v", err)
	}
	out := Value{Type: v.Type, Shape: v.Shape, Value: value, Raw: v.Value, Shown: v.Shown, Total: v.Total}
	if v.Total > 0 {
		out.Note = fmt.Sprintf("showing %d of %d %s", v.Shown, v.Total, v.Unit)
	}
	return out, nil
}

// Text is get_value's text: what the value is, then its JSON. A client
// shows its model either the text (Claude Desktop) or the structured
// content (Claude Code, VS Code), never knowingly both, so each carries the
// value once (docs/context.md); past limit characters the text is cut,
// with a note naming head.
func (v Value) Text(expr string, limit int) string {
	what := v.Type
	if v.Shape != "" {
		what += ", " + v.Shape
	}
	text := fmt.Sprintf("%s (%s)", expr, what)
	if v.Note != "" {
		text += "; " + v.Note
	}
	raw := v.Raw
	if n := utf8.RuneCount(raw); limit > 0 && n > limit {
		cut := 0
		for range limit {
			_, size := utf8.DecodeRune(raw[cut:])
			cut += size
		}
		return text + fmt.Sprintf(":\n%s\n... (%d characters of JSON, cut at %d here; the structured content has it whole, or ask for fewer with head)", raw[:cut], n, limit)
	}
	return text + ":\n" + string(raw)
}

// ListVariablesArgs are the arguments of engine.PyListVariables.
func ListVariablesArgs() map[string]any {
	return map[string]any{"max": maxVariables, "max_columns": maxFrameColumns}
}

// Variable is one row of list_variables.
type Variable struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Shape  []int  `json:"shape,omitempty"`
	DType  string `json:"dtype,omitempty"`
	Length *int   `json:"length,omitempty"`
	Repr   string `json:"repr"`
}

// VariablesText is list_variables' text: one line a variable, then how
// many of total were left out, cut in the middle past limit characters.
func VariablesText(vars []Variable, total, limit int) string {
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s: %s", v.Name, v.Type)
		switch {
		case len(v.Shape) > 0:
			fmt.Fprintf(&b, " %v", v.Shape)
		case v.Length != nil:
			fmt.Fprintf(&b, " len %d", *v.Length)
		}
		fmt.Fprintf(&b, " = %s\n", v.Repr)
	}
	if total > len(vars) {
		fmt.Fprintf(&b, "... and %d more\n", total-len(vars))
	}
	if total == 0 {
		b.WriteString("No variables defined.")
	}
	text, _ := history.CutMiddle(strings.TrimRight(b.String(), "\n"), limit)
	return text
}
