package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The release folder holds exactly the contract's files, and SHA256SUMS
// names each of them with its hash.
func TestReleaseFiles(t *testing.T) {
	out := built(t)
	v := version(t)
	t.Logf("release build: %s\n%s", shared.took.Round(time.Millisecond), shared.log.String())
	want := []string{"SHA256SUMS"}
	for _, p := range platforms {
		ext := ".tar.gz"
		if p.GOOS == "windows" {
			ext = ".zip"
		}
		want = append(want, fmt.Sprintf("kernel-mcp_%s_%s_%s%s", v, p.GOOS, p.GOARCH, ext))
	}
	for _, w := range wheelTags {
		want = append(want, fmt.Sprintf("kernel_mcp-%s-py3-none-%s.whl", v, w.Tag))
	}
	bundle := "kernel-mcp-" + v + ".mcpb"
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Name() == bundle { // once internal/mcpb builds it
			continue
		}
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("release files:\n%q\nwant (besides %s):\n%q", got, bundle, want)
	}

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", line)
		}
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s is %x, listed as %s", name, h, sum)
		}
		listed = append(listed, name)
	}
	var files []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			files = append(files, e.Name())
		}
	}
	if !slices.Equal(listed, files) {
		t.Errorf("SHA256SUMS lists %q, want every other release file, sorted: %q", listed, files)
	}

	// Sizes, for the README's table.
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			t.Logf("size %-52s %5.1f MB", e.Name(), float64(info.Size())/1e6)
		}
	}
}

// checkBinary reads an executable's format and architecture (ELF:
// linux, Mach-O: darwin, PE: windows) and checks how Go built it.
func checkBinary(t *testing.T, what string, b []byte, want platform) {
	t.Helper()
	var goos, goarch string
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		goos = "linux"
		switch f.Machine {
		case elf.EM_X86_64:
			goarch = "amd64"
		case elf.EM_AARCH64:
			goarch = "arm64"
		default:
			goarch = f.Machine.String()
		}
	} else if f, err := macho.NewFile(r); err == nil {
		goos = "darwin"
		switch f.Cpu {
		case macho.CpuAmd64:
			goarch = "amd64"
		case macho.CpuArm64:
			goarch = "arm64"
		default:
			goarch = f.Cpu.String()
		}
		// The wheel tags say macOS 12 (Go 1.25 and later need it): the
		// binary must not need a newer one.
		if minos := machoMinOS(f); minos == 0 || minos > 12<<16 {
			t.Errorf("%s: needs macOS %d.%d (LC_BUILD_VERSION), above the tag's 12.0", what, minos>>16, minos>>8&0xff)
		}
	} else if f, err := pe.NewFile(r); err == nil {
		goos = "windows"
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			goarch = "amd64"
		default:
			goarch = fmt.Sprintf("PE machine %#x", f.Machine)
		}
	} else {
		t.Errorf("%s: neither ELF, Mach-O nor PE", what)
		return
	}
	if goos != want.GOOS || goarch != want.GOARCH {
		t.Errorf("%s holds a %s/%s binary, want %s/%s", what, goos, goarch, want.GOOS, want.GOARCH)
	}
	bi, err := buildinfo.Read(r)
	if err != nil {
		t.Errorf("%s: no Go build info: %v", what, err)
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	// -trimpath keeps -ldflags out of the build info; --version shows
	// main.version (the install tests).
	for k, v := range map[string]string{"GOOS": want.GOOS, "GOARCH": want.GOARCH, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != v {
			t.Errorf("%s: built with %s=%q, want %q", what, k, settings[k], v)
		}
	}
	if rev, ok := settings["vcs.revision"]; ok {
		t.Errorf("%s: records VCS revision %s: want -buildvcs=false", what, rev)
	}
	if bi.Path != "github.com/kernel-mcp/kernel-mcp/cmd/kernel-mcp" {
		t.Errorf("%s: built from %q, want cmd/kernel-mcp", what, bi.Path)
	}
}

// machoMinOS is the minimum macOS of LC_BUILD_VERSION (xxxx.yy.zz in
// nibbles), 0 if there is none.
func machoMinOS(f *macho.File) uint32 {
	const lcBuildVersion = 0x32
	for _, l := range f.Loads {
		raw := l.Raw()
		// cmd, cmdsize, platform, minos, ...
		if len(raw) >= 16 && f.ByteOrder.Uint32(raw) == lcBuildVersion {
			return f.ByteOrder.Uint32(raw[12:16])
		}
	}
	return 0
}

