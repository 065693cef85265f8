package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// SessionSummary is one row of list_sessions.
type SessionSummary struct {
	SessionID    string `json:"session_id"`
	CreatedAt    string `json:"created_at"`
	HistoryCount int    `json:"history_count"`
	State        string `json:"state"`
	Kernel       string `json:"kernel"`
	Pid          int    `json:"pid,omitempty"`
	// Run is the run in progress, if any; QueuedRuns counts those waiting
	// behind it.
	Run        *RunView `json:"run,omitempty"`
	QueuedRuns int      `json:"queued_runs"`
	// Note says what restoring the session's history file at start-up
	// had to leave out, and where the file as it was is kept.
	Note string `json:"note,omitempty"`
}

// SessionList is every session as list_sessions shows it, with the warm
// pool, and the same in words; uiURL is the web view's address, "" without
// one. The ids of history files that could not be restored are named too.
func (s *Engine) SessionList(uiURL string) (rows []SessionSummary, pool PoolSummary, text string) {
	all := s.Sessions()
	rows = []SessionSummary{}
	var b strings.Builder
	for _, ss := range all {
		d := ss.Describe()
		kname := d.Kernel
		if kname == "" {
			kname = ss.Choice().Kernel
		}
		row := SessionSummary{SessionID: ss.ID(), CreatedAt: ss.Created().UTC().Format(time.RFC3339), HistoryCount: d.History, State: d.State, Kernel: kname, Run: d.Run, QueuedRuns: d.QueuedRuns}
		if d.State != "dead" && d.State != "stopped" {
			row.Pid = d.Pid
		}
		row.Note = ss.RestoreNote()
		rows = append(rows, row)
		fmt.Fprintf(&b, "%s: %s, %d history entries", row.SessionID, row.State, row.HistoryCount)
		if row.Pid != 0 {
			fmt.Fprintf(&b, ", pid %d", row.Pid)
		}
		if r := row.Run; r != nil {
			fmt.Fprintf(&b, ", run %s %s for %.1f s", r.RunID, r.Status, float64(r.ElapsedMS)/1000)
			if r.Progress != "" {
				fmt.Fprintf(&b, ", at %s", r.Progress)
			}
			if r.LastLine != "" {
				fmt.Fprintf(&b, " (last output: %q)", r.LastLine)
			}
		}
		if row.QueuedRuns > 0 {
			fmt.Fprintf(&b, ", %d run(s) queued", row.QueuedRuns)
		}
		if row.Note != "" {
			fmt.Fprintf(&b, ". %s", row.Note)
		}
		b.WriteByte('\n')
	}
	if len(all) == 0 {
		b.WriteString("No sessions. run_code starts one.\n")
	}
	unrestorable := s.Unrestorable()
	bad := make([]string, 0, len(unrestorable))
	for id, err := range unrestorable {
		bad = append(bad, fmt.Sprintf("%s (%v)", id, err))
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		fmt.Fprintf(&b, "Not restored, their files left as they are and their ids refused: %s\n", strings.Join(bad, "; "))
	}
	pool = s.Pool()
	if pool.Size > 0 {
		fmt.Fprintf(&b, "Warm kernels: %d ready, %d starting.\n", pool.Ready, pool.Starting)
	}
	if uiURL != "" {
		fmt.Fprintf(&b, "Web view (the person can watch and run cells there): %s\n", uiURL)
	}
	return rows, pool, strings.TrimRight(b.String(), "\n")
}
