package history

import (
	"strings"
	"testing"
)

// percentScript is a py:percent script as jupytext writes it, with its
// YAML header.
const percentScript = `# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Analysis

# %%
x = 1

# %%
y = x + 1
`

// jupytext's YAML header is metadata, not code cell 0.
func TestParsePercentSkipsTheJupytextHeader(t *testing.T) {
	cells, _, err := ParseNotebook("steps.py", []byte(percentScript))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, c.Type+":"+c.Source)
	}
	want := []string{"markdown:# Analysis", "code:x = 1", "code:y = x + 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cells %q, want %q", got, want)
	}

	// Text before the first marker that is not such a header stays a cell.
	for _, pre := range []string{"import os\n", "# --- not a header\nz = 0\n", "# ---\nz = 0\n# ---\n"} {
		cells, _, err := ParseNotebook("steps.py", []byte(pre+"\n# %%\nx = 1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 2 || cells[0].Type != "code" || cells[1].Source != "x = 1" {
			t.Errorf("%q: cells %+v, want the leading text as a cell of its own", pre, cells)
		}
	}
}
