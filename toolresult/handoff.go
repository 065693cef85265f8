package toolresult

import (
	"fmt"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
)

// Handoff is the text of a call that returns before its run ends.
// background is set for a call that did not wait; blocked says which
// question holds up a queued run (engine.Run.BlockedBy).
func Handoff(session string, v engine.RunView, label, output string, background bool, blocked string) string {
	ref := fmt.Sprintf(`{"session_id": %q, "run_id": %q}`, session, v.RunID)
	var b strings.Builder
	switch v.Status {
	case engine.StatusQueued:
		fmt.Fprintf(&b, "Run %s is queued in session %q behind earlier calls; it starts when they end. Call wait_run %s for its output and result.", v.RunID, session, ref)
		if blocked != "" {
			b.WriteString(" " + blocked)
		}
	case engine.StatusInputRequested:
		what := "input()"
		if v.Password {
			what = "getpass()"
		}
		fmt.Fprintf(&b, "Run %s in session %q waits for input: the code called %s with the prompt %q. Answer with send_input {\"session_id\": %q, \"run_id\": %q, \"text\": \"...\"}, which then waits for the run as wait_run does; interrupt_session stops the run instead.", v.RunID, session, what, v.Prompt, session, v.RunID)
	case engine.StatusRunning:
		if background {
			fmt.Fprintf(&b, "Run %s in session %q is running in the background. Call wait_run %s for its output and result; interrupt_session stops it.", v.RunID, session, ref)
			break
		}
		fallthrough
	default:
		at := ""
		if v.Progress != "" {
			at = ", at " + v.Progress
		}
		fmt.Fprintf(&b, "Run %s in session %q is still running after %v%s; it goes on in the kernel. Call wait_run %s for more output and the result; interrupt_session stops it.", v.RunID, session, (time.Duration(v.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond), at, ref)
	}
	if output != "" {
		b.WriteString("\n" + label + "\n")
		b.WriteString(strings.TrimRight(output, "\n"))
	}
	return b.String()
}
