package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// ErrClosed is returned by a Store's methods after Close or Remove.
var ErrClosed = errors.New("history: store closed")

// Meta is the first record of a history file: which session it belongs to
// and what it ran on.
type Meta struct {
	SessionID string    `json:"session_id"`
	CreatedAt time.Time `json:"created_at"`
	Kernel    string    `json:"kernel,omitempty"`
	Python    string    `json:"python,omitempty"`
	Cwd       string    `json:"cwd,omitempty"`
	// KernelID or ConnectionFile name the running kernel an attached
	// session uses, so a restarted server attaches to it again.
	KernelID       string `json:"kernel_id,omitempty"`
	ConnectionFile string `json:"connection_file,omitempty"`
}

// record is one line of a history file: exactly one of its fields is set.
type record struct {
	Meta  *Meta  `json:"meta,omitempty"`
	Entry *Entry `json:"entry,omitempty"`
}

// Store keeps one session's history as an append-only JSON-lines file
// <dir>/<session>.jsonl (dir created 0700, file 0600). The first line is
// {"meta": Meta}, then one {"entry": Entry} line per Append; Rewrite replaces
// the whole file atomically (after deletes or clears). Every write is
// fsynced before the method returns, so an entry that was appended survives
// a crash; a crash in the middle of an Append leaves at most a torn last
// line, which Open drops.
//
// A write that fails (a full disk) is not dropped: the Store keeps it, in
// order, and writes it before anything later, at the next Append or Rewrite,
// at Flush, and every RetryInterval until it is written. So the file never
// holds a later entry without an earlier one, and once the disk has room it
// holds what the caller gave the Store. Backlog tells what waits.
//
// Session ids are used as file names as they are when they consist of
// lower-case ASCII letters, digits, '-', '_' and '.' (not leading); any
// other byte, upper-case letters included, is written as %XX, so every id
// maps to one safe file name and back, and no two ids' names differ only in
// case: on a case-insensitive file system (macOS, Windows) "A" and "a"
// would otherwise share one file. Files named by the older scheme, which
// kept upper-case letters, are still found, and renamed on Open.
//
// A Store is safe for concurrent use. It does not lock the file against
// other processes: one server owns a state folder.
type Store struct {
	mu     sync.Mutex
	dir    string
	path   string
	f      *os.File // nil once closed, or while a failed Rewrite left it shut
	closed bool
	size   int64 // bytes of valid records; the next Append writes here
	tail   bool  // bytes past size, left by a failed write, may remain

	// What waits to be written, in this order: a whole file (a Rewrite
	// that failed), then entry lines (Appends that failed or came after
	// one that did). err is why the last attempt failed.
	rewrite  []byte
	pending  [][]byte
	err      error
	retry    *time.Timer
	onCaught func()
}

// RetryInterval is how often a Store that could not write (a full disk)
// tries again on its own, besides at every Append, Rewrite and Flush.
var RetryInterval = 5 * time.Second

// Backlog is what a Store holds that is not in its file yet.
type Backlog struct {
	// Entries counts the appended entries that wait to be written.
	Entries int
	// Rewrite is set when a Rewrite waits: the file still holds the
	// history as it was before it.
	Rewrite bool
	// Err is why the last write failed.
	Err error
}

// Behind reports whether anything waits to be written.
func (b Backlog) Behind() bool { return b.Entries > 0 || b.Rewrite }

