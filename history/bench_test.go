package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkAppend measures one Append, fsync included, on the test's
// temporary folder; ms/median is the median of the per-op durations, which
// a slow outlier fsync does not move.
func BenchmarkAppend(b *testing.B) {
	s, err := Create(b.TempDir(), Meta{SessionID: "bench", CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := typicalEntry(1)
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := s.Append(e); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2])/float64(time.Millisecond), "ms/median")
}

// BenchmarkTranscript10000 renders a long session: 10,000 short blocks
// with a line or two of output each.
func BenchmarkTranscript10000(b *testing.B) {
	entries := make([]Entry, 10000)
	for i := range entries {
		entries[i] = typicalEntry(i + 1)
		if i >= 5000 {
			entries[i].Generation = 2
		}
	}
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		n = len(Transcript(entries, 1))
	}
	b.SetBytes(int64(n))
}

func typicalEntry(i int) Entry {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Second)
	return Entry{
		Code: fmt.Sprintf("x%d = compute(%d)\nprint(x%d)\nx%d * 2", i, i, i, i),
		Outputs: []Output{
			{OutputType: "stream", Name: "stdout", Text: fmt.Sprintf("result %d\n", i)},
			{OutputType: "execute_result", ExecutionCount: i, Data: map[string]json.RawMessage{"text/plain": jsonString(fmt.Sprint(i * 2))}},
		},
		Status: "ok", ExecutionCount: i, Start: t0, End: t0.Add(3 * time.Millisecond), Generation: 1,
	}
}

// BenchmarkDecodeHistory10000 reads a 10,000-entry history file, as a
// server restart does. Reading must stay linear in the file's size.
func BenchmarkDecodeHistory10000(b *testing.B) {
	var buf bytes.Buffer
	line, _ := encodeRecord(record{Meta: &Meta{SessionID: "bench"}})
	buf.Write(line)
	for i := range 10000 {
		e := typicalEntry(i + 1)
		line, _ := encodeRecord(record{Entry: &e})
		buf.Write(line)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_, entries, _, err := decodeHistory(data)
		if err != nil || len(entries) != 10000 {
			b.Fatal(err, len(entries))
		}
	}
}
