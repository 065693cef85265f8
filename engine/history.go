package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// History bounds: what one entry keeps on disk and in memory. Results shown
// to the model are cut harder (Config.OutputLimit); history keeps more.
const (
	HistoryTextLimit = 200_000  // characters per text field
	HistoryDataLimit = 10 << 20 // bytes per MIME value, e.g. a base64 PNG
	// MaxOutputs bounds the outputs one run keeps (its streams are bounded
	// by bytes): 10,000 displays in a loop keep the first 500.
	MaxOutputs = 500
)

// historyEntry converts an execution into a history entry.
func historyEntry(code, source string, res *kernel.ExecuteResult, status, note string, gen int, start, end time.Time) history.Entry {
	e := history.Entry{Code: code, Source: source, Status: status, Generation: gen, Start: start, End: end, Note: note, Outputs: []history.Output{}}
	if res == nil {
		return e
	}
	e.ExecutionCount = res.ExecutionCount
	for _, o := range res.Outputs {
		e.Outputs = append(e.Outputs, historyOutput(o))
	}
	// An error the server reports for a kernel that never replied (a dead
	// kernel) still belongs in the record. An error the reply alone carries
	// is left out, as a notebook leaves it out: IPython's UsageError (an
	// unknown magic) comes as stderr text plus the reply, and an error
	// output would show it twice.
	if res.Error != nil && res.Status != "error" && !hasError(e.Outputs) {
		e.Outputs = append(e.Outputs, history.Output{OutputType: "error", EName: res.Error.EName, EValue: res.Error.EValue, Traceback: res.Error.Traceback})
	}
	return e
}

// historyOutput is a kernel output as history keeps it.
func historyOutput(o kernel.Output) history.Output {
	return history.Output{
		OutputType: o.Type, Name: o.Name, Text: o.Text, Data: o.Data, Metadata: o.Metadata,
		ExecutionCount: o.ExecutionCount, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback,
	}
}

func hasError(outs []history.Output) bool {
	for _, o := range outs {
		if o.OutputType == "error" {
			return true
		}
	}
	return false
}

// record appends an entry to the session's history, in memory and on disk,
// and tells subscribers. A disk failure is logged, never fatal: the entry is
// still in memory. It returns the entry's 0-based index.
func (s *Engine) record(ss *Session, e history.Entry) int {
	e = history.Cap(e, HistoryTextLimit, HistoryDataLimit)
	ss.mu.Lock()
	ss.hist = append(ss.hist, e)
	store, n := ss.store, len(ss.hist)
	index := n - 1
	ss.mu.Unlock()
	if store != nil {
		if err := store.Append(e); err != nil {
			s.cfg.Logger.Error("appending to history file", "session", ss.id, "error", err)
		}
	}
	s.events.Publish(Event{Kind: HistoryChanged, Session: ss.id, Entries: n})
	return index
}

// replace puts e in place of the entry at index i, in memory and on disk
// (the file rewritten atomically, as after a delete), and tells
// subscribers. The caller holds the session's turn, so that i still names
// the block it read. A disk failure is returned; the entry is in memory
// either way.
func (s *Engine) replace(ss *Session, i int, e history.Entry) error {
	e = history.Cap(e, HistoryTextLimit, HistoryDataLimit)
	ss.mu.Lock()
	if i < 0 || i >= len(ss.hist) {
		ss.mu.Unlock()
		return fmt.Errorf("no block at index %d", i)
	}
	// A new slice: readers hold copies of the old one's elements only, but
	// never a slice that changes under them.
	hist := slices.Clone(ss.hist)
	hist[i] = e
	ss.hist = hist
	store, meta, n := ss.store, ss.meta, len(hist)
	ss.mu.Unlock()
	var err error
	if store != nil {
		if err = store.Rewrite(meta, hist); errors.Is(err, history.ErrNotDurable) {
			s.cfg.Logger.Warn("rewriting history file", "session", ss.id, "error", err)
			err = nil
		}
	}
	s.events.Publish(Event{Kind: HistoryChanged, Session: ss.id, Entries: n})
	return err
}

// rewriteHistory replaces the session's history with entries.
func (s *Engine) rewriteHistory(ss *Session, entries []history.Entry) error {
	ss.mu.Lock()
	ss.hist = entries
	store, meta := ss.store, ss.meta
	ss.mu.Unlock()
	var err error
	if store != nil {
		err = store.Rewrite(meta, entries)
	}
	s.events.Publish(Event{Kind: HistoryChanged, Session: ss.id, Entries: len(entries)})
	return err
}

func (s *Engine) clearHistory(ss *Session) error {
	return s.rewriteHistory(ss, nil)
}

// register adds a new session: its history file, when histories are kept on
// disk. Call with s.mu held.
func (s *Engine) register(ss *Session) error {
	if err, ok := s.unrestorable[ss.id]; ok {
		return fmt.Errorf("session %q cannot be created: the history file it had when the server started could not be read (%v). "+
			"It is left as it is; use another session_id, or move the file out of %s and restart the server", ss.id, err, s.sessionsDir())
	}
	ss.meta = history.Meta{SessionID: ss.id, CreatedAt: ss.created, Kernel: ss.choice.Kernel, Python: ss.choice.Python, Cwd: ss.choice.Cwd,
		KernelID: ss.choice.KernelID, ConnectionFile: ss.choice.ConnectionFile}
	if s.cfg.StateDir != "" {
		st, err := history.Create(s.sessionsDir(), ss.meta)
		if err != nil {
			return fmt.Errorf("cannot create the history file of session %q: %w", ss.id, err)
		}
		ss.store = st
	}
	s.sessions[ss.id] = ss
	s.events.Publish(Event{Kind: SessionCreated, Session: ss.id})
	return nil
}

