//go:build kernelmcp_external_assets

package assets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In the external build Check looks at the directory.
func TestCheckExternal(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, Files)
	t.Setenv(EnvVar, dir)
	if err := Check(); err != nil {
		t.Errorf("Check with every file: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "cell.html")); err != nil {
		t.Fatal(err)
	}
	if err := Check(); err == nil || !strings.Contains(err.Error(), "lacks cell.html;") {
		t.Errorf("Check without cell.html: %v", err)
	}
}
