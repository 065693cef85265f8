package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func testMeta(id string) Meta {
	return Meta{
		SessionID: id,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 987654321, time.FixedZone("CET", 3600)),
		Kernel:    "python3", Python: "/usr/bin/python3", Cwd: "/home/user",
	}
}

// sameEntries compares entries as JSON: times by instant (a reopened time
// has no monotonic reading), MIME values by content.
func sameEntries(t *testing.T, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, g, w)
		}
		if !got[i].Start.Equal(want[i].Start) || !got[i].End.Equal(want[i].End) {
			t.Errorf("entry %d: times %v–%v, want %v–%v", i, got[i].Start, got[i].End, want[i].Start, want[i].End)
		}
	}
}

func TestStoreRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	meta := testMeta("default")
	s, err := Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenEntries()
	// time.Now carries a monotonic reading and nanoseconds: both must
	// survive as the same instant.
	want[0].Start = time.Now()
	want[0].End = want[0].Start.Add(1234567 * time.Nanosecond)
	for _, e := range want {
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(want[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}

	s, gotMeta, got, err := Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !gotMeta.CreatedAt.Equal(meta.CreatedAt) || gotMeta.CreatedAt.Nanosecond() != 987654321 {
		t.Errorf("CreatedAt = %v, want %v", gotMeta.CreatedAt, meta.CreatedAt)
	}
	gotMeta.CreatedAt = meta.CreatedAt
	if gotMeta != meta {
		t.Errorf("meta = %+v, want %+v", gotMeta, meta)
	}
	sameEntries(t, got, want)
	if got[0].End.Sub(got[0].Start) != 1234567*time.Nanosecond {
		t.Errorf("nanoseconds lost: %v", got[0].End.Sub(got[0].Start))
	}

	if runtime.GOOS != "windows" {
		for path, mode := range map[string]fs.FileMode{dir: 0o700, filepath.Join(dir, "default.jsonl"): 0o600} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != mode {
				t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
			}
		}
	}
}

