package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goldenToolNames reads the tool names from testdata/tools.golden.json, the
// server's tools/list (TestToolsGolden keeps it equal to what the server
// offers).
func goldenToolNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tools.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &tools); err != nil {
		t.Fatalf("tools.golden.json: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if len(names) == 0 {
		t.Fatal("tools.golden.json lists no tools")
	}
	slices.Sort(names)
	return names
}

// toolTables returns the tool names in the first column of every Markdown
// table in text whose header's first cell is "tool", in order, repeats
// kept. A row whose first cell is not one backquoted name is an error.
func toolTables(t *testing.T, file, text string) []string {
	t.Helper()
	var names []string
	inTable := false
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(cells[0])
		switch {
		case !inTable && first == "tool":
			inTable = true
		case !inTable, strings.Trim(first, "-: ") == "":
			// another table, or the header's separator row
		default:
			name, ok := strings.CutPrefix(first, "`")
			name, ok2 := strings.CutSuffix(name, "`")
			if !ok || !ok2 || name == "" || strings.ContainsAny(name, "` ") {
				t.Errorf("%s:%d: a tool table's row does not start with one `tool_name`: %q", file, i+1, line)
				continue
			}
			names = append(names, name)
		}
	}
	return names
}

// section returns the text of the Markdown section that starts at the
// line heading, up to the next heading of the same or a higher level.
func section(t *testing.T, file, text, heading string) string {
	t.Helper()
	level := strings.Index(heading, " ")
	lines := strings.Split(text, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("%s has no line %q", file, heading)
	}
	end := len(lines)
	fenced := false // a "# comment" in a code block is no heading
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			fenced = !fenced
		}
		if n := strings.Index(lines[i], " "); !fenced && n > 0 && n <= level && strings.Trim(lines[i][:n], "#") == "" {
			end = i
			break
		}
	}
	return strings.Join(lines[start:end], "\n")
}

// checkToolSet reports names that are missing, repeated, or not tools.
func checkToolSet(t *testing.T, where string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, n := range got {
		seen[n]++
	}
	for _, n := range want {
		switch seen[n] {
		case 0:
			t.Errorf("%s: no row for the tool %s", where, n)
		case 1:
		default:
			t.Errorf("%s: %d rows for the tool %s", where, seen[n], n)
		}
	}
	for n := range seen {
		if !slices.Contains(want, n) {
			t.Errorf("%s: a row for %s, which the server does not offer (tools.golden.json)", where, n)
		}
	}
}

// TestREADMEToolTable keeps the documentation's tool lists equal to what the
// server offers: the README's tool table has one row per tool, every tool
// and nothing else, and so do docs/tools.md's tables, which describe them.
func TestREADMEToolTable(t *testing.T) {
	want := goldenToolNames(t)

	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	tools := section(t, "README.md", string(readme), "## Tools")
	got := toolTables(t, "README.md", tools)
	if len(got) == 0 {
		t.Fatal("README.md's Tools section has no table headed | tool |")
	}
	checkToolSet(t, "README.md's tool table", got, want)

	doc, err := os.ReadFile(filepath.Join("..", "docs", "tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkToolSet(t, "docs/tools.md's tool tables", toolTables(t, "docs/tools.md", string(doc)), want)
	for _, name := range want {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/tools.md never names `%s`", name)
		}
	}
}
