package mcpserver

import "github.com/kernel-mcp/kernel-mcp/history"

// shortenedNote ends a get_history transcript whose outputs are previews.
const shortenedNote = "[outputs shortened; full: true gives them whole]"

// historyTranscript is get_history's transcript: every block's code, with
// its outputs whole when full is set, or else shortened to a preview (see
// history.Preview) and, when anything was shortened, a last line saying so.
func historyTranscript(entries []history.Entry, first int, full bool) string {
	if full {
		return history.Transcript(entries, first)
	}
	shown, shortened := history.Preview(entries)
	t := history.Transcript(shown, first)
	if shortened {
		t += "\n" + shortenedNote + "\n"
	}
	return t
}