func TestStoreRewriteAndRemove(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, testMeta("a"))
	if err != nil {
		t.Fatal(err)
	}
	entries := goldenEntries()
	for _, e := range entries {
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	// Delete blocks 1..3 as delete_history would, then keep appending.
	kept := append(append([]Entry{}, entries[:1]...), entries[4:]...)
	meta2 := testMeta("a")
	meta2.Cwd = "/elsewhere"
	if err := s.Rewrite(meta2, kept); err != nil {
		t.Fatal(err)
	}
	extra := Entry{Code: "after rewrite", Status: "ok", Generation: 3, Outputs: []Output{}}
	if err := s.Append(extra); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, m, got, err := Open(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if m.Cwd != "/elsewhere" {
		t.Errorf("meta not rewritten: %+v", m)
	}
	sameEntries(t, got, append(kept, extra))
	if fi, err := os.Stat(filepath.Join(dir, "a.jsonl")); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("after Rewrite: %v, %v", fi.Mode(), err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// Clear: a rewrite with no entries.
	if err := s.Rewrite(m, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, got, err := Open(dir, "a"); err != nil || len(got) != 0 {
		t.Errorf("after clear: %d entries, %v", len(got), err)
	}

	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Open(dir, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Remove: %v, want ErrNotExist", err)
	}
	if err := s.Append(extra); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Remove: %v", err)
	}
	if err := s.Rewrite(m, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Rewrite after Remove: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Remove: %v", err)
	}
}

func TestStoreCreateTruncates(t *testing.T) {
	dir := t.TempDir()
	s, _ := Create(dir, testMeta("x"))
	s.Append(goldenEntries()[0])
	s.Close()
	s, err := Create(dir, testMeta("x"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, _, got, err := Open(dir, "x"); err != nil || len(got) != 0 {
		t.Errorf("after Create over an old store: %d entries, %v", len(got), err)
	}
}

func TestSessions(t *testing.T) {
	dir := t.TempDir()
	if ids, err := Sessions(filepath.Join(dir, "missing")); err != nil || ids == nil || len(ids) != 0 {
		t.Errorf("missing dir: %q, %v", ids, err)
	}
	names := []string{"default", "b", "with space/and slash", ".hidden", "ünï", "a.b-c_d"}
	for _, id := range names {
		s, err := Create(dir, testMeta(id))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// Files that are not ours are ignored.
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, "a b.jsonl"), nil, 0o600)
	os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o700)
	ids, err := Sessions(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".hidden", "a.b-c_d", "b", "default", "with space/and slash", "ünï"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("Sessions = %q, want %q", ids, want)
	}
	for _, id := range names {
		if _, m, _, err := Open(dir, id); err != nil || m.SessionID != id {
			t.Errorf("Open(%q): %+v, %v", id, m, err)
		}
	}
	if _, err := Create(dir, Meta{}); err == nil {
		t.Error("Create with an empty session id succeeded")
	}
}

// TestStoreTornLastLine is a crash in the middle of an Append: the partial
// line is dropped and cut off, and the store keeps working.
func TestStoreTornLastLine(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, testMeta("t"))
	if err != nil {
		t.Fatal(err)
	}
	entries := goldenEntries()[:3]
	for _, e := range entries {
		s.Append(e)
	}
	s.Close()
	path := filepath.Join(dir, "t.jsonl")
	whole, _ := os.ReadFile(path)
	for _, torn := range []string{
		`{"entry":{"code":"x = 1","outp`,          // cut mid-record
		`{"entry":{"code":"x = 1"}}` + "\x00\x00", // garbage after a record
		"\x00\x00\x00\x00",                        // zeroed blocks
		`{"entry":{"code":"x"}` + "\n",            // a complete but broken last line
	} {
		os.WriteFile(path, append(append([]byte{}, whole...), torn...), 0o600)
		s, _, got, err := Open(dir, "t")
		if err != nil {
			t.Fatalf("torn %q: %v", torn, err)
		}
		sameEntries(t, got, entries)
		after := Entry{Code: "after crash", Status: "ok", Generation: 1, Outputs: []Output{}}
		if err := s.Append(after); err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, _, got, err = Open(dir, "t")
		if err != nil {
			t.Fatalf("reopen after append: %v", err)
		}
		sameEntries(t, got, append(append([]Entry{}, entries...), after))
	}
}

func TestStoreLastLineWithoutNewline(t *testing.T) {
	dir := t.TempDir()
	s, _ := Create(dir, testMeta("n"))
	s.Append(Entry{Code: "1", Outputs: []Output{}})
	s.Close()
	path := filepath.Join(dir, "n.jsonl")
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.TrimSuffix(data, []byte("\n")), 0o600)
	s, _, got, err := Open(dir, "n")
	if err != nil || len(got) != 1 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	s.Append(Entry{Code: "2", Outputs: []Output{}})
	s.Close()
	if _, _, got, err := Open(dir, "n"); err != nil || len(got) != 2 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
}

func TestStoreCorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	s, _ := Create(dir, testMeta("c"))
	for _, e := range goldenEntries()[:3] {
		s.Append(e)
	}
	s.Close()
	path := filepath.Join(dir, "c.jsonl")
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = lines[2][:20] + "\n" // line 3: the second entry
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	_, _, _, err := Open(dir, "c")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Open of a corrupt line 3: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, []byte(strings.Join(lines, ""))) {
		t.Error("Open changed a file it refused")
	}
	for name, content := range map[string]string{
		"no meta":     `{"entry":{"code":"x"}}` + "\n" + `{"entry":{"code":"y"}}` + "\n",
		"second meta": `{"meta":{"session_id":"c"}}` + "\n" + `{"meta":{"session_id":"c"}}` + "\n" + `{"entry":{"code":"y"}}` + "\n",
		"both":        `{"meta":{"session_id":"c"}}` + "\n" + `{"meta":{},"entry":{}}` + "\n" + `{"entry":{"code":"y"}}` + "\n",
		"empty":       "",
	} {
		os.WriteFile(path, []byte(content), 0o600)
		if _, _, _, err := Open(dir, "c"); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

func TestStoreConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, testMeta("p"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if err := s.Append(Entry{Code: strings.Repeat("x", 1000), Outputs: []Output{}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s.Close()
	if _, _, got, err := Open(dir, "p"); err != nil || len(got) != 40 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.py")
	if err := WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Errorf("content %q", b)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	// A folder where the file should be: the error names the path.
	bad := filepath.Dir(path)
	if err := WriteFile(bad, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteFile over a folder: %v", err)
	}
}
