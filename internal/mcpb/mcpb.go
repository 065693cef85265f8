// Package mcpb builds kernel-mcp's MCP Bundle (.mcpb) for Claude Desktop:
// the manifest (its tools taken from the server itself), the per-platform
// binaries, and the archive, packed and validated with @anthropic-ai/mcpb.
//
//	err := mcpb.Build(ctx, mcpb.Options{
//		Version:  "0.6.0",
//		Binaries: map[string]string{"darwin-amd64": "...", "darwin-arm64": "...", "linux-amd64": "...", "windows-amd64": "..."},
//		Assets:   map[string]string{"plotly.js.gz": "chartlib/plotly.js.gz", ...}, // one per assets.Files
//		Out:      "dist/kernel-mcp-0.6.0.mcpb",
//		Work:     "build/mcpb",
//		CLI:      "packaging/mcpb/node_modules/.bin/mcpb",
//		Epoch:    time.Unix(1700000000, 0),
//	})
//
// The bundle holds one binary per platform Claude Desktop knows
// (process.platform): a universal Mach-O made of the two darwin binaries,
// the windows amd64 .exe, and the linux amd64 binary. The binaries are
// built with the kernelmcp_external_assets tag (internal/assets): the chart
// libraries and view pages, 2.5 MB gzipped, are in server/assets once, not
// in each of the four. Two builds from the same inputs give the same bytes.
package mcpb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
)

// Options says what goes into the bundle and where it is written.
type Options struct {
	// Version is the bundle's version (the VERSION file's, without a v).
	Version string
	// Binaries maps "goos-goarch" (darwin-amd64, darwin-arm64, linux-amd64,
	// linux-arm64, windows-amd64) to the path of that platform's built
	// kernel-mcp binary. The bundle needs darwin-amd64, darwin-arm64,
	// linux-amd64 and windows-amd64; others are ignored (a bundle names
	// one command per operating system, not per architecture). Each must
	// be built with the assets.BuildTag tag.
	Binaries map[string]string
	// Assets maps the name of each of assets.Files to the path of the file
	// to put in server/assets.
	Assets map[string]string
	// Out is the path of the .mcpb file to write.
	Out string
	// Work is a scratch directory Build may fill and leaves behind: it
	// replaces Work/bundle (the laid-out bundle), Work/packed.mcpb (mcpb
	// pack's archive) and Work/unpacked (mcpb unpack's check).
	Work string
	// CLI is the path of the mcpb command (packaging/mcpb/node_modules/.bin/mcpb).
	CLI string
	// Epoch is the timestamp every file in the archive gets (a zip entry's
	// time counts in two-second steps from 1980; earlier times, the zero
	// Time too, become 1980-01-01).
	Epoch time.Time
}

// The bundle's layout: where each platform's binary sits, relative to the
// bundle's root, by Node's process.platform. The binaries find the assets
// at ../assets from their own folder.
var serverPaths = map[string]string{
	"darwin": "server/darwin/kernel-mcp",
	"linux":  "server/linux/kernel-mcp",
	"win32":  "server/windows/kernel-mcp.exe",
}

// platforms lists the platforms the bundle supports, in manifest order.
var platforms = []string{"darwin", "win32", "linux"}

// NeededBinaries are the Options.Binaries keys Build uses, "goos-goarch".
var NeededBinaries = []string{"darwin-amd64", "darwin-arm64", "linux-amd64", "windows-amd64"}

// assetsDir is the folder of the assets in the bundle.
const assetsDir = "server/assets/"