// Every wheel holds the binary its tag names, as a script, and says it is
// not pure Python.
func TestWheels(t *testing.T) {
	out := built(t)
	v := version(t)
	for _, w := range wheelTags {
		t.Run(w.Tag, func(t *testing.T) {
			name := fmt.Sprintf("kernel_mcp-%s-py3-none-%s.whl", v, w.Tag)
			z, err := zip.OpenReader(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			script := fmt.Sprintf("kernel_mcp-%s.data/scripts/%s", v, w.exe())
			info := fmt.Sprintf("kernel_mcp-%s.dist-info/", v)
			wantNames := []string{script, info + "METADATA", info + "WHEEL", info + "RECORD"}
			var names []string
			files := map[string][]byte{}
			for _, f := range z.File {
				names = append(names, f.Name)
				b := read(t, f)
				files[f.Name] = b
				if d := f.Modified.Sub(shared.epoch); d < -2*time.Second || d > 2*time.Second {
					t.Errorf("%s: %s dated %s, want SOURCE_DATE_EPOCH %s", name, f.Name, f.Modified, shared.epoch)
				}
				if f.Name == script && f.Mode().Perm() != 0o755 {
					t.Errorf("%s: %s has mode %v, want 0755", name, script, f.Mode())
				}
			}
			if !slices.Equal(names, wantNames) {
				t.Errorf("%s holds %q, want %q", name, names, wantNames)
			}
			wheel := string(files[info+"WHEEL"])
			for _, line := range []string{"Root-Is-Purelib: false\n", "Tag: py3-none-" + w.Tag + "\n"} {
				if !strings.Contains(wheel, line) {
					t.Errorf("%s: WHEEL lacks %q:\n%s", name, line, wheel)
				}
			}
			meta := string(files[info+"METADATA"])
			if !strings.Contains(meta, "\nName: kernel-mcp\n") || !strings.Contains(meta, "\nVersion: "+v+"\n") {
				t.Errorf("%s: METADATA does not name kernel-mcp %s:\n%s", name, v, meta)
			}
			checkBinary(t, name, files[script], w.platform)
		})
	}
}

// Every archive holds the binary its name says, at mode 0755, with the
// README, in sorted entries owned by 0:0 and dated SOURCE_DATE_EPOCH.
func TestArchives(t *testing.T) {
	out := built(t)
	v := version(t)
	for _, p := range platforms {
		t.Run(p.String(), func(t *testing.T) {
			base := fmt.Sprintf("kernel-mcp_%s_%s_%s", v, p.GOOS, p.GOARCH)
			type entry struct {
				name    string
				mode    os.FileMode
				modTime time.Time
				data    []byte
			}
			var entries []entry
			if p.GOOS == "windows" {
				z, err := zip.OpenReader(filepath.Join(out, base+".zip"))
				if err != nil {
					t.Fatal(err)
				}
				defer z.Close()
				for _, f := range z.File {
					entries = append(entries, entry{f.Name, f.Mode(), f.Modified, read(t, f)})
				}
			} else {
				f, err := os.Open(filepath.Join(out, base+".tar.gz"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				gz, err := gzip.NewReader(f)
				if err != nil {
					t.Fatal(err)
				}
				if !gz.ModTime.IsZero() || gz.Name != "" {
					t.Errorf("gzip header has name %q, time %s: want neither", gz.Name, gz.ModTime)
				}
				tr := tar.NewReader(gz)
				for {
					h, err := tr.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.Typeflag != tar.TypeReg {
						t.Errorf("%s: owner %d:%d (%q:%q), type %c; want a plain file of 0:0", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.Typeflag)
					}
					b, err := io.ReadAll(tr)
					if err != nil {
						t.Fatal(err)
					}
					entries = append(entries, entry{h.Name, h.FileInfo().Mode(), h.ModTime, b})
				}
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.name)
				if !e.modTime.Equal(shared.epoch) {
					t.Errorf("%s dated %s, want %s", e.name, e.modTime, shared.epoch)
				}
				wantMode := os.FileMode(0o644)
				if e.name == p.exe() {
					wantMode = 0o755
					checkBinary(t, base+"/"+e.name, e.data, p)
					t.Logf("size binary %s %5.1f MB", p, float64(len(e.data))/1e6)
				}
				if e.mode.Perm() != wantMode || !e.mode.IsRegular() {
					t.Errorf("%s: mode %v, want %v", e.name, e.mode, wantMode)
				}
			}
			want := []string{"README.md", p.exe()}
			if _, err := os.Stat(filepath.Join(repoRoot(t), "LICENSE")); err == nil {
				want = []string{"LICENSE", "README.md", p.exe()}
			}
			if !slices.Equal(names, want) {
				t.Errorf("%s holds %q, want %q", base, names, want)
			}
		})
	}
}

func read(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
