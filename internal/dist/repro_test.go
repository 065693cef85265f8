package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// git runs git in the repository and returns its output.
func git(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "git %q in the repository: %v", args, err)
	}
	return out
}

// A second build from a copy of the source at another path gives the same
// bytes. The copy holds the files git would commit (tracked, and new ones
// not ignored), so it has no .git: it gets the first build's epoch, as a
// release build from a tarball would get SOURCE_DATE_EPOCH. Both builds
// share this machine's Go build cache: a cached compile is the compile of
// the same inputs, and the binaries are linked anew each time.
func TestReproducibleFromAnotherFolder(t *testing.T) {
	out := built(t)
	root := repoRoot(t)
	tree := filepath.Join(t.TempDir(), "elsewhere", "kernel-mcp")
	for _, name := range strings.Split(string(git(t, "ls-files", "-z", "--cached", "--others", "--exclude-standard")), "\x00") {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tree, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	out2 := filepath.Join(t.TempDir(), "dist2")
	var log bytes.Buffer
	start := time.Now()
	if err := runDist(tree, out2, shared.epoch, &log); err != nil {
		t.Fatalf("the build from %s: %v\n%s", tree, err, log.String())
	}
	t.Logf("second build, warm Go build cache: %s", time.Since(start).Round(time.Millisecond))
	a, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out2, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("SHA256SUMS differ between the build in %s and the one in %s:\n%s\n---\n%s", root, tree, a, b)
	}
}

// go install module@v<VERSION> builds and reports that version. The
// module is served from a file:// proxy in a temporary folder, made the
// way the Go module proxy makes it from the tag: a zip of the committed
// tree at HEAD (not the working tree: commit first), which has no nested
// module and is far under the module zip's size limits, plus its .info
// and .mod. Dependencies come from this machine's module cache, offline;
// the module cache is a temporary one, so the fake version never reaches
// the real one.
func TestGoInstall(t *testing.T) {
	v := "v" + version(t)
	const module = "github.com/kernel-mcp/kernel-mcp"
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "proxy", module, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, "archive", "--format=zip", "--prefix="+module+"@"+v+"/", "-o", filepath.Join(dir, v+".zip"), "HEAD")
	gomod := git(t, "show", "HEAD:go.mod")
	info, _ := json.Marshal(map[string]string{
		"Version": v,
		"Time":    strings.TrimSpace(string(git(t, "log", "-1", "--format=%cI", "HEAD"))),
	})
	for name, b := range map[string][]byte{v + ".mod": gomod, v + ".info": info, "list": []byte(v + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", "install", module+"/cmd/kernel-mcp@"+v)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.Join(tmp, "proxy")+",file://"+filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download"),
		"GOSUMDB=off", "GONOSUMDB="+module, "GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOBIN="+gobin,
		// -trimpath and no cgo: the compiles of the release build, cached.
		"CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/kernel-mcp@%s: %v\n%s", module, v, err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "kernel-mcp"), "--version").CombinedOutput()
	if err != nil || string(out) != "kernel-mcp "+v+"\n" {
		t.Errorf("the go-installed kernel-mcp --version: %q, %v; want %q", out, err, "kernel-mcp "+v+"\n")
	}
}
