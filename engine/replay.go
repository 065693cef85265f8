package engine

import (
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// ReplayStep is one code block a replay of the history ran (run_code with
// start/end, rerun_code).
type ReplayStep struct {
	// Block is its 1-based number in the history.
	Block  int
	Status string
	// Raised is set when it raised an exception, and Error is then the
	// exception's headline ("NameError on line 2: ...").
	Raised bool
	Error  string
}

// ReplayHeadline sums up a replay of entries, numbered from first: blocks
// are the code blocks that ran, and the last of them stopped the replay
// unless it succeeded. It counts code blocks only: a notebook's text cells
// are kept in the history but never run.
func ReplayHeadline(entries []history.Entry, first int, blocks []ReplayStep) string {
	code := 0
	for _, e := range entries {
		if e.IsCode() {
			code++
		}
	}
	text := len(entries) - code
	if len(blocks) > 0 {
		if b := blocks[len(blocks)-1]; b.Status != "ok" {
			if b.Raised {
				return fmt.Sprintf("Stopped at block [%d]: %s. %d of %d blocks ran.", b.Block, b.Error, len(blocks), code)
			}
			return fmt.Sprintf("Stopped at block [%d] (%s); %d of %d blocks ran.", b.Block, b.Status, len(blocks), code)
		}
	}
	head := fmt.Sprintf("Re-ran %d block(s) ([%d] to [%d]); all succeeded.", code, first, first+len(entries)-1)
	if code == 0 {
		head = fmt.Sprintf("No code blocks in [%d] to [%d]; nothing ran.", first, first+len(entries)-1)
	}
	if text > 0 {
		head += fmt.Sprintf(" %d text cell(s) among them were skipped.", text)
	}
	return head
}

// RerunHeadline sums up rerun_code's Run All in place: how many code
// blocks ran (a notebook's text cells never run), where it stopped, and
// which blocks' outputs differ from those recorded before (differ).
func RerunHeadline(entries []history.Entry, first int, blocks []ReplayStep, differ []string) string {
	code := 0
	for _, e := range entries {
		if e.IsCode() {
			code++
		}
	}
	if code == 0 || len(blocks) == 0 {
		return ReplayHeadline(entries, first, blocks)
	}
	cmp := "all outputs match those recorded before."
	if len(differ) > 0 {
		cmp = "outputs differ in " + strings.Join(differ, ", ") + "."
	}
	last := blocks[len(blocks)-1]
	if last.Status != "ok" {
		head := ReplayHeadline(entries, first, blocks)
		// "... 3 of 4 blocks ran." gets the comparison after it.
		head = strings.TrimSuffix(head, ".") + "; " + cmp
		if len(blocks) < code {
			head += fmt.Sprintf(" The blocks after [%d] did not run and keep their earlier outputs.", last.Block)
		}
		return head
	}
	head := fmt.Sprintf("Re-ran %d block(s) ([%d] to [%d]) in a fresh kernel, in place: %d of %d ran; %s", code, first, first+len(entries)-1, len(blocks), code, cmp)
	if text := len(entries) - code; text > 0 {
		head += fmt.Sprintf(" %d text cell(s) among them were skipped.", text)
	}
	return head
}
