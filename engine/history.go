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
// and tells subscribers. A disk failure is never fatal: the entry is in
// memory, and the store writes it once it can (see HistoryBacklog). It
// returns the entry's 0-based index, and what of the history is not on
// disk yet (nil when all of it is).
func (s *Engine) record(ss *Session, e history.Entry) (int, *HistoryBacklog) {
	e = history.Cap(e, HistoryTextLimit, HistoryDataLimit)
	ss.mu.Lock()
	ss.hist = append(ss.hist, e)
	store, n := ss.store, len(ss.hist)
	index := n - 1
	ss.mu.Unlock()
	var behind *HistoryBacklog
	if store != nil {
		if err := store.Append(e); err != nil {
			behind = s.writeFailed(ss, store, "appending to history file", err)
		}
	}
	s.events.Publish(Event{Kind: HistoryChanged, Session: ss.id, Entries: n})
	return index, behind
}

// HistoryBacklog is what of a session's history is in memory but not yet
// in its history file, because writing it failed (a full disk). The store
// keeps it, in order, and writes it once the disk has room; until then a
// server restart would lose it.
type HistoryBacklog struct {
	// Blocks counts the blocks added to the history that are not written.
	Blocks int `json:"blocks"`
	// Rewrite is set when a change to earlier blocks (a delete, a clear,
	// a block run again in place) is not written: the file still holds
	// the history as it was before it.
	Rewrite bool `json:"rewrite,omitempty"`
	// Error is why the last write failed.
	Error string `json:"error"`
}

// Note is the line a result carries while the history on disk is behind.
func (b *HistoryBacklog) Note() string {
	if b.Rewrite {
		what := "the last change to the history"
		if b.Blocks > 0 {
			what += fmt.Sprintf(" and %d block(s) after it", b.Blocks)
		}
		return fmt.Sprintf("Note: the history on disk is behind: %s could not be written (%s); the history is kept in memory and written once the disk has room. A server restart before then would bring back the history file as it was.", what, b.Error)
	}
	return fmt.Sprintf("Note: the history on disk is behind by %d block(s): %s; they are kept in memory and written once the disk has room. A server restart before then would lose them.", b.Blocks, b.Error)
}

// HistoryBacklog is what of the session's history is not written to its
// history file yet; nil when the file holds all of it, or histories are
// kept in memory only.
func (ss *Session) HistoryBacklog() *HistoryBacklog {
	ss.mu.Lock()
	store := ss.store
	ss.mu.Unlock()
	if store == nil {
		return nil
	}
	return backlogOf(store)
}

func backlogOf(store *history.Store) *HistoryBacklog {
	b := store.Backlog()
	if !b.Behind() {
		return nil
	}
	msg := "unknown error"
	if b.Err != nil {
		msg = b.Err.Error()
	}
	return &HistoryBacklog{Blocks: b.Entries, Rewrite: b.Rewrite, Error: msg}
}

// writeFailed logs a history write that failed and returns the backlog the
// store keeps for it; nil when it kept nothing (a session deleted
// meanwhile, an entry that cannot be encoded), so that only the log has it.
func (s *Engine) writeFailed(ss *Session, store *history.Store, what string, err error) *HistoryBacklog {
	behind := backlogOf(store)
	if behind == nil {
		s.cfg.Logger.Error(what, "session", ss.id, "error", err)
		return nil
	}
	s.cfg.Logger.Error(what+"; kept in memory and written once the disk has room", "session", ss.id, "error", err,
		"blocks_behind", behind.Blocks, "rewrite_behind", behind.Rewrite)
	return behind
}

// watchStore logs when the session's history file has caught up after
// failed writes.
func (s *Engine) watchStore(ss *Session, st *history.Store) {
	st.OnCaughtUp(func() {
		s.cfg.Logger.Info("the history file caught up: every block is written", "session", ss.id)
	})
}

// replace puts e in place of the entry at index i, in memory and on disk
// (the file rewritten atomically, as after a delete), and tells
// subscribers. The caller holds the session's turn, so that i still names
// the block it read. A disk failure the store keeps for later is the
// backlog; one it did not keep is the error. The entry is in memory
// either way.
func (s *Engine) replace(ss *Session, i int, e history.Entry) (*HistoryBacklog, error) {
	e = history.Cap(e, HistoryTextLimit, HistoryDataLimit)
	ss.mu.Lock()
	if i < 0 || i >= len(ss.hist) {
		ss.mu.Unlock()
		return nil, fmt.Errorf("no block at index %d", i)
	}
	// A new slice: readers hold copies of the old one's elements only, but
	// never a slice that changes under them.
	hist := slices.Clone(ss.hist)
	hist[i] = e
	ss.hist = hist
	store, meta, n := ss.store, ss.meta, len(hist)
	ss.mu.Unlock()
	var err error
	var behind *HistoryBacklog
	if store != nil {
		if err = store.Rewrite(meta, hist); errors.Is(err, history.ErrNotDurable) {
			s.cfg.Logger.Warn("rewriting history file", "session", ss.id, "error", err)
			err = nil
		} else if err != nil {
			if behind = s.writeFailed(ss, store, "rewriting history file", err); behind != nil {
				err = nil
			}
		}
	}
	s.events.Publish(Event{Kind: HistoryChanged, Session: ss.id, Entries: n})
	return behind, err
}

// rewriteHistory replaces the session's history with entries. A disk
// failure the store keeps for later is logged and not returned: the
// session's HistoryBacklog tells it. An error that matches
// history.ErrNotDurable means the file is rewritten, only its folder sync
// failed.
func (s *Engine) rewriteHistory(ss *Session, entries []history.Entry) error {
	ss.mu.Lock()
	ss.hist = entries
	store, meta := ss.store, ss.meta
	ss.mu.Unlock()
	var err error
	if store != nil {
		err = store.Rewrite(meta, entries)
		if err != nil && !errors.Is(err, history.ErrNotDurable) && s.writeFailed(ss, store, "rewriting history file", err) != nil {
			err = nil
		}
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
		s.watchStore(ss, st)
	}
	s.sessions[ss.id] = ss
	s.events.Publish(Event{Kind: SessionCreated, Session: ss.id})
	return nil
}

// unregister forgets a session and its history file. Call with s.mu held;
// the caller publishes session_deleted once the session's kernel is
// stopped. The error is a history file that could not be removed (it is
// logged too): the session would come back after a server restart.
func (s *Engine) unregister(ss *Session) error {
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	ss.mu.Lock()
	ss.deleted = true
	ss.mu.Unlock()
	if ss.store != nil {
		if err := ss.store.Remove(); err != nil {
			s.cfg.Logger.Error("removing history file", "session", ss.id, "error", err)
			return err
		}
	}
	return nil
}

// closeStores closes the sessions' history files, each after a last try
// to write what waited (a full disk); what could not be written is logged.
func (s *Engine) closeStores(sessions []*Session) {
	for _, ss := range sessions {
		ss.mu.Lock()
		store := ss.store
		ss.mu.Unlock()
		if store == nil {
			continue
		}
		if err := store.Close(); err != nil {
			s.cfg.Logger.Error("closing history file; what it lacked is lost", "session", ss.id, "error", err)
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
		s.watchStore(ss, st)
		ss.meta.CreatedAt = ss.created
		ss.restored, ss.restoreNote = len(entries) > 0, note
		for _, e := range entries {
			ss.gen = max(ss.gen, e.Generation)
			ss.runSeq = max(ss.runSeq, runNumber(e.Run))
		}
		// Past every number given out before a crash, too (runids.go).
		ss.runSeq = max(ss.runSeq, s.runIDs.reserved(id))
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
