package history

import (
	"encoding/json"
	"strings"
	"testing"
)

// A block the person wrote is marked in each rendering; the assistant's
// blocks around it read exactly as they did before there was a By field.
func TestByPersonMarked(t *testing.T) {
	mine := Entry{Code: "x = 1\ny = 2", Status: "ok", ExecutionCount: 1, Generation: 1, Outputs: []Output{}}
	theirs := mine
	theirs.Code, theirs.By, theirs.ExecutionCount = "print(x)\nx", ByPerson, 2
	theirs.Outputs = []Output{{OutputType: "stream", Name: "stdout", Text: "1\n"}}

	got := Transcript([]Entry{mine, theirs}, 3)
	want := "[3] x = 1\n    y = 2\n\n[4] (by the person) print(x)\n                    x\n1\n"
	if got != want {
		t.Errorf("transcript:\n%q\nwant\n%q", got, want)
	}
	if alone := Transcript([]Entry{mine}, 3); alone != "[3] x = 1\n    y = 2\n" {
		t.Errorf("the assistant's block changed: %q", alone)
	}

	script := Script([]Entry{mine, theirs}, 3, "s")
	if !strings.Contains(script, "# %% [4]\n# by the person\nprint(x)\n") {
		t.Errorf("script does not mark the person's block:\n%s", script)
	}
	if strings.Count(script, "by the person") != 1 {
		t.Errorf("script marks the assistant's block too:\n%s", script)
	}

	nb, err := Notebook([]Entry{mine, theirs, {Code: "# Notes", CellType: "markdown", By: ByPerson}}, 3, NotebookMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Metadata map[string]map[string]any `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cells) != 3 {
		t.Fatalf("%d cells", len(doc.Cells))
	}
	if by, ok := doc.Cells[0].Metadata["kernel_mcp"]["by"]; ok {
		t.Errorf("the assistant's cell has by %v", by)
	}
	for _, i := range []int{1, 2} {
		if by := doc.Cells[i].Metadata["kernel_mcp"]["by"]; by != "person" {
			t.Errorf("cell %d: metadata.kernel_mcp.by = %v, want person", i, by)
		}
	}
}

// By survives the history file's JSON, and is left out for the assistant.
func TestByJSON(t *testing.T) {
	b, err := json.Marshal(Entry{Code: "1", Status: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"by"`) {
		t.Errorf("an assistant's entry carries by: %s", b)
	}
	b, _ = json.Marshal(Entry{Code: "1", Status: "ok", By: ByPerson})
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil || e.By != ByPerson {
		t.Errorf("round trip: %+v, %v (%s)", e, err, b)
	}
}