// Create makes a new store for meta.SessionID in dir, truncating any
// existing one, and writes the meta record, fsynced.
func Create(dir string, meta Meta) (*Store, error) {
	path, err := storePath(dir, meta.SessionID)
	if err != nil {
		return nil, err
	}
	line, err := encodeRecord(record{Meta: &meta})
	if err != nil {
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	// An old-scheme file of this session would come back as its history
	// after a restart: the new store replaces it.
	if old, ok := legacyStore(dir, meta.SessionID, path); ok {
		if err := os.Remove(old); err != nil {
			return nil, fmt.Errorf("history: create %s: removing the old %s: %w", path, old, err)
		}
	}
	// On a case-insensitive file system path may open an old-scheme file
	// of another session ("A.jsonl" for "a"): move it to its own name
	// rather than truncate it.
	if other := storeOwner(path); other != "" && other != meta.SessionID {
		if err := renameFile(path, filepath.Join(dir, sessionFile(other)+".jsonl")); err != nil {
			return nil, fmt.Errorf("history: create %s: it holds session %q, which could not be moved: %w", path, other, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	s := &Store{dir: dir, path: path, f: f}
	err = f.Chmod(0o600) // an existing file keeps its mode through O_TRUNC
	if err == nil {
		err = s.writeLocked(line)
	}
	if err == nil {
		err = notDurable(syncDir(dir))
	}
	if err != nil {
		// Leave no file behind: a restart would bring it back as the
		// history of a session that never started.
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	return s, nil
}

// Open opens the existing store of session in dir and returns its meta and
// entries. A torn or corrupt last line (a crash in the middle of an Append)
// is skipped and cut off the file, so later appends start on a clean line. A
// corrupt line anywhere else is a *CorruptError naming the file and the line
// number, and so is a file without a meta record; Recover keeps what can be
// read of such a file. A missing file is an error that matches
// fs.ErrNotExist.
func Open(dir, session string) (*Store, Meta, []Entry, error) {
	path, err := storePath(dir, session)
	if err != nil {
		return nil, Meta{}, nil, err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if old, ok := legacyStore(dir, session, path); ok {
			if err := renameFile(old, path); err != nil {
				return nil, Meta{}, nil, fmt.Errorf("history: open %s: renaming the old %s: %w", path, old, err)
			}
			if err := syncDir(dir); err != nil {
				return nil, Meta{}, nil, fmt.Errorf("history: open %s: %w", path, err)
			}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Meta{}, nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	meta, entries, good, err := decodeHistory(data)
	if err != nil {
		return nil, Meta{}, nil, &CorruptError{Path: path, Err: err}
	}
	if meta.SessionID != "" && meta.SessionID != session {
		// A case-insensitive file system can hand over another session's
		// file under this name.
		return nil, Meta{}, nil, fmt.Errorf("history: %s holds session %q, not %q", path, meta.SessionID, session)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, Meta{}, nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	s := &Store{dir: dir, path: path, f: f, size: int64(good)}
	if good < len(data) {
		err = f.Truncate(int64(good))
		if err == nil {
			err = f.Sync()
		}
	}
	if err == nil && good > 0 && data[good-1] != '\n' {
		// The last record was whole but lacked its newline (an edited
		// file): end it, so the next record starts its own line.
		err = s.writeLocked([]byte("\n"))
	}
	if err != nil {
		f.Close()
		return nil, Meta{}, nil, fmt.Errorf("history: repair %s: %w", path, err)
	}
	return s, meta, entries, nil
}

// decodeHistory parses a history file. good is the length of the prefix
// that holds valid records; anything after it is a torn last line.
func decodeHistory(data []byte) (meta Meta, entries []Entry, good int, err error) {
	entries = []Entry{}
	haveMeta := false
	// The last line is the one after which only white space follows;
	// finding it once keeps reading linear in the file's size.
	tail := len(bytes.TrimRightFunc(data, unicode.IsSpace))
	for off, lineNo := 0, 1; off < len(data); lineNo++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(data)
		}
		line := data[off:end]
		last := next >= tail
		if len(bytes.TrimSpace(line)) == 0 {
			off = next
			if !last {
				good = off
			}
			continue
		}
		rec, derr := decodeRecord(line)
		if derr == nil {
			switch {
			case !haveMeta && rec.Meta == nil:
				derr = errors.New("first record is not a meta record")
			case haveMeta && rec.Meta != nil:
				derr = errors.New("a second meta record")
			}
		}
		if derr != nil {
			if last {
				break // a torn append: drop it
			}
			return Meta{}, nil, 0, fmt.Errorf("line %d: %w", lineNo, derr)
		}
		if rec.Meta != nil {
			meta, haveMeta = *rec.Meta, true
		} else {
			entries = append(entries, *rec.Entry)
		}
		off = next
		good = off
	}
	if !haveMeta {
		return Meta{}, nil, 0, errors.New("no meta record")
	}
	return meta, entries, good, nil
}

// decodeRecord parses one line: a JSON object with exactly one of "meta"
// and "entry".
func decodeRecord(line []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		return record{}, err
	}
	if (rec.Meta == nil) == (rec.Entry == nil) {
		return record{}, errors.New(`record must have exactly one of "meta" and "entry"`)
	}
	return rec, nil
}

// encodeRecord is one line of a history file, newline included.
func encodeRecord(rec record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Append writes e as one line and fsyncs it. A failed write is cut back off
// the file, so a failure never leaves a torn line behind a later Append.
// If the line cannot be written, or an earlier write still waits (see
// Backlog), e is kept and written after it once the disk has room, and
// the error says why it is not written yet. Only an entry that cannot be
// encoded is refused and not kept.
func (s *Store) Append(e Entry) error {
	line, err := encodeRecord(record{Entry: &e})
	if err != nil {
		return fmt.Errorf("history: append to %s: %w", s.path, err)
	}
	if err := s.flush(line); err != nil {
		return fmt.Errorf("history: append to %s: %w", s.path, err)
	}
	return nil
}

// Flush writes what waits (see Backlog) now. It returns nil when nothing
// waits any more.
func (s *Store) Flush() error {
	if err := s.flush(nil); err != nil {
		return fmt.Errorf("history: write %s: %w", s.path, err)
	}
	return nil
}

// Backlog is what waits to be written; the zero Backlog when the file
// holds everything.
func (s *Store) Backlog() Backlog {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := Backlog{Entries: len(s.pending), Rewrite: s.rewrite != nil}
	if b.Behind() {
		b.Err = s.err
	}
	return b
}

// OnCaughtUp sets f to be called, outside the Store's lock, each time a
// Store that was behind has written everything that waited.
func (s *Store) OnCaughtUp(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCaught = f
}

// flush queues line (if any) behind what waits and writes it all.
func (s *Store) flush(line []byte) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if line != nil {
		s.pending = append(s.pending, line)
	}
	caught, err := s.flushLocked()
	s.mu.Unlock()
	if caught != nil {
		caught()
	}
	return err
}

// flushLocked writes the waiting rewrite, then the waiting lines one by
// one, in order, and stops at the first that fails: a later line is never
// written before an earlier one. While something still waits, a retry is
// armed. caught is the OnCaughtUp function to call, once the lock is
// released, when the Store was behind and is no more.
func (s *Store) flushLocked() (caught func(), err error) {
	if s.rewrite != nil {
		if err := s.replaceLocked(s.rewrite); err != nil && !errors.Is(err, ErrNotDurable) {
			return nil, s.failedLocked(err)
		}
		s.rewrite = nil
	}
	if len(s.pending) > 0 && s.f == nil {
		// A Rewrite could not open the file again after replacing it.
		f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
		if err != nil {
			return nil, s.failedLocked(err)
		}
		s.f = f
	}
	for len(s.pending) > 0 {
		if err := s.writeLocked(s.pending[0]); err != nil {
			return nil, s.failedLocked(err)
		}
		s.pending[0] = nil
		s.pending = s.pending[1:]
	}
	return s.caughtUpLocked(), nil
}

// caughtUpLocked clears the backlog's state once nothing waits, and
// returns the OnCaughtUp function to call if the Store was behind.
func (s *Store) caughtUpLocked() func() {
	behind := s.err != nil
	s.pending, s.rewrite, s.err = nil, nil, nil
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
	if behind {
		return s.onCaught
	}
	return nil
}

// failedLocked notes err as why the Store is behind, arms a retry, and
// returns err.
func (s *Store) failedLocked(err error) error {
	s.err = err
	if s.retry == nil {
		s.retry = time.AfterFunc(RetryInterval, s.retryFlush)
	}
	return err
}

// retryFlush is the timer's try; a failure arms the next.
func (s *Store) retryFlush() {
	s.mu.Lock()
	s.retry = nil
	if s.closed {
		s.mu.Unlock()
		return
	}
	caught, _ := s.flushLocked()
	s.mu.Unlock()
	if caught != nil {
		caught()
	}
}

// writeLocked writes b at the end of the valid records and fsyncs. A
// failed write is cut off again; if even that fails, the next write cuts
// what is left of it, so a shorter record never ends in its remains.
func (s *Store) writeLocked(b []byte) error {
	_, err := s.f.WriteAt(b, s.size)
	if err == nil && s.tail {
		err = s.f.Truncate(s.size + int64(len(b)))
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// Best effort: the write error is the one to report.
		s.tail = s.tail || s.f.Truncate(s.size) != nil
		return err
	}
	s.size += int64(len(b))
	s.tail = false
	return nil
}

// Rewrite replaces the file with meta and entries atomically: a temporary
// file is written and fsynced, renamed over the history file, and the
// folder fsynced. The new content replaces whatever waited to be written
// (see Backlog): entries holds them. If it fails, the old file is still
// there, whole, and the new content waits to be written in its place, as a
// failed Append does; except for an error that matches ErrNotDurable: the
// new file is in place then, and only the folder sync failed.
func (s *Store) Rewrite(meta Meta, entries []Entry) error {
	var buf bytes.Buffer
	line, err := encodeRecord(record{Meta: &meta})
	if err != nil {
		return fmt.Errorf("history: rewrite %s: %w", s.path, err)
	}
	buf.Write(line)
	for i := range entries {
		line, err := encodeRecord(record{Entry: &entries[i]})
		if err != nil {
			return fmt.Errorf("history: rewrite %s: entry %d: %w", s.path, i, err)
		}
		buf.Write(line)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var caught func()
	err = s.replaceLocked(buf.Bytes())
	if err != nil && !errors.Is(err, ErrNotDurable) {
		s.rewrite, s.pending = buf.Bytes(), nil
		s.failedLocked(err)
	} else {
		caught = s.caughtUpLocked()
	}
	s.mu.Unlock()
	if caught != nil {
		caught()
	}
	if err != nil {
		return fmt.Errorf("history: rewrite %s: %w", s.path, err)
	}
	return nil
}

// replaceLocked puts content in place of the file, atomically. The file is
// open again afterwards unless even that failed; the next write opens it.
func (s *Store) replaceLocked(content []byte) error {
	// Windows cannot rename over a file that is open: close it first.
	if s.f != nil {
		err := s.f.Close()
		s.f = nil
		if err != nil {
			return err
		}
	}
	werr := writeFileAtomic(s.path, content, 0o600, 0o700)
	if werr == nil || errors.Is(werr, ErrNotDurable) {
		// Renamed into place: the new content is the file now, and the
		// next Append goes after it, even if the folder sync failed.
		s.size, s.tail = int64(len(content)), false
	}
	if f, err := os.OpenFile(s.path, os.O_WRONLY, 0); err == nil {
		s.f = f
	}
	return werr
}

// Remove closes the store and deletes its file, with whatever waited to be
// written to it. A file that is already gone is not an error.
func (s *Store) Remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("history: remove %s: %w", s.path, err)
	}
	if err := notDurable(syncDir(s.dir)); err != nil {
		return fmt.Errorf("history: remove %s: %w", s.path, err)
	}
	return nil
}

// Close writes what waits to be written, if it can, and closes the file.
// Entries already appended are on disk; the error says how many could not
// be written. Closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var lost error
	if s.rewrite != nil || len(s.pending) > 0 {
		if _, err := s.flushLocked(); err != nil {
			lost = fmt.Errorf("history: close %s: %s could not be written: %w", s.path, s.backlogWords(), err)
		}
	}
	err := s.closeLocked()
	if lost != nil {
		return lost
	}
	if err != nil {
		return fmt.Errorf("history: close %s: %w", s.path, err)
	}
	return nil
}

// backlogWords says what waits to be written, for an error.
func (s *Store) backlogWords() string {
	n := len(s.pending)
	switch {
	case s.rewrite != nil && n > 0:
		return fmt.Sprintf("the history as rewritten and %d later entries", n)
	case s.rewrite != nil:
		return "the history as rewritten"
	case n == 1:
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// closeLocked closes the file, stops retrying and drops the backlog.
func (s *Store) closeLocked() error {
	s.closed = true
	s.pending, s.rewrite, s.err = nil, nil, nil
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Sessions lists the ids of the sessions that have a store in dir, sorted.
// A missing dir is an empty list.
func Sessions(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: list %s: %w", dir, err)
	}
	ids := []string{}
	seen := map[string]bool{}
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || !de.Type().IsRegular() {
			continue
		}
		id, ok := sessionFromFile(name, sessionFile)
		if !ok {
			id, ok = sessionFromFile(name, legacySessionFile)
		}
		if ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// storePath is the history file of session in dir.
func storePath(dir, session string) (string, error) {
	if session == "" {
		return "", errors.New("history: empty session id")
	}
	return filepath.Join(dir, sessionFile(session)+".jsonl"), nil
}

// sessionFile maps a session id to a file name (without .jsonl) that is
// safe on every OS and on case-insensitive file systems: bytes other than
// lower-case ASCII letters, digits, '-', '_' and a non-leading '.' become
// %XX (upper-case hex). Letters appear in a name only in lower case, or as
// hex digits right after '%', always upper case; so two names that differ
// only in case never both come out of it.
func sessionFile(id string) string { return encodeSessionFile(id, false) }

// legacySessionFile is the naming before case-insensitive file systems were
// considered: upper-case letters were kept as they are.
func legacySessionFile(id string) string { return encodeSessionFile(id, true) }

func encodeSessionFile(id string, keepUpper bool) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || keepUpper && 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// legacyStore returns the old-scheme file of session in dir, when its name
// differs from path's, it exists, and its meta record names this very
// session. The last check matters on a case-insensitive file system, where
// the old name of "A" opens the file of "a".
func legacyStore(dir, session, path string) (string, bool) {
	old := filepath.Join(dir, legacySessionFile(session)+".jsonl")
	if old == path {
		return "", false
	}
	if storeOwner(old) != session {
		return "", false
	}
	return old, true
}

// storeOwner is the session id in the meta record of the history file at
// path, or "" when there is no such file or record.
func storeOwner(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	rec, err := decodeRecord(line)
	if err != nil || rec.Meta == nil {
		return ""
	}
	return rec.Meta.SessionID
}

// sessionFromFile inverts encode (sessionFile or legacySessionFile); ok is
// false for a name encode would not have produced (a file that is not ours).
func sessionFromFile(name string, encode func(string) string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		c, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(c))
		i += 2
	}
	id := b.String()
	if id == "" || encode(id) != name {
		return "", false
	}
	return id, true
}
