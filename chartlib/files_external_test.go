//go:build kernelmcp_external_assets

package chartlib

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
)

// The external build reads each library from the assets directory, byte
// for byte, and finds none without it. TestLibraries runs on this
// package's own folder, which holds the four files.
func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err == nil {
		err = os.Setenv(assets.EnvVar, wd)
	}
	if err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func TestReadsAssetsDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(assets.EnvVar, dir)
	if _, ok := Gzip("plotly"); ok {
		t.Error("Gzip found plotly in an empty assets directory")
	}
	want := []byte("\x1f\x8b not really")
	if err := os.WriteFile(filepath.Join(dir, "plotly.js.gz"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok := Gzip("plotly"); !ok || !bytes.Equal(got, want) {
		t.Errorf("Gzip(plotly) = %q, %v; want the directory's file", got, ok)
	}
	if _, ok := Text("plotly"); ok {
		t.Error("Text decompressed a file that is not gzip")
	}
}