// unregister forgets a session and its history file. Call with s.mu held;
// the caller publishes session_deleted once the session's kernel is
// stopped.
func (s *Engine) unregister(ss *Session) {
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	ss.mu.Lock()
	ss.deleted = true
	ss.mu.Unlock()
	if ss.store != nil {
		if err := ss.store.Remove(); err != nil {
			s.cfg.Logger.Error("removing history file", "session", ss.id, "error", err)
		}
	}
}

func (s *Engine) sessionsDir() string { return filepath.Join(s.cfg.StateDir, "sessions") }

// restore loads the histories kept in the state dir as stopped sessions:
// their history can be read and exported, and the first run starts a kernel
// and says that the history did not run in it. A file with unreadable
// lines keeps the rest (history.Recover sets the file as it was aside),
// and the session says so. A file that cannot be read at all is left as it
// is, and its session id refused, so that no new session writes over it.
func (s *Engine) restore() error {
	if s.cfg.StateDir == "" {
		return nil
	}
	dir := s.sessionsDir()
	ids, err := history.Sessions(dir)
	if err != nil {
		return fmt.Errorf("reading histories in %s: %w", dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	restored, recovered, failed := 0, 0, 0
	for _, id := range ids {
		if checkSessionID(id) != nil {
			s.cfg.Logger.Warn("ignoring history file with an invalid session id", "file", id)
			continue
		}
		st, meta, entries, err := history.Open(dir, id)
		note := ""
		if errors.As(err, new(*history.CorruptError)) {
			var rec history.Recovery
			st, meta, entries, rec, err = history.Recover(dir, id)
			if err == nil {
				recovered++
				note = recoveryNote(id, rec, len(entries))
				s.cfg.Logger.Warn("restored what could be read of a corrupt history file; the file as it was is kept", "session", id,
					"skipped_lines", rec.Skipped, "meta_lost", rec.MetaLost, "blocks", len(entries), "kept_as", rec.SetAside)
			}
		}
		if err != nil {
			failed++
			if s.unrestorable == nil {
				s.unrestorable = map[string]error{}
			}
			s.unrestorable[id] = err
			s.cfg.Logger.Error("cannot restore a session's history; the file is left as it is, and the session id is refused until it is moved away", "session", id, "error", err)
			continue
		}
		ss := s.newSession(id, Choice{Kernel: meta.Kernel, Python: meta.Python, Cwd: meta.Cwd, KernelID: meta.KernelID, ConnectionFile: meta.ConnectionFile})
		if !meta.CreatedAt.IsZero() {
			ss.created = meta.CreatedAt
		}
		ss.meta, ss.store, ss.hist = meta, st, entries
		ss.meta.CreatedAt = ss.created
		ss.restored, ss.restoreNote = len(entries) > 0, note
		for _, e := range entries {
			ss.gen = max(ss.gen, e.Generation)
			ss.runSeq = max(ss.runSeq, runNumber(e.Run))
		}
		s.sessions[id] = ss
		s.events.Publish(Event{Kind: SessionCreated, Session: id})
		restored++
	}
	if len(ids) > 0 {
		s.cfg.Logger.Info("restored session histories", "count", restored, "recovered_from_corrupt_files", recovered, "failed", failed, "dir", dir)
	}
	return nil
}

// runNumber is the number of run id "r12"; 0 for anything else.
func runNumber(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "r"))
	if err != nil || n < 0 || !strings.HasPrefix(id, "r") {
		return 0
	}
	return n
}

// recoveryNote tells the user what restoring a corrupt history file left
// out, and where the file as it was is kept.
func recoveryNote(id string, rec history.Recovery, blocks int) string {
	lines := make([]string, len(rec.Skipped))
	for i, n := range rec.Skipped {
		lines[i] = strconv.Itoa(n)
	}
	note := fmt.Sprintf("Note: the history file of session %q was damaged when the server started: ", id)
	if len(lines) > 0 {
		note += fmt.Sprintf("line(s) %s could not be read and were left out, ", strings.Join(lines, ", "))
	}
	note += fmt.Sprintf("%d block(s) were kept.", blocks)
	if rec.MetaLost {
		note += " Its first record (the session's kernel, interpreter and working directory) was lost, so the session uses the server's defaults."
	}
	return note + " The file as it was is kept at " + rec.SetAside + "."
}

// takeRestoreNote returns, once, what restoring the session's history file
// had to leave out; "" when nothing.
func (ss *Session) TakeRestoreNote() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.restoreNoteShown {
		return ""
	}
	ss.restoreNoteShown = true
	return ss.restoreNote
}

// slice returns a copy of the session's entries in [start:end) and the
// 1-based number of the first.
func (ss *Session) Slice(start, end *int) ([]history.Entry, int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	lo, hi := history.Slice(len(ss.hist), start, end)
	return append([]history.Entry(nil), ss.hist[lo:hi]...), lo + 1
}
