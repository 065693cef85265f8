// Package tasks keeps the records of MCP tasks: a tool call that the server
// turned into a task, its unguessable id, the run it follows, when it was
// made and when it expires, and how it ended; and, in a Manager, its
// lifecycle bound to the engine run it follows (status, end, cancel). It
// knows nothing of MCP's wire forms: the adapter (mcpserver) renders a task
// for the protocol the client speaks.
//
//	st, err := tasks.Open(dir, time.Hour, nil)
//	m := tasks.NewManager(st, eng, resultJSON, notify)
//	rec, err := m.Create(tasks.Record{Session: "fit", Run: "r2", Tool: "run_code"})
//	// rec.ID goes to the client only now: the record is on disk.
//	m.Watch(rec.ID, run) // records the run's end, tells notify of changes
//	v, err := m.Task(rec.ID)
//
// Records live in one JSON file each, written and fsynced before Create
// returns, so a task handed out survives a restart of the server. A record
// whose run was still going when the server stopped is ended by Open as
// failed, saying so. One store serves one user: with several users (the
// --tokens-file mode) each has a store in their own state folder, so a task
// id from one user is unknown to another.
package tasks

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Status is a task's status, in the words both MCP task designs use.
type Status string

const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether a task in status s is over.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Record is what the store keeps of a task. Live fields (Status while the
// run goes on) are the Manager's to compute from the run; the store keeps
// the terminal ones.
type Record struct {
	ID string `json:"id"`
	// Session and Run name the run the task follows.
	Session string `json:"session,omitempty"`
	Run     string `json:"run,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Protocol is the MCP protocol version of the call that made the task
	// (its wire form differs between 2025-11-25 and 2026-07-28).
	Protocol string    `json:"protocol,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	// TTL is how long the task is kept after it was created (and, for a
	// run that outlasts it, after the run ended).
	TTL time.Duration `json:"ttl,omitempty"`
	// Status is set once the task is over; "" while its run goes on.
	Status Status `json:"status,omitempty"`
	// Result is the final result (a CallToolResult as JSON) of a completed
	// task; Error the JSON-RPC error of a failed one.
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	Message string          `json:"message,omitempty"`
	Ended   time.Time       `json:"ended,omitzero"`
	// CancelRequested is set by tasks/cancel: the run was interrupted, and
	// the task ends cancelled when it stops.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Expired marks a task forgotten after its TTL: only its id is kept,
	// so that asking for it says it expired rather than that it never was.
	Expired bool `json:"expired,omitempty"`
}

// ExpiresAt is when the record is forgotten: TTL after it was created, or
// after it ended if that came later; the zero time while it goes on.
func (r Record) ExpiresAt() time.Time {
	if !r.Status.Terminal() {
		return time.Time{}
	}
	at := r.Created.Add(r.TTL)
	if r.Ended.After(at) {
		// A run that outlasted the TTL is kept a TTL past its end, so a
		// client polling at its interval can still read the result.
		at = r.Ended.Add(r.TTL)
	}
	return at
}

// Errors of Get, Finish and Cancel. The adapter maps both to the JSON-RPC
// error MCP asks for (-32602) with these words.
var (
	ErrNotFound = errors.New("task not found")
	ErrExpired  = errors.New("task has expired")
)

// Store is one user's tasks. Its methods are safe for concurrent use.
type Store struct {
	dir string // "" keeps records in memory only
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	recs map[string]*Record
	// swept is when sweepLocked last ran.
	swept time.Time
}

const (
	// sweepEvery is how often Create sweeps expired records at most.
	sweepEvery = time.Minute
	// tombstoneKeep is how long at least an expired task's id is kept.
	tombstoneKeep = 24 * time.Hour
)

// RestartMessage is the message of a task whose run the server's stop cut
// short. A server that stops in order records what the run printed in the
// session's history; one that crashed could not.
const RestartMessage = "the server restarted while this task's run %s in session %q was going; the run was cut short, and what it printed is in the session's history (get_history) unless the server crashed"

// Open loads the records in dir (made if missing; "" keeps them in memory
// only). ttl is the time-to-live of new tasks. now is the clock (nil:
// time.Now); tests pass their own to expire tasks without waiting.
// Records of runs that were going when the server stopped end as failed.
func Open(dir string, ttl time.Duration, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{dir: dir, ttl: ttl, now: now, recs: map[string]*Record{}}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tasks: %v", err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tasks: %v", err)
	}
	for _, e := range names {
		if strings.HasPrefix(e.Name(), ".task-") {
			os.Remove(filepath.Join(dir, e.Name())) // a write cut short
			continue
		}
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validID.MatchString(id) {
			continue // not ours
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) != nil || r.ID != id {
			continue
		}
		if !r.Status.Terminal() && !r.Expired {
			// Its run died with the server's previous process.
			r.Status = Failed
			if r.CancelRequested {
				r.Status = Cancelled
			}
			r.Message = fmt.Sprintf(RestartMessage, r.Run, r.Session)
			r.Error, _ = json.Marshal(map[string]any{"code": -32603, "message": r.Message})
			r.Ended, r.Updated = now(), now()
			if err := s.write(&r); err != nil {
				return nil, err
			}
		}
		s.recs[id] = &r
	}
	s.sweepLocked()
	return s, nil
}

