// Package assets is where the views' large static files come from in a
// build made with the kernelmcp_external_assets tag: the chart libraries
// (chartlib) and the two view pages (mcpserver's ui/cell.html and
// ui/web.html). Every other build embeds them and never reads this
// directory; the Claude Desktop bundle, which holds four binaries, carries
// them once beside them instead (docs/bundle.md).
//
//	if err := assets.Check(); err != nil { // nil in an embedding build
//		fmt.Fprintf(os.Stderr, "kernel-mcp: %v\n", err)
//		os.Exit(1)
//	}
//	gz, err := assets.Read("plotly.js.gz")
//
// The directory is $KERNEL_MCP_ASSETS, else assets beside the directory of
// the executable (symlinks resolved): the bundle's server/assets for its
// server/<os>/kernel-mcp.
package assets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BuildTag is the build tag that makes a binary read the files from the
// directory instead of embedding them.
const BuildTag = "kernelmcp_external_assets"

// EnvVar names the directory, overriding the one beside the executable.
const EnvVar = "KERNEL_MCP_ASSETS"

// File is one file of the directory.
type File struct {
	Name   string // its name in the directory
	Source string // where it is in the repository, slash-separated
}

// Files are the directory's files: what a BuildTag binary reads, and what
// the bundle carries.
var Files = []File{
	{"plotly.js.gz", "chartlib/plotly.js.gz"},
	{"vega.js.gz", "chartlib/vega.js.gz"},
	{"katex.js.gz", "chartlib/katex.js.gz"},
	{"widgets.js.gz", "chartlib/widgets.js.gz"},
	{"cell.html", "mcpserver/ui/cell.html"},
	{"web.html", "mcpserver/ui/web.html"},
}

// Dir is the directory the files are read from: $KERNEL_MCP_ASSETS if
// set, else <the executable's directory>/../assets. It does not look
// whether the directory exists (Check does).
func Dir() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		return d, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find its own executable, beside which its view files are: %v; set %s to their directory", err, EnvVar)
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return filepath.Join(filepath.Dir(filepath.Dir(exe)), "assets"), nil
}

// Check reports, in one line, which of Files the directory lacks. It is
// nil in a build that embeds them.
func Check() error {
	if !External {
		return nil
	}
	dir, err := Dir()
	if err != nil {
		return err
	}
	return check(dir)
}

// check reports which of Files dir lacks: a missing directory, or the
// missing files by name.
func check(dir string) error {
	from := "the assets folder beside its executable's folder"
	if os.Getenv(EnvVar) != "" {
		from = "$" + EnvVar
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		what := "is not a directory"
		if errors.Is(err, fs.ErrNotExist) {
			what = "does not exist"
		}
		return fmt.Errorf("this build reads its view files from %s (%s), which %s; reinstall kernel-mcp, or set %s to the directory that holds %s", dir, from, what, EnvVar, names(Files))
	}
	var missing []File
	for _, f := range Files {
		if fi, err := os.Stat(filepath.Join(dir, f.Name)); err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this build reads its view files from %s (%s), which lacks %s; reinstall kernel-mcp, or set %s to a directory that holds them all", dir, from, names(missing), EnvVar)
	}
	return nil
}

func names(files []File) string {
	var s []string
	for _, f := range files {
		s = append(s, f.Name)
	}
	return strings.Join(s, ", ")
}

// ErrUnknown is Read's error for a name that is not one of Files.
var ErrUnknown = errors.New("assets: not one of the files")

// Read reads one of Files from the directory, whatever the build.
func Read(name string) ([]byte, error) {
	if !slices.ContainsFunc(Files, func(f File) bool { return f.Name == name }) {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("view file %s is missing from %s: %w", name, dir, err)
	}
	return b, err
}
