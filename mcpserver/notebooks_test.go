package mcpserver

import (
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// rerun_code counts the code blocks it ran, never the text cells a
// notebook left in the history.
func TestReplayHeadlineCountsCodeBlocks(t *testing.T) {
	md := history.Entry{Code: "# Title", CellType: "markdown"}
	code := history.Entry{Code: "x = 1"}
	// [1] md, [2] code, [3] code, [4] md, [5] code, [6] md, [7] code
	entries := []history.Entry{md, code, code, md, code, md, code}
	ok := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "ok"}, {Block: 7, Status: "ok"}}
	if got, want := replayHeadline(entries, 1, ok), "Re-ran 4 block(s) ([1] to [7]); all succeeded. 3 text cell(s) among them were skipped."; got != want {
		t.Errorf("all ran: %q, want %q", got, want)
	}
	failed := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "error", Error: &ErrorInfo{EName: "NameError", EValue: "name 'x' is not defined"}}}
	if got := replayHeadline(entries, 1, failed); !strings.HasPrefix(got, "Stopped at block [5]: NameError") || !strings.HasSuffix(got, " 3 of 4 blocks ran.") {
		t.Errorf("stopped: %q, want block [5] and 3 of 4 blocks ran", got)
	}
	timedOut := []BlockSummary{{Block: 2, Status: "timeout"}}
	if got, want := replayHeadline(entries, 1, timedOut), "Stopped at block [2] (timeout); 1 of 4 blocks ran."; got != want {
		t.Errorf("timeout: %q, want %q", got, want)
	}
	if got := replayHeadline([]history.Entry{md}, 3, nil); got != "No code blocks in [3] to [3]; nothing ran. 1 text cell(s) among them were skipped." {
		t.Errorf("text only: %q", got)
	}
}

// rerun_code's headline counts code blocks only, names the blocks whose
// outputs differ, and says that the blocks after a failure did not run.
func TestRerunHeadline(t *testing.T) {
	md := history.Entry{Code: "# Title", CellType: "markdown"}
	code := history.Entry{Code: "x = 1"}
	entries := []history.Entry{md, code, code, md, code}
	ok := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "ok"}, {Block: 5, Status: "ok"}}
	if got, want := rerunHeadline(entries, 1, ok, []string{"[3]"}), "Re-ran 3 block(s) ([1] to [5]) in a fresh kernel, in place: 3 of 3 ran; outputs differ in [3]. 2 text cell(s) among them were skipped."; got != want {
		t.Errorf("all ran:\n%q, want\n%q", got, want)
	}
	if got, want := rerunHeadline(entries, 1, ok, nil), "Re-ran 3 block(s) ([1] to [5]) in a fresh kernel, in place: 3 of 3 ran; all outputs match those recorded before. 2 text cell(s) among them were skipped."; got != want {
		t.Errorf("all match:\n%q, want\n%q", got, want)
	}
	failed := []BlockSummary{{Block: 2, Status: "ok"}, {Block: 3, Status: "error", Error: &ErrorInfo{EName: "NameError", EValue: "name 'y' is not defined"}}}
	got := rerunHeadline(entries, 1, failed, []string{"[3]"})
	if !strings.HasPrefix(got, "Stopped at block [3]: NameError") || !strings.HasSuffix(got, " 2 of 3 blocks ran; outputs differ in [3]. The blocks after [3] did not run and keep their earlier outputs.") {
		t.Errorf("stopped: %q", got)
	}
}
