package history

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/testdisk"
)

// bigEntry is an entry too large for what a full disk has left in the
// history file's last page.
func bigEntry(code string) Entry {
	return Entry{Code: code, Status: "ok", Outputs: []Output{{OutputType: "stream", Name: "stdout", Text: strings.Repeat("x", 64<<10)}}}
}

// readHistory is what the history file in dir holds now.
func readHistory(t *testing.T, dir, session string) []Entry {
	t.Helper()
	path, _ := storePath(dir, session)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, entries, _, err := decodeHistory(data)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// On a full disk, entries that could not be written are kept in order and
// written once there is room: by the retry timer, and by the next Append or
// Flush; a failed Rewrite waits too, and the Appends after it go after it.
// Before, a failed Append was simply lost: the file lacked the entry, and a
// later one that fitted was written after the hole.
func TestStoreFullDisk(t *testing.T) {
	dir, fill := testdisk.Small(t)
	interval := RetryInterval
	RetryInterval = 10 * time.Millisecond
	t.Cleanup(func() { RetryInterval = interval })

	meta := testMeta("s")
	s, err := Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	caught := make(chan struct{}, 10)
	s.OnCaughtUp(func() { caught <- struct{}{} })
	e1 := Entry{Code: "1", Status: "ok", Outputs: []Output{}}
	if err := s.Append(e1); err != nil {
		t.Fatal(err)
	}

	filler := fill()
	e2, e3 := bigEntry("2"), Entry{Code: "3", Status: "ok", Outputs: []Output{}}
	if err := s.Append(e2); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk = %v, want ENOSPC", err)
	}
	// e3 is small enough to fit where e2 did not; it must wait behind e2.
	if err := s.Append(e3); err == nil {
		t.Fatal("Append behind a waiting entry said it was written")
	}
	if b := s.Backlog(); b.Entries != 2 || b.Rewrite || !errors.Is(b.Err, syscall.ENOSPC) {
		t.Fatalf("backlog on a full disk: %+v, want 2 entries and ENOSPC", b)
	}
	sameEntries(t, readHistory(t, dir, "s"), []Entry{e1})

	// Room again: the retry timer writes both, in order.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case <-caught:
	case <-time.After(time.Minute):
		t.Fatalf("the store did not catch up within a minute; backlog %+v", s.Backlog())
	}
	if b := s.Backlog(); b.Behind() || b.Err != nil {
		t.Fatalf("backlog after catching up: %+v", b)
	}
	sameEntries(t, readHistory(t, dir, "s"), []Entry{e1, e2, e3})

	// A Rewrite that fails waits, and the Append after it waits behind it:
	// appended to the old file, it would bring the removed entry back.
	filler = fill()
	e4 := bigEntry("4")
	if err := s.Rewrite(meta, []Entry{e1, e3}); err == nil || errors.Is(err, ErrNotDurable) {
		t.Fatalf("Rewrite on a full disk = %v, want a failure", err)
	}
	if err := s.Append(e4); err == nil {
		t.Fatal("Append behind a waiting Rewrite said it was written")
	}
	if b := s.Backlog(); b.Entries != 1 || !b.Rewrite {
		t.Fatalf("backlog after a failed Rewrite and Append: %+v", b)
	}
	sameEntries(t, readHistory(t, dir, "s"), []Entry{e1, e2, e3})
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush with room again: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, _, got, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	sameEntries(t, got, []Entry{e1, e3, e4})
}

// Close writes what waits if it can, and says what was lost if it cannot.
func TestStoreCloseFullDisk(t *testing.T) {
	dir, fill := testdisk.Small(t)
	s, err := Create(dir, testMeta("s"))
	if err != nil {
		t.Fatal(err)
	}
	filler := fill()
	if err := s.Append(bigEntry("1")); err == nil {
		t.Fatal("Append on a full disk said it was written")
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "1 entry could not be written") {
		t.Fatalf("Close with an entry that cannot be written = %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if got := readHistory(t, dir, "s"); len(got) != 0 {
		t.Fatalf("%d entries on disk, want none", len(got))
	}
}
