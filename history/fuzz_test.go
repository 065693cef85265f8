package history

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the history file reader. It must never
// panic, and whatever it reads must write back and read again the same.
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
	// The reader is fuzzed in memory: Open adds only file I/O (and an fsync
	// per call, which would hold the fuzzer to a few inputs a second); the
	// store tests cover that part.
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, entries, _, err := decodeHistory(data)
		if err != nil {
			return
		}
		var again bytes.Buffer
		line, err := encodeRecord(record{Meta: &meta})
		if err != nil {
			t.Fatalf("encoding the meta that was read: %v", err)
		}
		again.Write(line)
		for _, e := range entries {
			line, err := encodeRecord(record{Entry: &e})
			if err != nil {
				t.Fatalf("encoding an entry that was read: %v", err)
			}
			again.Write(line)
		}
		meta2, entries2, _, err := decodeHistory(again.Bytes())
		if err != nil {
			t.Fatalf("re-reading what was read: %v", err)
		}
		m1, _ := json.Marshal(meta)
		m2, _ := json.Marshal(meta2)
		e1, _ := json.Marshal(entries)
		e2, _ := json.Marshal(entries2)
		if !bytes.Equal(m1, m2) || !bytes.Equal(e1, e2) {
			t.Fatalf("read back differently:\n%s\n%s\nvs\n%s\n%s", m1, e1, m2, e2)
		}
	})
}