// Build lays the bundle out in o.Work/bundle (manifest.json, icon.png and
// the binaries), validates the manifest and packs it with the mcpb CLI, then
// rewrites the archive deterministically to o.Out (mcpb pack stamps every
// entry with the current time) and checks the written file with mcpb
// unpack and validate. It fails, writing no o.Out, when a binary or an
// asset is missing, or a binary is not the platform's executable format or
// was built without the assets tag.
func Build(ctx context.Context, o Options) error {
	if o.Version == "" || o.Out == "" || o.Work == "" || o.CLI == "" {
		return errors.New("mcpb: Version, Out, Work and CLI must all be set")
	}
	for _, k := range NeededBinaries {
		p := o.Binaries[k]
		if p == "" {
			return fmt.Errorf("mcpb: no %s binary given (the bundle needs %s)", k, strings.Join(NeededBinaries, ", "))
		}
		goos, goarch, _ := strings.Cut(k, "-")
		if err := checkBinary(p, goos, goarch); err != nil {
			return fmt.Errorf("mcpb: %s binary: %w", k, err)
		}
		if err := checkTag(p, assets.BuildTag); err != nil {
			return fmt.Errorf("mcpb: %s binary: %w", k, err)
		}
	}
	if len(o.Assets) != len(assets.Files) {
		return fmt.Errorf("mcpb: %d assets given, want the %d of internal/assets.Files", len(o.Assets), len(assets.Files))
	}

	tools, err := serverTools(ctx)
	if err != nil {
		return fmt.Errorf("mcpb: listing the server's tools: %w", err)
	}
	manifest, err := newManifest(o.Version, tools).json()
	if err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}

	dir := filepath.Join(o.Work, "bundle")
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}
	png, err := icon()
	if err != nil {
		return fmt.Errorf("mcpb: drawing the icon: %w", err)
	}
	files := map[string][]byte{"manifest.json": manifest, iconPath: png}
	fat, err := universal(o.Binaries["darwin-amd64"], o.Binaries["darwin-arm64"])
	if err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}
	files[serverPaths["darwin"]] = fat
	for platform, key := range map[string]string{"linux": "linux-amd64", "win32": "windows-amd64"} {
		b, err := os.ReadFile(o.Binaries[key])
		if err != nil {
			return fmt.Errorf("mcpb: %w", err)
		}
		files[serverPaths[platform]] = b
	}
	for _, f := range assets.Files {
		p, ok := o.Assets[f.Name]
		if !ok {
			return fmt.Errorf("mcpb: no %s given among the assets", f.Name)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("mcpb: asset %s: %w", f.Name, err)
		}
		files[assetsDir+f.Name] = b
	}
	if err := writeTree(dir, files, o.Epoch); err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}

	if err := runCLI(ctx, o.CLI, "validate", filepath.Join(dir, "manifest.json")); err != nil {
		return err
	}
	packed := filepath.Join(o.Work, "packed.mcpb")
	if err := runCLI(ctx, o.CLI, "pack", dir, packed); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}
	tmp := o.Out + ".tmp"
	if err := rewriteZip(packed, tmp, files, o.Epoch); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mcpb: rewriting %s: %w", packed, err)
	}
	if err := checkPacked(ctx, o.CLI, tmp, filepath.Join(o.Work, "unpacked"), files); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, o.Out); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mcpb: %w", err)
	}
	return nil
}

// writeTree writes files (slash paths relative to dir) with every file and
// directory's mtime set to epoch. Binaries are executable.
func writeTree(dir string, files map[string][]byte, epoch time.Time) error {
	var dirs []string
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, fileMode(name)); err != nil {
			return err
		}
		// WriteFile's mode is subject to the umask.
		if err := os.Chmod(p, fileMode(name)); err != nil {
			return err
		}
		if err := os.Chtimes(p, epoch, epoch); err != nil {
			return err
		}
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if d == dir || d == filepath.Dir(d) {
				break
			}
		}
	}
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		if err := os.Chtimes(d, epoch, epoch); err != nil {
			return err
		}
	}
	return nil
}

// fileMode is the mode a bundle file gets: the binaries under server/ are
// executable, the rest (server/assets too) is not.
func fileMode(name string) os.FileMode {
	if strings.HasPrefix(name, "server/") && !strings.HasPrefix(name, assetsDir) {
		return 0o755
	}
	return 0o644
}

// runCLI runs the mcpb command; its output is shown only when it fails.
func runCLI(ctx context.Context, cli string, args ...string) error {
	cmd := exec.CommandContext(ctx, cli, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mcpb: %s %s: %v\n%s", filepath.Base(cli), strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// checkPacked has mcpb unpack the written bundle and validate the manifest
// it finds there, and checks that the unpacked files are the bundle's,
// byte for byte and with their modes.
func checkPacked(ctx context.Context, cli, bundle, dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("mcpb: %w", err)
	}
	if err := runCLI(ctx, cli, "unpack", bundle, dir); err != nil {
		return err
	}
	if err := runCLI(ctx, cli, "validate", filepath.Join(dir, "manifest.json")); err != nil {
		return err
	}
	var got []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		got = append(got, name)
		want, ok := files[name]
		if !ok {
			return fmt.Errorf("mcpb unpack gave %s, which the bundle should not hold", name)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, want) {
			return fmt.Errorf("mcpb unpack gave %s with other contents than were packed", name)
		}
		if fi, err := d.Info(); err != nil {
			return err
		} else if os.PathSeparator == '/' && fi.Mode().Perm() != fileMode(name) {
			return fmt.Errorf("mcpb unpack gave %s with mode %v, want %v", name, fi.Mode().Perm(), fileMode(name))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mcpb: checking %s: %w", bundle, err)
	}
	if len(got) != len(files) {
		return fmt.Errorf("mcpb: checking %s: unpacked %d files, packed %d", bundle, len(got), len(files))
	}
	return nil
}
