package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ColumnUse is a column a data tool reads: its role in the call (y, x[0])
// and what its values must be ("number": numeric or bool; "plot": numeric;
// "axis": anything but bool; "": anything).
type ColumnUse struct {
	Role    string `json:"role"`
	Column  string `json:"column"`
	Numeric string `json:"numeric,omitempty"`
}

// DataCheck is what a data tool needs of the DataFrame it reads; see
// py/check_data.py.
type DataCheck struct {
	Tool    string      `json:"tool"`
	Name    string      `json:"name"`
	Columns []ColumnUse `json:"columns"`
	// NumericDefault: the tool plots every numeric column when given
	// none, so there must be one.
	NumericDefault bool `json:"numeric_default,omitempty"`
	// GroupBy is a column whose values become groups, at most MaxGroups.
	GroupBy   string `json:"group_by,omitempty"`
	MaxGroups int    `json:"max_groups,omitempty"`
}

// DataFacts is what the check found: the groups of GroupBy, sorted.
type DataFacts struct {
	Error   string   `json:"error"`
	Groups  []string `json:"groups"`
	NGroups int      `json:"ngroups"`
}

// CheckData checks, silently and in the caller's turn, that the session
// holds the DataFrame and the columns a data tool names, before it runs
// code that the history keeps: a misspelt name is refused with the closest
// ones, and neither the history nor the execution count changes.
func (ss *Session) CheckData(ctx context.Context, chk DataCheck, limit time.Duration) (DataFacts, error) {
	var f DataFacts
	b, err := json.Marshal(chk)
	if err != nil {
		return f, err
	}
	var args map[string]any
	if err := json.Unmarshal(b, &args); err != nil {
		return f, err
	}
	raw, err := ss.Query(ctx, pyCheckData, args, limit)
	if err != nil {
		var pe *PyError
		if errors.As(err, &pe) {
			return f, fmt.Errorf("%s could not check %s: %v", chk.Tool, chk.Name, pe)
		}
		return f, err
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("bad reply from the kernel: %v", err)
	}
	if f.Error != "" {
		return f, fmt.Errorf("%s: %s\nNothing was run; the session and its history are unchanged", chk.Tool, f.Error)
	}
	return f, nil
}
