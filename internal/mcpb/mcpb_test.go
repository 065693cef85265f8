package mcpb

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/assets"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binaries are kernel-mcp built once for the bundle's platforms (TestMain);
// buildError is why they could not be, which fails every test that needs
// them.
var (
	binaries   map[string]string
	buildError error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpb-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaries, buildError = buildBinaries(dir)
	// No goroutine (of the in-process server that lists the tools) or
	// kernel outlives the tests.
	code := ipytest.Main(m, "mcpb")
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinaries cross-builds cmd/kernel-mcp as the release does for the
// bundle: with the assets tag.
func buildBinaries(dir string) (map[string]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range NeededBinaries {
		goos, goarch, _ := strings.Cut(k, "-")
		name := filepath.Join(dir, k, "kernel-mcp")
		if goos == "windows" {
			name += ".exe"
		}
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", assets.BuildTag, "-ldflags", "-s -w -buildid= -X main.version=0.0.1-test", "-o", name, "./cmd/kernel-mcp")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", k, err, b)
		}
		out[k] = name
	}
	return out, nil
}

func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(b))), nil
}

// need skips (or under CI=true fails) a test whose dependency is missing.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed: %v", what, err)
	}
	t.Skipf("%s is needed: %v", what, err)
}

// mcpbCLI is the mcpb command: $KERNEL_MCP_TEST_MCPB, else the one
// packaging/mcpb installs (npm ci there).
func mcpbCLI(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("node")
	need(t, "node", err)
	cli := os.Getenv("KERNEL_MCP_TEST_MCPB")
	if cli == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		cli = filepath.Join(root, "packaging", "mcpb", "node_modules", ".bin", "mcpb")
	}
	_, err = os.Stat(cli)
	need(t, "the mcpb CLI (npm ci in packaging/mcpb, or KERNEL_MCP_TEST_MCPB)", err)
	return cli
}

// mcpbPackage is the directory of the @anthropic-ai/mcpb package the CLI
// belongs to: the nearest one above the CLI's script with a package.json.
func mcpbPackage(t *testing.T, cli string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(cli)
	if err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d
		}
	}
	t.Fatalf("no package.json above %s", p)
	return ""
}

var epoch = time.Date(2026, 11, 30, 12, 34, 56, 0, time.UTC)

// assetPaths are the repository's assets, as the release build gives them.
func assetPaths(t *testing.T) map[string]string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range assets.Files {
		m[f.Name] = filepath.Join(root, filepath.FromSlash(f.Source))
	}
	return m
}

