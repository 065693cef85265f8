package engine

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// Run ids (r1, r2, ...) count up per session, and a restored session goes
// on from the highest run its history names. A run the history never got
// (the server crashed while it was queued or running) would have its id
// given again, and a client still holding it (a hand-off, a task) would
// read another run. So run numbers are reserved in blocks in the state
// folder before they are given out: a restart goes on past the
// reservation, and a clean stop settles it to the exact numbers, so that
// ids stay consecutive unless the server crashed.

// runIDsFile holds, per session, the highest run number reserved.
const runIDsFile = "run-ids.json"

// runIDBlock is how many run numbers one write of runIDsFile reserves.
const runIDBlock = 64

type runIDs struct {
	path string // "" keeps nothing (no state folder)
	mu   sync.Mutex
	max  map[string]int // session → highest number reserved
	// failing is set while writes fail, so that a full disk is reported
	// once, not at every run.
	failing bool
}

// loadRunIDs reads the reservations in stateDir ("": none).
func loadRunIDs(stateDir string) *runIDs {
	ids := &runIDs{max: map[string]int{}}
	if stateDir == "" {
		return ids
	}
	ids.path = filepath.Join(stateDir, runIDsFile)
	if b, err := os.ReadFile(ids.path); err == nil {
		json.Unmarshal(b, &ids.max) // unreadable: start from the histories alone
	}
	return ids
}

// reserved is the highest run number reserved for session.
func (ids *runIDs) reserved(session string) int {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	return ids.max[session]
}

// take makes sure run number n of session is reserved on disk before it is
// given out. The first of a series of failed writes is returned (the
// caller logs it): ids may then repeat after a crash, which is all the
// reservation protects.
func (ids *runIDs) take(session string, n int) error {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.path == "" || n <= ids.max[session] {
		return nil
	}
	old := ids.max[session]
	ids.max[session] = n + runIDBlock - 1
	if err := ids.writeLocked(); err != nil {
		ids.max[session] = old
		if ids.failing {
			return nil
		}
		ids.failing = true
		return err
	}
	ids.failing = false
	return nil
}

// settle records the exact run numbers of a clean stop, for the sessions
// that remain (a deleted session's ids go with it).
func (ids *runIDs) settle(exact map[string]int) error {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.path == "" {
		return nil
	}
	ids.max = exact
	if len(exact) == 0 {
		if err := os.Remove(ids.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return ids.writeLocked()
}

func (ids *runIDs) writeLocked() error {
	b, err := json.Marshal(ids.max)
	if err != nil {
		return err
	}
	return history.WriteFile(ids.path, b, 0o600)
}

// settleRunIDs records, at a clean stop, each remaining session's last run
// number: the next server goes on from it without a gap.
func (s *Engine) settleRunIDs() {
	exact := map[string]int{}
	for _, ss := range s.Sessions() {
		ss.mu.Lock()
		if ss.runSeq > 0 {
			exact[ss.id] = ss.runSeq
		}
		ss.mu.Unlock()
	}
	if err := s.runIDs.settle(exact); err != nil {
		s.cfg.Logger.Warn("cannot record the last run ids in the state folder; the next server's run ids skip ahead", "error", err)
	}
}
