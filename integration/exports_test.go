//go:build unix

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExportsObeyUmaskAndCwdIsAbsolute: files the server writes for the
// user get 0666 (folders 0777) less the user's umask, like any program's,
// and a relative create_session cwd is kept as the absolute directory it
// named, so exports resolved against it say where they went. Not parallel:
// the umask, which the server inherits, belongs to the whole test process.
func TestExportsObeyUmaskAndCwdIsAbsolute(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o027)
	c := startRawIn(t, base, "--state-dir", filepath.Join(base, "state"), "--pool-size", "0")
	syscall.Umask(old)

	id := 0
	call := func(tool string, args map[string]any) (rawResult, json.RawMessage) {
		t.Helper()
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		c.send(string(b))
		m := c.wait(fmt.Sprint(id))
		r := decodeRaw[rawResult](t, m["result"])
		if r.IsError {
			t.Fatalf("%s: %s", tool, r.text())
		}
		var sc struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		json.Unmarshal(m["result"], &sc)
		return r, sc.StructuredContent
	}

	_, sc := call("create_session", map[string]any{"session_id": "rel", "cwd": "work"})
	if info := decodeRaw[struct {
		Cwd string `json:"cwd"`
	}](t, sc); info.Cwd != work {
		t.Errorf("create_session keeps cwd %q, want the absolute %q", info.Cwd, work)
	}
	call("run_code", map[string]any{"session_id": "rel", "code": "print('hi')"})
	r, _ := call("save_script", map[string]any{"session_id": "rel", "path": "s.py"})
	if !strings.Contains(r.text(), filepath.Join(work, "s.py")) {
		t.Errorf("save_script says %q, want the absolute path %s", r.text(), filepath.Join(work, "s.py"))
	}
	call("export_history", map[string]any{"session_id": "rel", "path": "out/h.txt"})
	for p, want := range map[string]os.FileMode{filepath.Join(work, "s.py"): 0o640, filepath.Join(work, "out", "h.txt"): 0o640, filepath.Join(work, "out"): 0o750} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v (umask 027)", p, got, want)
		}
	}
}
