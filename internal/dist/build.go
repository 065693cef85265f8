package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
	"github.com/kernel-mcp/kernel-mcp/internal/mcpb"
)

// options are one build's inputs.
type options struct {
	Root   string    // the repository (absolute)
	Out    string    // where the release files go
	Work   string    // scratch folder, kept; "" for a temporary one
	Python string    // a Python with hatchling
	MCPB   string    // the mcpb command
	Epoch  time.Time // every archive entry's timestamp
	Log    io.Writer // progress lines
}

// platform is one target of the Go build.
type platform struct{ GOOS, GOARCH string }

func (p platform) String() string { return p.GOOS + "-" + p.GOARCH }

// exe is the binary's name on the platform.
func (p platform) exe() string {
	if p.GOOS == "windows" {
		return "kernel-mcp.exe"
	}
	return "kernel-mcp"
}

// platforms are the binaries a release holds.
var platforms = []platform{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"},
}

// wheelTags maps each wheel's platform tag to the binary it holds. Go 1.26
// needs macOS 12 and builds static Linux binaries (CGO_ENABLED=0), which
// run on glibc and musl alike.
var wheelTags = []struct {
	Tag string
	platform
}{
	{"macosx_12_0_arm64", platform{"darwin", "arm64"}},
	{"macosx_12_0_x86_64", platform{"darwin", "amd64"}},
	{"manylinux_2_17_aarch64", platform{"linux", "arm64"}},
	{"manylinux_2_17_x86_64", platform{"linux", "amd64"}},
	{"musllinux_1_2_aarch64", platform{"linux", "arm64"}},
	{"musllinux_1_2_x86_64", platform{"linux", "amd64"}},
	{"win_amd64", platform{"windows", "amd64"}},
}

// minEpoch is 1980-01-01, the earliest time a zip entry can hold;
// defaultEpoch (2020-02-02, hatchling's own default) is the timestamp
// when there is neither SOURCE_DATE_EPOCH nor a git commit.
const (
	minEpoch     = 315532800
	defaultEpoch = 1580601600
)

func epochTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// commitTime is the commit time of root's HEAD, else defaultEpoch.
func commitTime(ctx context.Context, root string) time.Time {
	cmd := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return epochTime(defaultEpoch)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || sec < minEpoch {
		return epochTime(defaultEpoch)
	}
	return epochTime(sec)
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// readVersion reads root/VERSION: one line, MAJOR.MINOR.PATCH, no v.
func readVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSuffix(string(b), "\n")
	if !versionRE.MatchString(v) {
		return "", fmt.Errorf("VERSION holds %q: want one line MAJOR.MINOR.PATCH, such as 0.6.0 (no v)", v)
	}
	return v, nil
}

// ownOutput reports whether a file name in the out folder is one a build
// writes (of any version), so a new build may replace it.
func ownOutput(name string) bool {
	return name == "SHA256SUMS" || strings.HasPrefix(name, "kernel-mcp_") ||
		strings.HasPrefix(name, "kernel_mcp-") || strings.HasPrefix(name, "kernel-mcp-")
}

// cleanOut makes out an empty folder, removing earlier release files;
// anything else in it is left and reported, since SHA256SUMS would list it.
func cleanOut(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	var other []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !ownOutput(e.Name()) {
			other = append(other, e.Name())
			continue
		}
		if err := os.Remove(filepath.Join(out, e.Name())); err != nil {
			return err
		}
	}
	if len(other) > 0 {
		return fmt.Errorf("%s holds files that are not release files: %q; remove them or choose another -out", out, other)
	}
	return nil
}

