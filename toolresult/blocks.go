package toolresult

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/engine/datatools"
	"github.com/kernel-mcp/kernel-mcp/history"
)

// RunBlock runs one block as part of run r (engine.Run.RunBlock) and
// renders it.
func (rd Renderer) RunBlock(ctx context.Context, r *engine.Run, ss *engine.Session, code, source string, timeout time.Duration) ([]Part, RunOutput, error) {
	out := RunOutput{SessionID: ss.ID(), RunID: r.ID(), Displays: []Display{}}
	b, err := r.RunBlock(ctx, code, source, timeout)
	if err != nil {
		return nil, out, err
	}
	out.Status, out.Note, out.ElapsedMS, out.HistoryUnsaved = b.Status, b.Note, b.Elapsed().Milliseconds(), b.HistoryUnsaved
	return rd.Block(ss, b.Result, &out, b.Shown), out, nil
}

// AddInstallHint leads a failed result with how to install the package
// it missed, if that is why it failed.
func AddInstallHint(res *Result, out *RunOutput) {
	hint := datatools.InstallHint(out.Error.EValue, out.Error.Traceback)
	if hint == "" {
		return
	}
	out.Note = strings.TrimSpace(out.Note + "\n" + hint)
	res.Parts = append([]Part{{Text: hint}}, res.Parts...)
}

// Replay runs history blocks in order in the session, stopping at the
// first that does not succeed. The caller holds the execution right.
func (rd Renderer) Replay(ctx context.Context, r *engine.Run, ss *engine.Session, entries []history.Entry, first int, timeout time.Duration) (*Result, RunOutput, error) {
	var (
		content []Part
		last    RunOutput
		blocks  []BlockSummary
	)
	code, k := 0, 0
	for _, e := range entries {
		if e.IsCode() {
			code++
		}
	}
	for i, e := range entries {
		n := first + i
		if !e.IsCode() {
			continue // a notebook's text cell
		}
		k++
		r.SetProgress(k, code)
		c, out, err := rd.RunBlock(ctx, r, ss, e.Code, "rerun", timeout)
		if err != nil {
			return nil, RunOutput{}, fmt.Errorf("re-running block [%d]: %v", n, err)
		}
		blocks = append(blocks, BlockSummary{Block: n, Status: out.Status, ExecutionCount: out.ExecutionCount, Result: out.Result, Error: out.Error})
		content = append(content, Part{Text: fmt.Sprintf("[%d] %s", n, out.Status)})
		content = append(content, c...)
		last = out
		if out.Status != "ok" {
			last.Blocks = blocks
			head := replayHeadline(entries, first, blocks)
			return &Result{Parts: append([]Part{{Text: head}}, content...), IsError: true}, last, nil
		}
	}
	last.SessionID = ss.ID()
	last.RunID = r.ID()
	last.Blocks = blocks
	if last.Displays == nil {
		last.Displays = []Display{}
	}
	if len(entries) == 0 {
		last.Status = "ok"
		return TextResult("No blocks in that range."), last, nil
	}
	if len(blocks) == 0 {
		last.Status = "ok"
	}
	head := replayHeadline(entries, first, blocks)
	return &Result{Parts: append([]Part{{Text: head}}, content...)}, last, nil
}

// replaySteps are blocks as the engine's headlines take them.
func replaySteps(blocks []BlockSummary) []engine.ReplayStep {
	steps := make([]engine.ReplayStep, len(blocks))
	for i, b := range blocks {
		steps[i] = engine.ReplayStep{Block: b.Block, Status: b.Status, Raised: b.Error != nil}
		if b.Error != nil {
			steps[i].Error = errorHeadline(b.Error)
		}
	}
	return steps
}

// replayHeadline is engine.ReplayHeadline of blocks.
func replayHeadline(entries []history.Entry, first int, blocks []BlockSummary) string {
	return engine.ReplayHeadline(entries, first, replaySteps(blocks))
}

