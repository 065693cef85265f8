package mcpserver

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
	srv := &Server{cfg: Config{Sandbox: &kernel.SandboxOptions{ReadOnly: []string{allowed}}}, workDir: work}
	ss := &Session{srv: srv}

	tests := []struct {
		path   string
		access pathAccess
		want   string // the resolved path, or "refused"
	}{
		{"a.txt", writePath, filepath.Join(work, "a.txt")},
		{"new/dir/a.txt", writePath, filepath.Join(work, "new/dir/a.txt")},
		{"sub/../a.txt", writePath, filepath.Join(work, "a.txt")},
		{"in_link/a.txt", writePath, filepath.Join(work, "in_link/a.txt")},
		{filepath.Join(work, "a.txt"), writePath, filepath.Join(work, "a.txt")},
		{"../outside/a.txt", writePath, "refused"},
		{"../work2/a.txt", writePath, "refused"},
		{filepath.Join(outside, "a.txt"), readPath, "refused"},
		{"out_link/a.txt", writePath, "refused"},
		{"out_link/a.txt", readPath, "refused"},
		{"/etc/passwd", readPath, "refused"},
		{filepath.Join(allowed, "d.csv"), readPath, filepath.Join(allowed, "d.csv")},
		{"data_link/d.csv", readPath, filepath.Join(work, "data_link/d.csv")},
		{filepath.Join(allowed, "d.csv"), writePath, "refused"},
		{"data_link/d.csv", writePath, "refused"},
		{"", readPath, "refused"},
	}
	for _, tt := range tests {
		got, err := ss.resolvePath(tt.path, tt.access)
		switch {
		case tt.want == "refused" && err == nil:
			t.Errorf("resolvePath(%q, %v) = %q, want a refusal", tt.path, tt.access, got)
		case tt.want == "refused":
			if tt.path != "" && !strings.Contains(err.Error(), "--sandbox") {
				t.Errorf("resolvePath(%q): refusal does not say why: %v", tt.path, err)
			}
		case err != nil || got != tt.want:
			t.Errorf("resolvePath(%q, %v) = %q, %v; want %q", tt.path, tt.access, got, err, tt.want)
		}
	}

	// A session whose cwd lies outside the work directory (restored from
	// an unsandboxed run) has no root to write in.
	ss.choice.Cwd = outside
	if _, err := ss.resolvePath("a.txt", writePath); err == nil || !strings.Contains(err.Error(), "outside the sandbox's work directory") {
		t.Errorf("cwd outside the work directory: %v", err)
	}
	// Without the sandbox, paths are only made absolute.
	srv.cfg.Sandbox = nil
	if got, err := ss.resolvePath("../x", writePath); err != nil || got != filepath.Join(root, "x") {
		t.Errorf("unsandboxed: %q, %v", got, err)
	}
}