// build builds the bundle into a fresh directory and returns its path.
func build(t *testing.T, cli string) string {
	t.Helper()
	if buildError != nil {
		t.Fatal(buildError)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "dist", "kernel-mcp-0.0.1.mcpb")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := Build(ctx, Options{Version: "0.0.1", Binaries: binaries, Assets: assetPaths(t), Out: out, Work: filepath.Join(dir, "work"), CLI: cli, Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	return out
}

// readBundle reads every entry of a bundle.
func readBundle(t *testing.T, path string) (map[string][]byte, map[string]*zip.File) {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, entries := map[string][]byte{}, map[string]*zip.File{}
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		data[f.Name], entries[f.Name] = b, f
	}
	return data, entries
}

// bundleManifest is the part of manifest.json the tests read.
type bundleManifest struct {
	ManifestVersion string `json:"manifest_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	Icon            string `json:"icon"`
	Server          struct {
		Type       string `json:"type"`
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			Command           string            `json:"command"`
			Args              []string          `json:"args"`
			Env               map[string]string `json:"env"`
			PlatformOverrides map[string]struct {
				Command string `json:"command"`
			} `json:"platform_overrides"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools          []tool `json:"tools"`
	ToolsGenerated *bool  `json:"tools_generated"`
	Compatibility  struct {
		Platforms []string `json:"platforms"`
	} `json:"compatibility"`
	UserConfig map[string]struct {
		Type     string `json:"type"`
		Required bool   `json:"required"`
		Default  any    `json:"default"`
	} `json:"user_config"`
}

// TestBundle builds the bundle twice, from two directories, and checks
// what Claude Desktop relies on: a manifest mcpb accepts, one binary per
// platform of the right format at the path its command names, the assets
// once beside them (which the binary finds, and without which it does not
// start), the server's own tools, the three settings, and identical bytes.
func TestBundle(t *testing.T) {
	cli := mcpbCLI(t)
	first := build(t, cli)
	second := build(t, cli)
	a, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two builds differ: %d and %d bytes", len(a), len(b))
	}

	files, entries := readBundle(t, first)
	var m bundleManifest
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	// The bundle as mcpb unpacks it, as Claude Desktop installs it.
	unpacked := unpack(t, cli, first)

	t.Run("validates", func(t *testing.T) {
		// validate checks the icon beside the manifest too.
		dir := t.TempDir()
		if out, err := exec.Command(cli, "unpack", first, dir).CombinedOutput(); err != nil {
			t.Fatalf("mcpb unpack: %v\n%s", err, out)
		}
		if out, err := exec.Command(cli, "validate", filepath.Join(dir, "manifest.json")).CombinedOutput(); err != nil {
			t.Fatalf("mcpb validate: %v\n%s", err, out)
		}
		if m.ManifestVersion != "0.3" || m.Name != "kernel-mcp" || m.Version != "0.0.1" || m.Server.Type != "binary" {
			t.Errorf("manifest: version %q, name %q, bundle version %q, server type %q", m.ManifestVersion, m.Name, m.Version, m.Server.Type)
		}
	})

	t.Run("binaries", func(t *testing.T) {
		if !slices.Equal(m.Compatibility.Platforms, []string{"darwin", "win32", "linux"}) {
			t.Errorf("platforms %v", m.Compatibility.Platforms)
		}
		named := map[string]bool{"manifest.json": true}
		for _, platform := range m.Compatibility.Platforms {
			o, ok := m.Server.MCPConfig.PlatformOverrides[platform]
			if !ok {
				t.Errorf("no platform_overrides for %s", platform)
				continue
			}
			name, ok := strings.CutPrefix(o.Command, "${__dirname}/")
			if !ok {
				t.Errorf("%s command %q is not under ${__dirname}", platform, o.Command)
				continue
			}
			named[name] = true
			data, found := files[name]
			if !found {
				t.Errorf("%s command %s is not in the bundle", platform, name)
				continue
			}
			if mode := entries[name].Mode(); mode != 0o755 {
				t.Errorf("%s: mode %v, want -rwxr-xr-x", name, mode)
			}
			checkFormat(t, platform, data)
		}
		// The icon mcpb validate checked for being a PNG: 512 px square.
		named[m.Icon] = true
		if cfg, err := png.DecodeConfig(bytes.NewReader(files[m.Icon])); err != nil || cfg.Width != 512 || cfg.Height != 512 {
			t.Errorf("icon %q: %v, %dx%d, want a 512x512 PNG", m.Icon, err, cfg.Width, cfg.Height)
		} else if mode := entries[m.Icon].Mode(); mode != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", m.Icon, mode)
		}
		// The assets, once, beside the binaries; not executable.
		for name, path := range assetPaths(t) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bundled := assetsDir + name
			named[bundled] = true
			if !bytes.Equal(files[bundled], want) {
				t.Errorf("%s: %d bytes, want %s's %d", bundled, len(files[bundled]), path, len(want))
			} else if mode := entries[bundled].Mode(); mode != 0o644 {
				t.Errorf("%s: mode %v, want -rw-r--r--", bundled, mode)
			}
		}
		if ep := m.Server.EntryPoint; !named[ep] || m.Server.MCPConfig.Command != "${__dirname}/"+ep {
			t.Errorf("entry_point %q, command %q: not one of the platforms' binaries", ep, m.Server.MCPConfig.Command)
		}
		for name := range files {
			if !named[name] {
				t.Errorf("the bundle holds %s, which the manifest does not name", name)
			}
		}
		for name, f := range entries {
			if !f.Modified.Equal(epoch) {
				t.Errorf("%s: time %v, want %v", name, f.Modified, epoch)
			}
		}
	})

	t.Run("tools", func(t *testing.T) {
		if m.ToolsGenerated == nil || *m.ToolsGenerated {
			t.Errorf("tools_generated %v, want false", m.ToolsGenerated)
		}
		// What the linux binary itself lists with its defaults, over stdio.
		want := binaryTools(t, filepath.Join(unpacked, serverPaths["linux"]))
		if !slices.Equal(m.Tools, want) {
			t.Errorf("manifest tools differ from the binary's tools/list:\n got %v\nwant %v", names(m.Tools), names(want))
		}
	})

	t.Run("user_config", func(t *testing.T) {
		for key, want := range map[string]struct{ typ, env string }{
			"python":  {"file", "PYTHON_MCP_INTERPRETER"},
			"workdir": {"directory", "KERNEL_MCP_WORKDIR"},
			"timeout": {"number", "KERNEL_MCP_TIMEOUT"},
		} {
			c, ok := m.UserConfig[key]
			if !ok {
				t.Errorf("no user_config %s", key)
				continue
			}
			if c.Type != want.typ || c.Required {
				t.Errorf("user_config %s: type %q required %v, want %q, optional", key, c.Type, c.Required, want.typ)
			}
			if got := m.Server.MCPConfig.Env[want.env]; got != "${user_config."+key+"}" {
				t.Errorf("env %s = %q, want ${user_config.%s}", want.env, got, key)
			}
		}
		if len(m.UserConfig) != 3 {
			t.Errorf("user_config has %d entries, want 3", len(m.UserConfig))
		}
		// Claude Desktop shows the settings in the object's order.
		text := string(files["manifest.json"])
		uc := text[strings.Index(text, `"user_config"`):]
		if p, w, tm := strings.Index(uc, `"python"`), strings.Index(uc, `"workdir"`), strings.Index(uc, `"timeout"`); !(p < w && w < tm) {
			t.Errorf("user_config order: python at %d, workdir at %d, timeout at %d", p, w, tm)
		}
	})

	// mcpb's own resolution of mcp_config, the code Claude Desktop uses:
	// settings left empty become empty variables (the server's "unset"),
	// never the literal ${user_config...}.
	t.Run("unset settings", func(t *testing.T) {
		cfg := hostConfig(t, cli, files["manifest.json"], "/bundle", map[string]any{})
		for k, want := range map[string]string{"PYTHON_MCP_INTERPRETER": "", "KERNEL_MCP_WORKDIR": "", "KERNEL_MCP_TIMEOUT": "0"} {
			if got, ok := cfg.Env[k]; !ok || got != want {
				t.Errorf("env %s = %q (set %v), want %q", k, got, ok, want)
			}
		}
		cfg = hostConfig(t, cli, files["manifest.json"], "/bundle", map[string]any{"python": "/opt/py/bin/python", "timeout": 30})
		if cfg.Env["PYTHON_MCP_INTERPRETER"] != "/opt/py/bin/python" || cfg.Env["KERNEL_MCP_TIMEOUT"] != "30" {
			t.Errorf("settings given: env %v", cfg.Env)
		}
		if runtime.GOOS == "linux" && cfg.Command != "/bundle/server/linux/kernel-mcp" {
			t.Errorf("linux command %q", cfg.Command)
		}
	})

	// The linux binary, unpacked by mcpb and started as mcp_config says with
	// an interpreter that lacks ipykernel, says in one line how to fix it.
	t.Run("python without ipykernel", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skip("runs the linux amd64 binary")
		}
		venv := filepath.Join(t.TempDir(), "venv")
		out, err := exec.Command("python3", "-m", "venv", "--without-pip", venv).CombinedOutput()
		need(t, "python3 -m venv", errorWith(err, out))
		python := filepath.Join(venv, "bin", "python")
		if exec.Command(python, "-c", "import ipykernel").Run() == nil {
			t.Fatal("the fresh venv has ipykernel")
		}
		cfg := hostConfig(t, cli, files["manifest.json"], unpacked, map[string]any{"python": python})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, cfg.Command, cfg.Args...)
		cmd.Env = withoutAssetsEnv("KERNEL_MCP_STATE_DIR=none")
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("exit: %v, want status 2", err)
		}
		msg := strings.TrimSuffix(stderr.String(), "\n")
		if msg == "" || strings.Contains(msg, "\n") || !strings.Contains(msg, "-m pip install ipykernel") {
			t.Errorf("stderr %q, want one line naming the command that installs ipykernel (-m pip install ipykernel)", stderr.String())
		}
	})

	// The linux binary, run from the unpacked bundle, serves the cell view
	// and the chart libraries from server/assets; through a symlink too,
	// since it looks beside the resolved executable.
	t.Run("assets", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skip("runs the linux amd64 binary")
		}
		bin := filepath.Join(unpacked, serverPaths["linux"])
		link := filepath.Join(t.TempDir(), "kernel-mcp")
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		paths := assetPaths(t)
		for _, exe := range []string{bin, link} {
			readResources(t, exe, map[string][]byte{
				"ui://kernel-mcp/cell.html":           readFile(t, paths["cell.html"]),
				"ui://kernel-mcp/charts/plotly.js.gz": readFile(t, paths["plotly.js.gz"]),
			})
		}
	})

	// Without its assets the binary does not start: one line names the
	// directory it looked in and what it lacks.
	t.Run("without assets", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skip("runs the linux amd64 binary")
		}
		dir := unpack(t, cli, first)
		resolved, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		assetsPath := filepath.Join(resolved, filepath.FromSlash(assetsDir))
		for _, c := range []struct {
			remove, want string
		}{
			{"web.html", "which lacks web.html;"},
			{"", "which does not exist"},
		} {
			if c.remove != "" {
				err = os.Remove(filepath.Join(assetsPath, c.remove))
			} else {
				err = os.RemoveAll(assetsPath)
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(ctx, filepath.Join(dir, serverPaths["linux"]))
			cmd.Env = withoutAssetsEnv("KERNEL_MCP_STATE_DIR=none", "KERNEL_MCP_POOL_SIZE=0")
			var stdout, stderr bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
			err = cmd.Run()
			cancel()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("%s: exit %v, want status 1", c.want, err)
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "kernel-mcp: ") || !strings.Contains(msg, assetsPath+" ") || !strings.Contains(msg, c.want) {
				t.Errorf("stderr %q, want one line naming %s and saying %q", stderr.String(), assetsPath, c.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		}
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readResources starts a kernel-mcp binary over stdio with its defaults
// and checks that each resource reads as the bytes given (a text
// resource's text, a blob's bytes).
func readResources(t *testing.T, bin string, want map[string][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Env = withoutAssetsEnv("KERNEL_MCP_POOL_SIZE=0", "KERNEL_MCP_STATE_DIR=none", "KERNEL_MCP_TOOLS=")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpb-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	defer cs.Close()
	for uri, w := range want {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Errorf("%s: resources/read %s: %v", bin, uri, err)
			continue
		}
		if len(rr.Contents) != 1 {
			t.Errorf("%s: resources/read %s: %d contents", bin, uri, len(rr.Contents))
			continue
		}
		got := rr.Contents[0].Blob
		if got == nil {
			got = []byte(rr.Contents[0].Text)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("%s: resources/read %s: %d bytes, want the asset's %d", bin, uri, len(got), len(w))
		}
	}
}

// unpack has mcpb unpack a bundle into a fresh directory.
func unpack(t *testing.T, cli, bundle string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(cli, "unpack", bundle, dir).CombinedOutput(); err != nil {
		t.Fatalf("mcpb unpack: %v\n%s", err, out)
	}
	return dir
}

// withoutAssetsEnv is the environment without KERNEL_MCP_ASSETS, so that a
// binary looks beside itself, plus the variables given.
func withoutAssetsEnv(more ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, assets.EnvVar+"=") })
	return append(env, more...)
}

