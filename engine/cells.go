package engine

import "github.com/kernel-mcp/kernel-mcp/history"

// Cell is a notebook cell as the views show it (the cell view in the chat
// and the web view): a block of the history, or a run still going on.
type Cell struct {
	SessionID string `json:"session_id"`
	// RunID is "" for a history cell that no live run recorded.
	RunID string `json:"run_id"`
	// Index is the 0-based history index; -1 until the block is recorded
	// (a block re-run in place keeps its own).
	Index int    `json:"index"`
	Code  string `json:"code"`
	// CellType is code, markdown or raw (a notebook's text cells).
	CellType string `json:"cell_type"`
	// Source is history.Entry.Source: "", "file:...", "rerun", "notebook:...".
	Source string `json:"source"`
	// By is who wrote the code: assistant or person.
	By string `json:"by"`
	// Language is the session kernel's, for highlighting; "" while unknown.
	Language       string `json:"language"`
	ExecutionCount int    `json:"execution_count"`
	// Status is ok, error, timeout, interrupted (or loaded) for a recorded
	// block; queued, running or input_requested for a run going on.
	Status    string           `json:"status"`
	ElapsedMS int64            `json:"elapsed_ms"`
	Outputs   []history.Output `json:"outputs"`
	// Prompt and Password are set while the run waits for input.
	Prompt   string `json:"prompt,omitempty"`
	Password bool   `json:"password,omitempty"`
	Note     string `json:"note,omitempty"`
	// Task is set for a live run that a client follows as an MCP task.
	Task bool `json:"task,omitempty"`
}

// Author is a cell's By for an entry's or a run's: "" is the assistant.
func Author(by string) string {
	if by == "" {
		return "assistant"
	}
	return by
}

// EntryCell is history entry e, at index, as a cell; runID names the run
// that recorded it, if known.
func EntryCell(sessionID, runID, language string, index int, e history.Entry) Cell {
	c := Cell{SessionID: sessionID, RunID: runID, Index: index, Code: e.Code, CellType: "code", Source: e.Source, By: Author(e.By),
		Language: language, ExecutionCount: e.ExecutionCount, Status: e.Status, Outputs: e.Outputs, Note: e.Note}
	if !e.IsCode() {
		c.CellType = e.CellType
	}
	if !e.Start.IsZero() && !e.End.IsZero() {
		c.ElapsedMS = e.End.Sub(e.Start).Milliseconds()
	}
	if c.Outputs == nil {
		c.Outputs = []history.Output{}
	}
	return c
}

// LiveCell is run r, still going on, as a cell: its code, its status and
// the outputs of snap (a ViewSince of it).
func LiveCell(r *Run, language string, snap RunSnapshot) Cell {
	c := Cell{SessionID: r.ss.id, RunID: r.id, Index: -1, Code: snap.Code, CellType: "code", By: Author(r.By()), Language: language,
		ExecutionCount: snap.ExecutionCount, Status: snap.View.Status, ElapsedMS: snap.View.ElapsedMS, Outputs: snap.Outputs,
		Prompt: snap.View.Prompt, Password: snap.View.Password, Task: snap.View.Task}
	if c.Outputs == nil {
		c.Outputs = []history.Output{}
	}
	return c
}

// RunCells are the history cells run r recorded, found by the run id each
// entry keeps, in history order. The indices r noted as it recorded them
// (RunSnapshot.Blocks) hold only while it runs: once it is done, a
// delete_history moves the blocks after the ones deleted, and the indices
// then name another run's blocks. A block re-run in place since belongs to
// the run that re-ran it.
func (ss *Session) RunCells(r *Run, language string) []Cell {
	type block struct {
		i int
		e history.Entry
	}
	var mine []block
	ss.mu.Lock()
	for i, e := range ss.hist {
		if e.Run == r.id {
			mine = append(mine, block{i, e})
		}
	}
	ss.mu.Unlock()
	cells := make([]Cell, 0, len(mine))
	for _, b := range mine {
		cells = append(cells, EntryCell(ss.id, r.id, language, b.i, b.e))
	}
	return cells
}

// Cells is the session's notebook as the views show it: its history, then
// its runs still queued or running with what they printed so far. A
// history cell a live run recorded carries its run id, and a live run
// whose block is already recorded is shown once, as that history cell.
func (ss *Session) Cells(language string) []Cell {
	type live struct {
		r    *Run
		snap RunSnapshot
	}
	ss.recMu.Lock()
	hist := ss.History()
	var runs []live
	for _, r := range ss.Runs() {
		snap := r.ViewSince(0)
		if snap.View.Status != StatusDone {
			runs = append(runs, live{r, snap})
		}
	}
	ss.recMu.Unlock()

	// Only an unfinished run's block indices hold: it has the session's
	// turn, so no delete_history can shift them meanwhile.
	recordedBy := map[int]string{}
	for _, l := range runs {
		for _, i := range l.snap.Blocks {
			recordedBy[i] = l.r.id
		}
	}
	cells := make([]Cell, 0, len(hist)+len(runs))
	for i, e := range hist {
		cells = append(cells, EntryCell(ss.id, recordedBy[i], language, i, e))
	}
	for _, l := range runs {
		if !l.snap.InBlock && len(l.snap.Blocks) > 0 {
			continue // between blocks or finishing: its last block is above
		}
		c := LiveCell(l.r, language, l.snap)
		if i := l.snap.Replacing; l.snap.InBlock && i >= 0 && i < len(cells) {
			// A block re-run in place is shown where it is, once.
			c.Index = i
			cells[i] = c
			continue
		}
		cells = append(cells, c)
	}
	return cells
}
