package assets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files []File) {
	t.Helper()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// check names the directory and, on one line, what it lacks.
func TestCheck(t *testing.T) {
	t.Setenv(EnvVar, "")
	dir := t.TempDir()
	writeFiles(t, dir, Files)
	if err := check(dir); err != nil {
		t.Errorf("all files there: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "web.html")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "plotly.js.gz")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		dir  string
		want []string
	}{
		"two missing":  {dir, []string{dir, "lacks plotly.js.gz, web.html;", "beside its executable", EnvVar}},
		"no directory": {filepath.Join(dir, "nowhere"), []string{filepath.Join(dir, "nowhere"), "does not exist", "cell.html"}},
		"a file":       {filepath.Join(dir, "cell.html"), []string{"is not a directory"}},
	} {
		err := check(c.dir)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: %q is more than one line", name, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", name, msg, w)
			}
		}
	}
	t.Setenv(EnvVar, dir)
	if err := check(dir); err == nil || !strings.Contains(err.Error(), "$"+EnvVar) {
		t.Errorf("with %s set: %v, want it named as where the directory came from", EnvVar, err)
	}
}

// The directory is $KERNEL_MCP_ASSETS, else assets beside the
// executable's directory.
func TestDir(t *testing.T) {
	t.Setenv(EnvVar, "/some/where")
	if d, err := Dir(); err != nil || d != "/some/where" {
		t.Errorf("with %s: %q, %v", EnvVar, d, err)
	}
	t.Setenv(EnvVar, "")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(filepath.Dir(exe)), "assets")
	if d, err := Dir(); err != nil || d != want {
		t.Errorf("Dir() = %q, %v; want %q", d, err, want)
	}
}

// Read reads Files from the directory, and nothing else.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, Files[:1])
	t.Setenv(EnvVar, dir)
	if b, err := Read(Files[0].Name); err != nil || string(b) != Files[0].Name {
		t.Errorf("Read(%s) = %q, %v", Files[0].Name, b, err)
	}
	if _, err := Read(Files[1].Name); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Read of a missing file: %v", err)
	}
	for _, bad := range []string{"", "../go.mod", "assets.go"} {
		if _, err := Read(bad); !errors.Is(err, ErrUnknown) {
			t.Errorf("Read(%q): %v, want ErrUnknown", bad, err)
		}
	}
}

// Each file's source is in the repository, and the names are unique: the
// bundle's build copies them from there.
func TestSources(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Files {
		if seen[f.Name] || filepath.Base(f.Source) != f.Name {
			t.Errorf("%+v: name repeated, or not the source's", f)
		}
		seen[f.Name] = true
		if fi, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(f.Source))); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v", f.Source, err)
		}
	}
}
