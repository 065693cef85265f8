package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Under the sandbox a tool's path resolves inside the session's working
// directory, or for reads inside an allowed path; "..", absolute paths
// elsewhere and symlinks leading out are refused, symlinks within are not.
func TestResolvePathConfined(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(root, "work")
	allowed := filepath.Join(root, "data")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{work, allowed, outside, filepath.Join(work, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(outside, filepath.Join(work, "out_link"))
	os.Symlink(filepath.Join(work, "sub"), filepath.Join(work, "in_link"))
	os.Symlink(allowed, filepath.Join(work, "data_link"))
	srv := &Engine{cfg: Config{Sandbox: &kernel.SandboxOptions{ReadOnly: []string{allowed}}}, workDir: work}
	ss := &Session{eng: srv}

	tests := []struct {
		path   string
		access Access
		want   string // the resolved path, or "refused"
	}{
		{"a.txt", WriteAccess, filepath.Join(work, "a.txt")},
		{"new/dir/a.txt", WriteAccess, filepath.Join(work, "new/dir/a.txt")},
		{"sub/../a.txt", WriteAccess, filepath.Join(work, "a.txt")},
		{"in_link/a.txt", WriteAccess, filepath.Join(work, "in_link/a.txt")},
		{filepath.Join(work, "a.txt"), WriteAccess, filepath.Join(work, "a.txt")},
		{"../outside/a.txt", WriteAccess, "refused"},
		{"../work2/a.txt", WriteAccess, "refused"},
		{filepath.Join(outside, "a.txt"), ReadAccess, "refused"},
		{"out_link/a.txt", WriteAccess, "refused"},
		{"out_link/a.txt", ReadAccess, "refused"},
		{"/etc/passwd", ReadAccess, "refused"},
		{filepath.Join(allowed, "d.csv"), ReadAccess, filepath.Join(allowed, "d.csv")},
		{"data_link/d.csv", ReadAccess, filepath.Join(work, "data_link/d.csv")},
		{filepath.Join(allowed, "d.csv"), WriteAccess, "refused"},
		{"data_link/d.csv", WriteAccess, "refused"},
		{"", ReadAccess, "refused"},
	}
	for _, tt := range tests {
		got, err := ss.ResolvePath(tt.path, tt.access)
		switch {
		case tt.want == "refused" && err == nil:
			t.Errorf("resolvePath(%q, %v) = %q, want a refusal", tt.path, tt.access, got)
		case tt.want == "refused":
			if tt.path != "" && !strings.Contains(err.Error(), "--sandbox") {
				t.Errorf("resolvePath(%q): refusal does not say why: %v", tt.path, err)
			}
		case err != nil || got.abs != tt.want:
			t.Errorf("resolvePath(%q, %v) = %q, %v; want %q", tt.path, tt.access, got, err, tt.want)
		}
	}

	// A session whose cwd lies outside the work directory (restored from
	// an unsandboxed run) has no root to write in.
	ss.choice.Cwd = outside
	if _, err := ss.ResolvePath("a.txt", WriteAccess); err == nil || !strings.Contains(err.Error(), "outside the sandbox's work directory") {
		t.Errorf("cwd outside the work directory: %v", err)
	}
	// Without the sandbox, paths are only made absolute.
	srv.cfg.Sandbox = nil
	if got, err := ss.ResolvePath("../x", WriteAccess); err != nil || got.abs != filepath.Join(root, "x") {
		t.Errorf("unsandboxed: %q, %v", got, err)
	}
}

// An allowed parent does not open what the sandbox hides: the tokens file
// and the state directory (other users' histories) stay refused to reads.
func TestResolvePathHiddenUnderAllowedParent(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	state := filepath.Join(root, "state")
	work := filepath.Join(state, "users", "bob", "work")
	alice := filepath.Join(state, "users", "alice", "sessions", "default.json")
	tokens := filepath.Join(root, "tokens")
	for _, d := range []string{work, filepath.Dir(alice)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{alice, tokens, filepath.Join(root, "data.csv")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := &Engine{cfg: Config{StateDir: filepath.Join(state, "users", "bob"),
		Sandbox: &kernel.SandboxOptions{ReadOnly: []string{root}, Hide: []string{state, tokens}}}, workDir: work}
	ss := &Session{eng: srv}
	for _, p := range []string{tokens, alice, "../../alice/sessions/default.json", filepath.Join(state, "users")} {
		if got, err := ss.ResolvePath(p, ReadAccess); err == nil || !strings.Contains(err.Error(), "hides") {
			t.Errorf("read %s: %q, %v; want a refusal saying it is hidden", p, got, err)
		}
	}
	if got, err := ss.ResolvePath(filepath.Join(root, "data.csv"), ReadAccess); err != nil {
		t.Errorf("read an allowed file: %q, %v", got, err)
	}
	if got, err := ss.ResolvePath("mine.txt", WriteAccess); err != nil || got.abs != filepath.Join(work, "mine.txt") {
		t.Errorf("the session's own folder: %q, %v", got, err)
	}
}

// A cwd is checked before any folder is made: one through a symlink that
// leads out is refused and creates nothing outside; one inside is created.
func TestSandboxCwdChecksBeforeCreating(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(root, "work")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{work, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	srv := &Engine{cfg: Config{Sandbox: &kernel.SandboxOptions{}}, workDir: work}
	for _, cwd := range []string{"link/made", "link/a/b", filepath.Join(work, "link", "c")} {
		if got, err := srv.sandboxCwd(cwd); err == nil || !strings.Contains(err.Error(), "leads outside") {
			t.Errorf("sandboxCwd(%q) = %q, %v; want a refusal", cwd, got, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("folders created outside the work directory: %v", ents)
	}
	if got, err := srv.sandboxCwd("proj/sub"); err != nil || got != filepath.Join(work, "proj", "sub") {
		t.Errorf("sandboxCwd(proj/sub) = %q, %v", got, err)
	}
	if st, err := os.Stat(filepath.Join(work, "proj", "sub")); err != nil || !st.IsDir() {
		t.Errorf("proj/sub not created: %v", err)
	}
}

// The sandboxed kernels' runtime dirs (connection files with their keys)
// are hidden from the tools too, even under an allowed parent.
func TestResolvePathRuntimeDirsHidden(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	runtime := filepath.Join(root, "runtime")
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", runtime)
	conn := filepath.Join(runtime, "kernel-mcp-1-x", "kernel.json")
	work := filepath.Join(root, "work")
	for _, d := range []string{filepath.Dir(conn), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(conn, []byte(`{"key": "secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &Engine{cfg: Config{Sandbox: &kernel.SandboxOptions{ReadOnly: []string{root}}}, workDir: work}
	ss := &Session{eng: srv}
	if got, err := ss.ResolvePath(conn, ReadAccess); err == nil || !strings.Contains(err.Error(), "runtime dirs") {
		t.Errorf("read another kernel's connection file: %q, %v; want a refusal saying it is hidden", got, err)
	}
}
