package mcpserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json from the server's tools/list")

// TestToolsGolden keeps the tool contract in review: tools/list (names,
// descriptions, annotations, input and output schemas) must equal
// testdata/tools.golden.json. A change to a tool's contract changes that
// file too; `go test ./mcpserver -run TestToolsGolden -update` rewrites it.
func TestToolsGolden(t *testing.T) {
	tools := listedTools(t, Config{})
	got, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tools/list differs from %s; if the change is meant, rerun with -update and review the diff.\n%s", path, firstDiff(want, got))
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got []byte) string {
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + itoa(i+1) + ":\n- " + string(w) + "\n+ " + string(g)
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }
