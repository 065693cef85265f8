// Command dist builds kernel-mcp's release files, reproducibly, into one
// folder:
//
//	go run ./internal/dist -out dist
//
// writes the release archives (kernel-mcp_<ver>_<goos>_<goarch>.tar.gz, and
// a .zip for Windows), one wheel per platform tag
// (kernel_mcp-<ver>-py3-none-<tag>.whl, built by hatchling with the hook in
// packaging/python), the Claude Desktop bundle (kernel-mcp-<ver>.mcpb, by
// internal/mcpb) and SHA256SUMS over all of them. The version is the
// repository's VERSION file. Every binary is built with CGO_ENABLED=0,
// -trimpath, -buildvcs=false and no build id, and every archive entry gets
// the same timestamp (-epoch: SOURCE_DATE_EPOCH, else the commit time of
// HEAD), so two builds of one commit, from any folder, give the same bytes.
// The loose binaries stay in a scratch folder (-work), not in -out.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	o := options{Log: os.Stderr}
	fs.StringVar(&o.Root, "root", ".", "the repository to build (its VERSION, cmd/kernel-mcp, packaging/)")
	fs.StringVar(&o.Out, "out", "dist", "the folder the release files go to; earlier release files in it are replaced, any other file is an error")
	fs.StringVar(&o.Work, "work", "", "a scratch folder for the binaries and the bundle's files, kept afterwards (default: a temporary one, removed)")
	fs.StringVar(&o.Python, "python", "python3", "a Python with hatchling, which builds the wheels")
	fs.StringVar(&o.MCPB, "mcpb", "", "the mcpb command that packs the bundle (default <root>/packaging/mcpb/node_modules/.bin/mcpb)")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the timestamp of every archive entry, in seconds since 1970 (default $SOURCE_DATE_EPOCH, else the commit time of HEAD)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: dist takes only flags", fs.Args())
	}
	// The tools run in other folders (hatchling in packaging/python): every
	// path given becomes absolute.
	for _, p := range []*string{&o.Root, &o.Out, &o.Work, &o.MCPB, &o.Python} {
		if *p == "" || (p == &o.Python && !strings.ContainsRune(*p, filepath.Separator) && !strings.ContainsRune(*p, '/')) {
			continue // a command name, looked up on PATH
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if o.MCPB == "" {
		o.MCPB = filepath.Join(o.Root, "packaging", "mcpb", "node_modules", ".bin", "mcpb")
	}
	if *epoch != "" {
		sec, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil || sec < minEpoch {
			return fmt.Errorf("-epoch / SOURCE_DATE_EPOCH %q: want whole seconds since 1970, at least %d (1980, the earliest time a zip entry can have)", *epoch, minEpoch)
		}
		o.Epoch = epochTime(sec)
	} else {
		o.Epoch = commitTime(ctx, o.Root)
	}
	return build(ctx, o)
}