// Rerun is rerun_code's Run All: it runs the code blocks of entries
// (numbered from first) again in order, each recorded in its own place in
// the history, and compares each block's new outputs with those recorded
// before (history.SameOutputs). Like Replay, it stops at the first block
// that does not succeed; the blocks after it keep their earlier outputs.
// The result shows in full only the blocks whose outputs changed and the
// one that stopped the run; the others get one line each. The caller
// holds the execution right, so the indices stay those of entries.
func (rd Renderer) Rerun(ctx context.Context, r *engine.Run, ss *engine.Session, entries []history.Entry, first int, timeout time.Duration) (*Result, RunOutput, error) {
	var (
		content []Part
		last    = RunOutput{SessionID: ss.ID(), RunID: r.ID(), Status: "ok", Displays: []Display{}}
		blocks  []BlockSummary
		differ  []string
		code    int
	)
	for _, e := range entries {
		if e.IsCode() {
			code++
		}
	}
	k := 0
	for i, e := range entries {
		n := first + i
		if !e.IsCode() {
			continue // a notebook's text cell
		}
		k++
		r.SetProgress(k, code)
		b, old, err := r.RerunBlock(ctx, n-1, timeout)
		if err != nil {
			return nil, RunOutput{}, fmt.Errorf("re-running block [%d]: %v", n, err)
		}
		out := RunOutput{SessionID: ss.ID(), RunID: r.ID(), Displays: []Display{}, Status: b.Status, Note: b.Note, ElapsedMS: b.Elapsed().Milliseconds(), HistoryUnsaved: b.HistoryUnsaved}
		c := rd.Block(ss, b.Result, &out, b.Shown)
		sum := BlockSummary{Block: n, Status: out.Status, ExecutionCount: out.ExecutionCount, Outputs: "same"}
		lo, hi := n-1, n
		now, _ := ss.Slice(&lo, &hi)
		changed := ""
		if len(now) == 1 {
			changed = history.DiffOutputs(old.Outputs, now[0].Outputs)
		}
		if changed != "" {
			sum.Outputs = "changed: " + changed
			differ = append(differ, fmt.Sprintf("[%d]", n))
		}
		if changed != "" || out.Status != "ok" {
			sum.Result, sum.Error = out.Result, out.Error
			head := fmt.Sprintf("[%d] %s", n, out.Status)
			if changed != "" {
				head += fmt.Sprintf(", outputs differ from those recorded before (%s):", changed)
			}
			content = append(content, Part{Text: head})
			content = append(content, c...)
		} else {
			content = append(content, Part{Text: fmt.Sprintf("[%d] %s, same outputs", n, out.Status)})
		}
		blocks = append(blocks, sum)
		last = out
		if out.Status != "ok" {
			break
		}
	}
	last.Blocks = blocks
	if len(entries) == 0 {
		return TextResult("No blocks in that range."), last, nil
	}
	head := rerunHeadline(entries, first, blocks, differ)
	res := &Result{Parts: append([]Part{{Text: head}}, content...)}
	if last.Status != "ok" {
		res.IsError = true
	}
	return res, last, nil
}

// rerunHeadline is engine.RerunHeadline of blocks.
func rerunHeadline(entries []history.Entry, first int, blocks []BlockSummary, differ []string) string {
	return engine.RerunHeadline(entries, first, replaySteps(blocks), differ)
}

// Cells runs a notebook's cells in order in the caller's turn, each code
// cell as one history block, stopping at the first that does not succeed.
func (rd Renderer) Cells(ctx context.Context, r *engine.Run, ss *engine.Session, path string, cells []history.Cell, lo, hi int, timeout time.Duration) (*Result, RunOutput, error) {
	var (
		content []Part
		last    = RunOutput{SessionID: ss.ID(), RunID: r.ID(), Status: "ok", Displays: []Display{}}
		blocks  []BlockSummary
	)
	name := filepath.Base(path)
	total := hi - lo
	n := lo // the code cell's index in the notebook
	for _, c := range cells {
		if c.Type != "code" {
			now := time.Now()
			r.Record(history.Entry{Code: c.Source, CellType: c.Type, Source: "notebook:" + path, Generation: ss.Generation(), Start: now, End: now, Outputs: []history.Output{}})
			continue
		}
		r.SetProgress(n-lo+1, total)
		cc, out, err := rd.RunBlock(ctx, r, ss, c.Source, "notebook:"+path, timeout)
		if err != nil {
			return nil, RunOutput{}, fmt.Errorf("running code cell %d of %s: %v", n, name, err)
		}
		block := ss.HistoryLen()
		blocks = append(blocks, BlockSummary{Block: block, Status: out.Status, ExecutionCount: out.ExecutionCount, Result: out.Result, Error: out.Error})
		content = append(content, Part{Text: fmt.Sprintf("[%s] %s", engine.CellLabel(n, c), out.Status)})
		content = append(content, cc...)
		last = out
		if out.Status != "ok" {
			head := fmt.Sprintf("Stopped at code cell %d of %s (%s); %d of %d code cells ran.", n, name, out.Status, n-lo+1, total)
			if out.Error != nil {
				head = fmt.Sprintf("Stopped at code cell %d of %s: %s. %d of %d code cells ran.", n, name, errorHeadline(out.Error), n-lo+1, total)
			}
			last.Blocks = blocks
			return &Result{Parts: append([]Part{{Text: head}}, content...), IsError: true}, last, nil
		}
		n++
	}
	last.Blocks = blocks
	head := fmt.Sprintf("Ran %d code cells of %s (%d to %d); all succeeded. Each is a block of the history.", total, name, lo, hi-1)
	return &Result{Parts: append([]Part{{Text: head}}, content...)}, last, nil
}