// validID is the form of the ids Create makes: 128 random bits in hex.
var validID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// TTL is the time-to-live of new tasks.
func (s *Store) TTL() time.Duration { return s.ttl }

// TTLOf is rec's time-to-live from its creation as it stands: its TTL, or
// more for a run that outlasted it (it is kept a TTL past its end).
func (s *Store) TTLOf(rec Record) time.Duration {
	if at := rec.ExpiresAt(); !at.IsZero() {
		return at.Sub(rec.Created)
	}
	return max(rec.TTL, s.Now().Sub(rec.Created).Truncate(time.Second)+rec.TTL)
}

// Create gives rec a new id and its times, and writes it (fsynced) before
// returning: once the caller has the id, Get finds it, across a restart too.
func (s *Store) Create(rec Record) (Record, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Record{}, fmt.Errorf("tasks: %v", err)
	}
	rec.ID = hex.EncodeToString(b[:])
	rec.Created = s.now().UTC()
	rec.Updated = rec.Created
	rec.TTL = s.ttl
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec.Created.Sub(s.swept) >= sweepEvery {
		s.sweepLocked()
	}
	if err := s.write(&rec); err != nil {
		return Record{}, err
	}
	r := rec
	s.recs[rec.ID] = &r
	return rec, nil
}

// Get returns the record of id: ErrNotFound when there is none (an id of
// another user's included), ErrExpired when it outlived its TTL and was
// forgotten (this call may be the one that forgets it).
func (s *Store) Get(id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getLocked(id)
	if err != nil {
		return Record{}, err
	}
	return *r, nil
}

func (s *Store) getLocked(id string) (*Record, error) {
	r := s.recs[id]
	if r == nil {
		return nil, ErrNotFound
	}
	if r.Expired {
		return nil, ErrExpired
	}
	if at := r.ExpiresAt(); !at.IsZero() && !s.now().Before(at) {
		s.forgetLocked(r)
		return nil, ErrExpired
	}
	return r, nil
}

// forgetLocked drops everything of r but its id.
func (s *Store) forgetLocked(r *Record) {
	*r = Record{ID: r.ID, Created: r.Created, Expired: true, Updated: s.now().UTC()}
	s.write(r) // best effort: a failed write only forgets it again after a restart
}

// sweepLocked forgets every record past its expiry, whether or not anyone
// asks for it again (its result leaves the disk), and drops the ids of
// records forgotten tombstoneKeep (or a TTL, if longer) ago: an expired
// task says so for that long, then it is unknown. Open and Create (at most once per sweepEvery) call
// it, so the store needs no goroutine of its own.
func (s *Store) sweepLocked() {
	now := s.now()
	s.swept = now
	for id, r := range s.recs {
		if !r.Expired {
			s.getLocked(id) // forgets r if it is past its expiry
			continue
		}
		if !now.Before(r.Updated.Add(max(s.ttl, tombstoneKeep))) {
			if s.dir != "" {
				if err := os.Remove(filepath.Join(s.dir, id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
					continue // kept, and tried again at the next sweep
				}
			}
			delete(s.recs, id)
		}
	}
}

// List returns the live records (not expired), oldest first.
func (s *Store) List() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for id := range s.recs {
		if r, err := s.getLocked(id); err == nil {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Finish records how the task ended, once: later calls keep the first end.
// result is the final result (completed), errJSON the JSON-RPC error
// (failed); message says why, for any status.
func (s *Store) Finish(id string, status Status, result, errJSON json.RawMessage, message string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getLocked(id)
	if err != nil {
		return Record{}, err
	}
	if r.Status.Terminal() {
		return *r, nil
	}
	old := *r
	r.Status, r.Result, r.Error, r.Message = status, result, errJSON, message
	r.Ended = s.now().UTC()
	r.Updated = r.Ended
	if err := s.write(r); err != nil {
		*r = old
		return Record{}, err
	}
	return *r, nil
}

// RequestCancel marks the task as cancelled by its client. It reports
// false when the task is already over.
func (s *Store) RequestCancel(id string) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getLocked(id)
	if err != nil {
		return Record{}, false, err
	}
	if r.Status.Terminal() {
		return *r, false, nil
	}
	r.CancelRequested = true
	r.Updated = s.now().UTC()
	return *r, true, s.write(r)
}

// Touch moves a live task's last-updated time to now (its run changed).
func (s *Store) Touch(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[id]; r != nil && !r.Expired && !r.Status.Terminal() {
		r.Updated = s.now().UTC()
	}
}

// write stores r in its file: a temporary file, fsynced, renamed over the
// old one, and the folder fsynced. Call with s.mu held (or before s is
// shared).
func (s *Store) write(r *Record) error {
	if s.dir == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("tasks: %v", err)
	}
	f, err := os.CreateTemp(s.dir, ".task-*")
	if err != nil {
		return fmt.Errorf("tasks: %v", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, r.ID+".json"))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("tasks: writing task %s: %v", r.ID, err)
	}
	return syncDir(s.dir)
}