func build(ctx context.Context, o options) (err error) {
	start := time.Now()
	version, err := readVersion(o.Root)
	if err != nil {
		return err
	}
	if msg, err := exec.CommandContext(ctx, o.Python, "-c", "import hatchling").CombinedOutput(); err != nil {
		return fmt.Errorf("-python %s cannot build the wheels: %v %s(make dist-venv installs hatchling)", o.Python, err, msg)
	}
	if err := cleanOut(o.Out); err != nil {
		return err
	}
	// Said before the build, not as a failed exec at its end.
	if _, err := os.Stat(o.MCPB); err != nil {
		return fmt.Errorf("the mcpb command, which packs the Claude Desktop bundle, is missing: %v (run `npm ci` in packaging/mcpb, or `make dist`, which does)", err)
	}
	if o.Work == "" {
		if o.Work, err = os.MkdirTemp("", "kernel-mcp-dist-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.Work)
	}
	fmt.Fprintf(o.Log, "dist: kernel-mcp %s, timestamps %s, into %s\n", version, o.Epoch.Format(time.RFC3339), o.Out)

	bins := map[string]string{}
	for _, p := range platforms {
		bin := filepath.Join(o.Work, "bin", p.String(), p.exe())
		if err := goBuild(ctx, o.Root, p, version, "", bin); err != nil {
			return err
		}
		bins[p.String()] = bin
	}
	// The bundle's binaries read the chart libraries and view pages from
	// the bundle's server/assets, which holds them once for all four.
	bundleBins := map[string]string{}
	for _, p := range platforms {
		if !slices.Contains(mcpb.NeededBinaries, p.String()) {
			continue // linux-arm64: the bundle has no command for it
		}
		bin := filepath.Join(o.Work, "bin-mcpb", p.String(), p.exe())
		if err := goBuild(ctx, o.Root, p, version, assets.BuildTag, bin); err != nil {
			return err
		}
		bundleBins[p.String()] = bin
	}
	fmt.Fprintf(o.Log, "dist: %d binaries built, %d more for the bundle (%s)\n", len(bins), len(bundleBins), time.Since(start).Round(time.Millisecond))

	docs := []string{"README.md"}
	if _, err := os.Stat(filepath.Join(o.Root, "LICENSE")); err == nil {
		docs = append(docs, "LICENSE")
	}
	for _, p := range platforms {
		files := []archiveFile{{Name: p.exe(), Path: bins[p.String()], Mode: 0o755}}
		for _, d := range docs {
			files = append(files, archiveFile{Name: d, Path: filepath.Join(o.Root, d), Mode: 0o644})
		}
		name := fmt.Sprintf("kernel-mcp_%s_%s_%s", version, p.GOOS, p.GOARCH)
		if p.GOOS == "windows" {
			err = writeZip(filepath.Join(o.Out, name+".zip"), files, o.Epoch)
		} else {
			err = writeTarGz(filepath.Join(o.Out, name+".tar.gz"), files, o.Epoch)
		}
		if err != nil {
			return err
		}
	}

	if err := buildWheels(ctx, o, version, bins); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "dist: archives and %d wheels written (%s)\n", len(wheelTags), time.Since(start).Round(time.Millisecond))

	if err := os.MkdirAll(filepath.Join(o.Work, "mcpb"), 0o755); err != nil {
		return err
	}
	assetPaths := map[string]string{}
	for _, f := range assets.Files {
		assetPaths[f.Name] = filepath.Join(o.Root, filepath.FromSlash(f.Source))
	}
	err = mcpb.Build(ctx, mcpb.Options{
		Version:  version,
		Binaries: bundleBins,
		Assets:   assetPaths,
		Out:      filepath.Join(o.Out, "kernel-mcp-"+version+".mcpb"),
		Work:     filepath.Join(o.Work, "mcpb"),
		CLI:      o.MCPB,
		Epoch:    o.Epoch,
	})
	if err != nil {
		return fmt.Errorf("the Claude Desktop bundle: %w", err)
	}

	if err := writeSums(o.Out); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "dist: done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// goBuild builds cmd/kernel-mcp for p into out, with the build tags given
// ("" for none). Only the flags here shape the binary: GOFLAGS and the
// architecture levels of the caller's environment are overridden, so the
// bytes depend on the source and the toolchain alone.
func goBuild(ctx context.Context, root string, p platform, version, tags, out string) error {
	args := []string{"build", "-trimpath", "-buildvcs=false"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-ldflags", "-s -w -buildid= -X main.version="+version, "-o", out, "./cmd/kernel-mcp")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.GOOS, "GOARCH="+p.GOARCH,
		"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", p, err, msg)
	}
	return nil
}

// buildWheels runs hatchling once per wheel tag, a few at a time, and
// moves each wheel into o.Out.
func buildWheels(ctx context.Context, o options, version string, bins map[string]string) error {
	project := filepath.Join(o.Root, "packaging", "python")
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	errs := make([]error, len(wheelTags))
	for i, w := range wheelTags {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := filepath.Join(o.Work, "wheel", w.Tag)
			name := fmt.Sprintf("kernel_mcp-%s-py3-none-%s.whl", version, w.Tag)
			cmd := exec.CommandContext(ctx, o.Python, "-m", "hatchling", "build", "-t", "wheel", "-d", dir)
			cmd.Dir = project
			cmd.Env = append(os.Environ(),
				"SOURCE_DATE_EPOCH="+strconv.FormatInt(o.Epoch.Unix(), 10),
				"KERNEL_MCP_WHEEL_BINARY="+bins[w.platform.String()],
				"KERNEL_MCP_WHEEL_TAG=py3-none-"+w.Tag,
				"PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in packaging/python
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("hatchling (%s) for the %s wheel: %v\n%s", o.Python, w.Tag, err, out)
				return
			}
			errs[i] = moveFile(filepath.Join(dir, name), filepath.Join(o.Out, name))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// moveFile renames, or copies when src and dst are on two file systems.
func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return err
	}
	return os.Remove(src)
}

// writeSums writes out/SHA256SUMS, in sha256sum's format, over every
// other file in out, sorted by name.
func writeSums(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "SHA256SUMS" {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var sums bytes.Buffer
	for _, name := range names {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), sums.Bytes(), 0o644)
}
