package history

import (
	"encoding/json"
	"os"
	"testing"
)

// TestSliceMatchesPython checks Slice against the bounds Python itself gives
// for every start and end in {None, -7..7} on 5 elements
// (testdata/gen_slices.py writes testdata/slices.json).
func TestSliceMatchesPython(t *testing.T) {
	data, err := os.ReadFile("testdata/slices.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		N     int `json:"n"`
		Cases []struct {
			Start, End *int
			Lo, Hi     int
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 16*16 {
		t.Fatalf("slices.json has %d cases, want 256", len(file.Cases))
	}
	for _, c := range file.Cases {
		lo, hi := Slice(file.N, c.Start, c.End)
		if lo != c.Lo || hi != c.Hi {
			t.Errorf("Slice(%d, %s, %s) = %d, %d; Python gives %d, %d", file.N, show(c.Start), show(c.End), lo, hi, c.Lo, c.Hi)
		}
	}
}

func TestSliceEmpty(t *testing.T) {
	for _, c := range []struct{ start, end *int }{{nil, nil}, {ptr(0), nil}, {ptr(-1), nil}, {ptr(2), ptr(5)}} {
		if lo, hi := Slice(0, c.start, c.end); lo != 0 || hi != 0 {
			t.Errorf("Slice(0, %s, %s) = %d, %d; want 0, 0", show(c.start), show(c.end), lo, hi)
		}
	}
}

func ptr(i int) *int { return &i }

func show(p *int) string {
	if p == nil {
		return "None"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}