func errorWith(err error, out []byte) error {
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func names(tools []tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// checkFormat checks that a bundled binary is the executable its platform
// runs: a universal Mach-O with amd64 and arm64 slices at 16 KiB-aligned
// offsets, each the built thin binary; a PE amd64 .exe; an ELF x86-64.
func checkFormat(t *testing.T, platform string, data []byte) {
	t.Helper()
	switch platform {
	case "darwin":
		f, err := macho.NewFatFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("darwin binary is not a universal Mach-O: %v", err)
		}
		defer f.Close()
		var cpus []macho.Cpu
		for _, a := range f.Arches {
			cpus = append(cpus, a.Cpu)
			if a.Offset%(1<<14) != 0 || a.Align != 14 {
				t.Errorf("%v slice at offset %d, align 2^%d: want 16 KiB alignment", a.Cpu, a.Offset, a.Align)
			}
			if a.Type != macho.TypeExec {
				t.Errorf("%v slice is a %v, not an executable", a.Cpu, a.Type)
			}
			thin, err := os.ReadFile(binaries[map[macho.Cpu]string{macho.CpuAmd64: "darwin-amd64", macho.CpuArm64: "darwin-arm64"}[a.Cpu]])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data[a.Offset:a.Offset+a.Size], thin) {
				t.Errorf("%v slice differs from the thin binary", a.Cpu)
			}
		}
		if !slices.Equal(cpus, []macho.Cpu{macho.CpuAmd64, macho.CpuArm64}) {
			t.Errorf("universal binary holds %v, want amd64 and arm64", cpus)
		}
	case "win32":
		f, err := pe.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("windows binary is not PE: %v", err)
		}
		if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("windows binary machine %#x, want amd64", f.Machine)
		}
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("linux binary is not ELF: %v", err)
		}
		if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
			t.Errorf("linux binary: %v %v, want an x86-64 executable", f.Machine, f.Type)
		}
	default:
		t.Errorf("unknown platform %s", platform)
	}
}

