package history

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// createWith makes a store for id in dir holding one entry whose code is
// id, so a test can tell whose history a file holds.
func createWith(t *testing.T, dir, id string) {
	t.Helper()
	s, err := Create(dir, testMeta(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(Entry{Code: id, Outputs: []Output{}, Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// wantHistory checks that Open(dir, id) finds id's own one entry.
func wantHistory(t *testing.T, dir, id string) {
	t.Helper()
	s, m, entries, err := Open(dir, id)
	if err != nil {
		t.Errorf("Open(%q): %v", id, err)
		return
	}
	s.Close()
	if m.SessionID != id || len(entries) != 1 || entries[0].Code != id {
		t.Errorf("Open(%q): meta %q, entries %+v; want its own one entry", id, m.SessionID, entries)
	}
}

// TestSessionFilesDifferBeyondCase: ids that differ only in case get file
// names that differ beyond case, so on a case-insensitive file system
// (macOS, Windows) one session's Create cannot truncate the other's file.
func TestSessionFilesDifferBeyondCase(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"A", "a", "Ab", "aB", "AB", "ab", "%41", "x.Y", "x.y"}
	for _, id := range ids {
		createWith(t, dir, id)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range des {
		for _, b := range des[i+1:] {
			if strings.EqualFold(a.Name(), b.Name()) {
				t.Errorf("%q and %q are one file on a case-insensitive file system", a.Name(), b.Name())
			}
		}
	}
	for _, id := range ids {
		wantHistory(t, dir, id)
	}
}

// TestLegacyStoreFileIsFound: a history written under the old naming (upper
// case kept) is listed, opened, and renamed to the new name; Create of the
// same session replaces it rather than leaving it to come back.
func TestLegacyStoreFileIsFound(t *testing.T) {
	dir := t.TempDir()
	createWith(t, dir, "Data")
	createWith(t, dir, "Other")
	for _, id := range []string{"Data", "Other"} {
		if err := os.Rename(filepath.Join(dir, sessionFile(id)+".jsonl"), filepath.Join(dir, id+".jsonl")); err != nil {
			t.Fatal(err)
		}
	}
	if ids, err := Sessions(dir); err != nil || !reflect.DeepEqual(ids, []string{"Data", "Other"}) {
		t.Fatalf("Sessions with old names: %q, %v", ids, err)
	}
	wantHistory(t, dir, "Data")
	if _, err := os.Stat(filepath.Join(dir, "Data.jsonl")); !os.IsNotExist(err) {
		t.Errorf("old file Data.jsonl still there after Open: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "%44ata.jsonl")); err != nil {
		t.Errorf("Open did not move the history to its new name: %v", err)
	}
	wantHistory(t, dir, "Data") // and finds it there again

	s, err := Create(dir, testMeta("Other"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "Other.jsonl")); !os.IsNotExist(err) {
		t.Errorf("old file Other.jsonl survives a Create of its session: %v", err)
	}
	if ids, err := Sessions(dir); err != nil || !reflect.DeepEqual(ids, []string{"Data", "Other"}) {
		t.Errorf("Sessions after the moves: %q, %v", ids, err)
	}
}

// TestCreateSparesAnotherSessionsFile plays a case-insensitive file system
// by hand: the file under "a"'s name holds session "A" (its old-scheme
// "A.jsonl", as such a system would show it). Creating "a" must not
// truncate it, and opening "a" must not hand A's history to "a".
func TestCreateSparesAnotherSessionsFile(t *testing.T) {
	dir := t.TempDir()
	createWith(t, dir, "A")
	if err := os.Rename(filepath.Join(dir, sessionFile("A")+".jsonl"), filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Open(dir, "a"); err == nil || !strings.Contains(err.Error(), `holds session "A"`) {
		t.Errorf("Open(a) of A's file: %v, want an error naming A", err)
	}
	createWith(t, dir, "a")
	wantHistory(t, dir, "a")
	wantHistory(t, dir, "A")
}
