package history

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to Open as a history file. It must never
// panic, and whatever opens must survive a Rewrite and reopen to the same
// entries.
func FuzzOpen(f *testing.F) {
	var golden bytes.Buffer
	line, _ := encodeRecord(record{Meta: &Meta{SessionID: "f"}})
	golden.Write(line)
	for _, e := range goldenEntries() {
		line, _ := encodeRecord(record{Entry: &e})
		golden.Write(line)
	}
	f.Add(golden.Bytes())
	f.Add(golden.Bytes()[:golden.Len()-40])
	f.Add([]byte(`{"meta":{"session_id":"f"}}` + "\n" + `{"entry":{"code":"x","outputs":null,"start":"2025-01-01T00:00:00+01:00"}}`))
	f.Add([]byte(`{"meta":{}}` + "\n\n  \n" + `{"entry":{"outputs":[{"output_type":"stream","data":{"a":{ "b" : [1, 2 ] }}}]}}` + "\n\x00"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, meta, entries, err := Open(dir, "f")
		if err != nil {
			return
		}
		defer s.Close()
		if err := s.Rewrite(meta, entries); err != nil {
			t.Fatalf("Rewrite of what Open returned: %v", err)
		}
		_, meta2, entries2, err := Open(dir, "f")
		if err != nil {
			t.Fatalf("reopen after Rewrite: %v", err)
		}
		m1, _ := json.Marshal(meta)
		m2, _ := json.Marshal(meta2)
		e1, _ := json.Marshal(entries)
		e2, _ := json.Marshal(entries2)
		if !bytes.Equal(m1, m2) || !bytes.Equal(e1, e2) {
			t.Fatalf("reopened differently:\n%s\n%s\nvs\n%s\n%s", m1, e1, m2, e2)
		}
	})
}
