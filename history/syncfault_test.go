package history

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failFolderSync makes every folder fsync fail, as a disk that reports EIO
// would, until the test ends. Tests that call it must not run in parallel.
func failFolderSync(t *testing.T) {
	t.Helper()
	injected := errors.New("input/output error (injected)")
	syncDir = func(string) error { return injected }
	syncDirIn = func(*os.Root, string) error { return injected }
	t.Cleanup(func() { syncDir, syncDirIn = fsyncDir, fsyncDirIn })
}

// TestRewriteFolderSyncFails: a Rewrite whose rename went through but whose
// folder fsync failed has still replaced the file. It says so (the content
// is in place, only its durability is unconfirmed), and later Appends go
// right after the new content: the file opens again with every entry and
// no hole of NUL bytes.
func TestRewriteFolderSyncFails(t *testing.T) {
	dir := t.TempDir()
	meta := testMeta("s")
	s, err := Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries := goldenEntries()
	for _, e := range entries {
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}

	failFolderSync(t)
	kept := entries[:1]
	err = s.Rewrite(meta, kept)
	if !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Rewrite with a failed folder sync = %v, want ErrNotDurable", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "in place") || strings.Contains(msg, "could not be rewritten") {
		t.Errorf("error %q should say the new content is in place", msg)
	}
	t.Logf("Rewrite said: %v", err)
	syncDir = fsyncDir

	more := entries[len(entries)-1]
	if err := s.Append(more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sessionFile("s")+".jsonl")
	if b, err := os.ReadFile(path); err != nil || bytes.IndexByte(b, 0) >= 0 {
		t.Errorf("history file holds NUL bytes (read error %v):\n%q", err, b)
	}
	_, _, got, err := Open(dir, "s")
	if err != nil {
		t.Fatalf("reopening after the Append: %v", err)
	}
	sameEntries(t, got, append(append([]Entry(nil), kept...), more))
}

// TestCreateFolderSyncFails: a Create that fails leaves no file behind,
// which a restart would otherwise bring back as the history of a session
// that never started.
func TestCreateFolderSyncFails(t *testing.T) {
	dir := t.TempDir()
	failFolderSync(t)
	if s, err := Create(dir, testMeta("s")); err == nil {
		s.Close()
		t.Fatal("Create with a failed folder sync succeeded")
	}
	ids, err := Sessions(dir)
	if err != nil || len(ids) != 0 {
		t.Errorf("after a failed Create, Sessions = %v, %v; want none", ids, err)
	}
}

// TestRemoveFolderSyncFails: a Remove whose file is gone but whose folder
// fsync failed says which file, and that it is gone.
func TestRemoveFolderSyncFails(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, testMeta("s"))
	if err != nil {
		t.Fatal(err)
	}
	failFolderSync(t)
	err = s.Remove()
	if !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "remove") {
		t.Errorf("Remove with a failed folder sync = %v, want an ErrNotDurable naming the removal", err)
	}
}

// TestWriteFileFolderSyncFails: WriteFile's file is in place after a failed
// folder sync, and its error says so.
func TestWriteFileFolderSyncFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	failFolderSync(t)
	err := WriteFile(path, []byte("new"), 0o666)
	if !errors.Is(err, ErrNotDurable) {
		t.Errorf("WriteFile with a failed folder sync = %v, want ErrNotDurable", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q, want new", b)
	}
}