// binaryTools starts a kernel-mcp binary over stdio with its defaults and
// lists its tools.
func binaryTools(t *testing.T, bin string) []tool {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs the linux amd64 binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin)
	// No kernel is needed to list tools: no pool, no saved histories.
	cmd.Env = withoutAssetsEnv("KERNEL_MCP_POOL_SIZE=0", "KERNEL_MCP_STATE_DIR=none", "KERNEL_MCP_TOOLS=")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpb-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var out []tool
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool{Name: tl.Name, Description: tl.Description})
	}
	return out
}

// resolvedConfig is an MCP server entry as a host makes it from mcp_config.
type resolvedConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// hostConfig resolves the manifest's mcp_config for this platform with
// mcpb's getMcpConfigForManifest, the function Claude Desktop uses, for a
// bundle unpacked at dir and the given settings.
func hostConfig(t *testing.T, cli string, manifestJSON []byte, dir string, settings map[string]any) resolvedConfig {
	t.Helper()
	tmp := t.TempDir()
	index := filepath.Join(mcpbPackage(t, cli), "dist", "index.js")
	script := filepath.Join(tmp, "resolve.mjs")
	src := `import { readFileSync } from "fs";
import { getMcpConfigForManifest } from ` + jsString(index) + `;
const [manifest, dir, settings] = process.argv.slice(2);
const cfg = await getMcpConfigForManifest({
  manifest: JSON.parse(readFileSync(manifest, "utf8")),
  extensionPath: dir,
  systemDirs: { HOME: "/home/u", DESKTOP: "/home/u/Desktop", DOCUMENTS: "/home/u/Documents", DOWNLOADS: "/home/u/Downloads" },
  userConfig: JSON.parse(settings),
  pathSeparator: "/",
});
process.stdout.write(JSON.stringify(cfg));
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(tmp, "manifest.json")
	if err := os.WriteFile(mp, manifestJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, mp, dir, string(s)).Output()
	if err != nil {
		t.Fatalf("node resolve.mjs: %v\n%s", err, errorOutput(err))
	}
	var cfg resolvedConfig
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return cfg
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func errorOutput(err error) []byte {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return e.Stderr
	}
	return nil
}

// TestBuildRefusesWrongBinary: a binary for the wrong platform is a clear
// error naming it, and no bundle is written.
func TestBuildRefusesWrongBinary(t *testing.T) {
	if buildError != nil {
		t.Fatal(buildError)
	}
	wrong := map[string]string{}
	for k, v := range binaries {
		wrong[k] = v
	}
	wrong["darwin-arm64"] = binaries["darwin-amd64"]
	dir := t.TempDir()
	out := filepath.Join(dir, "k.mcpb")
	err := Build(context.Background(), Options{Version: "0.0.1", Binaries: wrong, Out: out, Work: dir, CLI: "/nonexistent/mcpb", Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "darwin-arm64") || !strings.Contains(err.Error(), "not darwin/arm64") {
		t.Errorf("Build with an amd64 binary as darwin-arm64: %v", err)
	}
	wrong["darwin-arm64"] = binaries["darwin-arm64"]
	delete(wrong, "windows-amd64")
	err = Build(context.Background(), Options{Version: "0.0.1", Binaries: wrong, Out: out, Work: dir, CLI: "/nonexistent/mcpb", Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "no windows-amd64 binary") {
		t.Errorf("Build without a windows binary: %v", err)
	}
	wrong["windows-amd64"] = binaries["windows-amd64"]
	// A binary that embeds its assets would carry them twice.
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	embedding := filepath.Join(dir, "embedding", "kernel-mcp")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -buildid=", "-o", embedding, "./cmd/kernel-mcp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	wrong["linux-amd64"] = embedding
	err = Build(context.Background(), Options{Version: "0.0.1", Binaries: wrong, Assets: assetPaths(t), Out: out, Work: dir, CLI: "/nonexistent/mcpb", Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "linux-amd64") || !strings.Contains(err.Error(), "without -tags "+assets.BuildTag) {
		t.Errorf("Build with a binary built without the assets tag: %v", err)
	}
	wrong["linux-amd64"] = binaries["linux-amd64"]
	missing := assetPaths(t)
	delete(missing, "web.html")
	err = Build(context.Background(), Options{Version: "0.0.1", Binaries: wrong, Assets: missing, Out: out, Work: dir, CLI: "/nonexistent/mcpb", Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "assets") {
		t.Errorf("Build without web.html among the assets: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Build left %s: %v", out, err)
	}
}

// TestMSDOSTime: the archive's only timestamp rounds down to two seconds
// and starts in 1980.
func TestMSDOSTime(t *testing.T) {
	for _, c := range []struct{ in, want time.Time }{
		{time.Date(2026, 11, 30, 12, 34, 57, 0, time.UTC), time.Date(2026, 11, 30, 12, 34, 56, 0, time.UTC)},
		{time.Unix(0, 0), time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		var fh zip.FileHeader
		//lint:ignore SA1019 the fields msDosTime fills
		fh.ModifiedDate, fh.ModifiedTime = msDosTime(c.in)
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		fh.Name = "f"
		if _, err := w.CreateRaw(&fh); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.File[0].Modified; !got.Equal(c.want) {
			t.Errorf("msDosTime(%v) reads back as %v, want %v", c.in, got, c.want)
		}
	}
}
