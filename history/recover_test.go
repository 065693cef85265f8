package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A history file with a corrupt line in the middle keeps every other
// record: the file as it was is set aside, never written over, and the
// store goes on appending after the records kept.
func TestRecoverKeepsWhatCanBeRead(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, testMeta("c"))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"a = 1", "b = 2", "c = 3"} {
		s.Append(Entry{Code: code, Outputs: []Output{}})
	}
	s.Close()
	path := filepath.Join(dir, "c.jsonl")
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = lines[2][:20] + "\n" // line 3: the entry "b = 2"
	corrupt := strings.Join(lines, "")
	os.WriteFile(path, []byte(corrupt), 0o600)

	_, _, _, err = Open(dir, "c")
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Open: %v, want a *CorruptError for line 3 of %s", err, path)
	}
	var asides []string
	for range 2 {
		st, meta, entries, rec, err := Recover(dir, "c")
		if err != nil {
			t.Fatal(err)
		}
		if meta.SessionID != "c" || rec.MetaLost || len(rec.Skipped) != 1 || rec.Skipped[0] != 3 {
			t.Fatalf("Recover: meta %+v, recovery %+v", meta, rec)
		}
		if len(entries) != 2 || entries[0].Code != "a = 1" || entries[1].Code != "c = 3" {
			t.Fatalf("Recover kept %+v", entries)
		}
		if b, err := os.ReadFile(rec.SetAside); err != nil || string(b) != corrupt {
			t.Fatalf("the copy set aside at %s: %v %q", rec.SetAside, err, b)
		}
		if filepath.Dir(rec.SetAside) != dir || !strings.HasPrefix(filepath.Base(rec.SetAside), "c.jsonl.corrupt-") {
			t.Fatalf("copy named %s", rec.SetAside)
		}
		asides = append(asides, rec.SetAside)
		if err := st.Append(Entry{Code: "d = 4", Outputs: []Output{}}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		_, _, got, err := Open(dir, "c")
		if err != nil || len(got) != 3 || got[2].Code != "d = 4" {
			t.Fatalf("Open after Recover: %d entries, %v", len(got), err)
		}
		os.WriteFile(path, []byte(corrupt), 0o600) // corrupt it again
	}
	// Two recoveries in the same second keep two copies.
	if asides[0] == asides[1] {
		t.Fatalf("the second copy was written over the first: %v", asides)
	}
	if ids, _ := Sessions(dir); len(ids) != 1 || ids[0] != "c" {
		t.Fatalf("Sessions lists %v; the copies are not histories", ids)
	}
}

// A file whose meta record cannot be read keeps its entries; a file of
// another session is left alone.
func TestRecoverWithoutMeta(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	os.WriteFile(path, []byte("{not json\n"+`{"entry":{"code":"x","outputs":[]}}`+"\n"), 0o600)
	st, meta, entries, rec, err := Recover(dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if !rec.MetaLost || meta.SessionID != "c" || len(entries) != 1 || entries[0].Code != "x" {
		t.Fatalf("meta %+v, entries %+v, recovery %+v", meta, entries, rec)
	}
	if _, m, got, err := Open(dir, "c"); err != nil || m.SessionID != "c" || len(got) != 1 {
		t.Fatalf("Open after Recover: %v %+v", err, m)
	}

	other := `{"meta":{"session_id":"d"}}` + "\n" + "garbage\n" + `{"entry":{"code":"y"}}` + "\n"
	os.WriteFile(path, []byte(other), 0o600)
	if _, _, _, _, err := Recover(dir, "c"); err == nil || !strings.Contains(err.Error(), `holds session "d"`) {
		t.Fatalf("Recover of another session's file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != other {
		t.Error("Recover changed another session's file")
	}
}
