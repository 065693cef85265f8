package engine

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/testdisk"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

func codesOf(entries []history.Entry) []string {
	codes := make([]string, len(entries))
	for i, e := range entries {
		codes[i] = e.Code
	}
	return codes
}

// With the state folder on a full disk, a block that cannot be written to
// the history file says so in its result and in the session's status, is
// kept in memory with the blocks after it, and is written, in order, once
// the disk has room; a delete_history the disk refused is written then
// too. After a server restart the history is the one the session had.
// Before, the failed append was only logged: the run was a plain success,
// and a restart lost the block (and kept the next one that fitted).
func TestHistoryOnFullDisk(t *testing.T) {
	ipytest.Require(t)
	state, fill := testdisk.Small(t)
	cfg := Config{PoolSize: 0, StateDir: state, WorkDir: t.TempDir()}
	e := newTestEngine(t, cfg)
	ss, err := e.LookupOrCreate("full")
	if err != nil {
		t.Fatal(err)
	}
	if b := runCode(t, e, ss, "x = 1"); b.Status != "ok" || b.HistoryUnsaved != nil {
		t.Fatalf("x = 1 with room on disk: status %s, unsaved %+v", b.Status, b.HistoryUnsaved)
	}

	filler := fill()
	big := "print('y' * 100_000)"
	b := runCode(t, e, ss, big)
	if b.Status != "ok" {
		t.Fatalf("%s: %s", big, b.Status)
	}
	if u := b.HistoryUnsaved; u == nil || u.Blocks != 1 || u.Rewrite || !strings.Contains(u.Error, "no space left") {
		t.Fatalf("a block the full disk refused: unsaved %+v, want 1 block and ENOSPC", u)
	}
	if !strings.Contains(b.Note, "the history on disk is behind by 1 block(s)") || !strings.Contains(b.Note, "written once the disk has room") {
		t.Fatalf("the note of a block the full disk refused: %q", b.Note)
	}
	// A small block would fit; it waits behind the one that did not.
	if b := runCode(t, e, ss, "z = 3"); b.HistoryUnsaved == nil || b.HistoryUnsaved.Blocks != 2 {
		t.Fatalf("the block after a refused one: unsaved %+v, want 2 blocks", b.HistoryUnsaved)
	}
	if u := ss.Describe().HistoryUnsaved; u == nil || u.Blocks != 2 {
		t.Fatalf("session status on a full disk: unsaved %+v, want 2 blocks", u)
	}
	// A delete the disk has no room to write is kept too, in place of the
	// blocks that waited (the rewrite holds them).
	zero := 0
	if _, _, err := ss.DeleteHistory(&zero, nil); err != nil {
		t.Fatalf("delete_history on a full disk: %v", err)
	}
	if u := ss.Describe().HistoryUnsaved; u == nil || !u.Rewrite || u.Blocks != 0 {
		t.Fatalf("session status after a delete on a full disk: unsaved %+v, want a rewrite", u)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if b := runCode(t, e, ss, "w = 4"); b.HistoryUnsaved != nil || strings.Contains(b.Note, "behind") {
		t.Fatalf("a block with room on disk again: unsaved %+v, note %q", b.HistoryUnsaved, b.Note)
	}
	if u := ss.Describe().HistoryUnsaved; u != nil {
		t.Fatalf("session status once the disk has room: unsaved %+v", u)
	}
	want := []string{big, "z = 3", "w = 4"}
	if got := codesOf(ss.History()); !slices.Equal(got, want) {
		t.Fatalf("history in memory: %q, want %q", got, want)
	}

	// A restarted server reads the same history from disk.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newTestEngine(t, cfg)
	ss2, err := e2.Lookup("full")
	if err != nil {
		t.Fatal(err)
	}
	if got := codesOf(ss2.History()); !slices.Equal(got, want) {
		t.Fatalf("history after a restart: %q, want %q", got, want)
	}
}
