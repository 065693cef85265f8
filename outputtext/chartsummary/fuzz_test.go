package chartsummary

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode"
	"unicode/utf8"
)

var fuzzMIMEs = []string{MIMEPlotly, "application/vnd.vegalite.v6+json", MIMEVega}

// FuzzSummarize feeds arbitrary bytes as each chart type: Summarize must
// not panic, and whatever it accepts must render within MaxTextRunes as
// valid UTF-8 with no control characters, and marshal to JSON.
func FuzzSummarize(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i, m := range fuzzMIMEs {
			if m == mimeFor(file) {
				f.Add(uint8(i), raw)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"data": [{"x": {"dtype": "f4", "bdata": "AACAPw==", "shape": "1"}, "name": "a\u0000"}]}`))
	f.Add(uint8(1), []byte(`{"repeat": ["a"], "spec": {"layer": [{"mark": "line", "encoding": {"x": {"field": {"repeat": "repeat"}}}}]}}`))
	f.Add(uint8(2), []byte(`{"scales": [{"name": "s", "domain": [1, "b"]}], "axes": [{"orient": "left", "scale": "s"}]}`))
	f.Fuzz(func(t *testing.T, which uint8, spec []byte) {
		s, err := Summarize(fuzzMIMEs[int(which)%len(fuzzMIMEs)], spec)
		if err != nil {
			return
		}
		text := s.Text()
		if n := utf8.RuneCountInString(text); n > MaxTextRunes {
			t.Fatalf("text has %d runes", n)
		}
		if !utf8.ValidString(text) {
			t.Fatalf("text is not UTF-8: %q", text)
		}
		for _, r := range text {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("text holds %U: %q", r, text)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		}
	})
}
