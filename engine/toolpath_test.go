package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// A path checked under the sandbox does its I/O through the folder it was
// found in: a folder of it swapped for a symlink that leads out after the
// check makes the read or write fail, saying so, and nothing outside is
// written or read.
func TestToolPathRefusesSymlinkSwappedIn(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(root, "work")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(work, "out"), filepath.Join(work, "in"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "in", "code.py"), []byte("INSIDE"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "code.py"), []byte("OUTSIDE"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &Engine{cfg: Config{Sandbox: &kernel.SandboxOptions{}}, workDir: work}
	ss := &Session{eng: srv}

	// Checked while the folders are real, used after they are links.
	w, err := ss.ResolvePath("out/deeper/x.txt", WriteAccess)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ss.ResolvePath("in/code.py", ReadAccess)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile("run", 0); err != nil || string(b) != "INSIDE" {
		t.Fatalf("read before the swap: %q, %v", b, err)
	}
	for _, d := range []string{"out", "in"} {
		if err := os.Rename(filepath.Join(work, d), filepath.Join(work, d+".away")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile([]byte("LEAK"), 0o666); err == nil || !strings.Contains(err.Error(), "leads outside") || !strings.Contains(err.Error(), "--sandbox") {
		t.Errorf("write through the swapped link: %v", err)
	}
	if b, err := r.ReadFile("run", 0); err == nil || !strings.Contains(err.Error(), "leads outside") || strings.Contains(string(b), "OUTSIDE") {
		t.Errorf("read through the swapped link: %q, %v", b, err)
	}
	if err := r.CheckFile("load", 0); err == nil || !strings.Contains(err.Error(), "leads outside") {
		t.Errorf("check through the swapped link: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside after the writes: %v", ents)
	}

	// A link within the working directory is followed.
	os.Remove(filepath.Join(work, "out"))
	if err := os.Symlink("out.away", filepath.Join(work, "out")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("OK"), 0o666); err != nil {
		t.Errorf("write through a link inside: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.away", "deeper", "x.txt")); string(b) != "OK" {
		t.Errorf("written through a link inside: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(work, "out.away", "deeper")); len(ents) != 1 {
		t.Errorf("a temporary file was left behind: %v", ents)
	}
}

// A read under an allowed folder that holds what is hidden, where a folder
// of the path is swapped after the check for a link into the hidden part,
// is refused: the file opened is checked again. The kernels' runtime dirs
// are hidden as well (a kernel writes in its own, under an allowed /tmp).
func TestToolPathKeepsHiddenUnderAllowedFolder(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	shared := filepath.Join(root, "shared")
	secret := filepath.Join(shared, "secret")
	runtime := filepath.Join(shared, "runtime")
	work := filepath.Join(root, "work")
	for _, d := range []string{filepath.Join(shared, "d"), secret, work, filepath.Join(runtime, "kernel-1")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for f, content := range map[string]string{
		filepath.Join(shared, "d", "f"):                   "SHOWN",
		filepath.Join(secret, "f"):                        "SECRET",
		filepath.Join(runtime, "kernel-1", "kernel.json"): "KEY",
	} {
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KERNEL_MCP_RUNTIME_DIR", runtime)
	srv := &Engine{cfg: Config{Sandbox: &kernel.SandboxOptions{ReadOnly: []string{shared}, Hide: []string{secret}}}, workDir: work}
	ss := &Session{eng: srv}

	if got, err := ss.ResolvePath(filepath.Join(runtime, "kernel-1", "kernel.json"), ReadAccess); err == nil || !strings.Contains(err.Error(), "hides") {
		t.Errorf("a kernel's runtime dir: %v, %v; want a refusal saying it is hidden", got, err)
	}
	p, err := ss.ResolvePath(filepath.Join(shared, "d", "f"), ReadAccess)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := p.ReadFile("run", 0); err != nil || string(b) != "SHOWN" {
		t.Fatalf("before the swap: %q, %v", b, err)
	}
	if err := os.Rename(filepath.Join(shared, "d"), filepath.Join(shared, "d.away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", filepath.Join(shared, "d")); err != nil {
		t.Fatal(err)
	}
	if b, err := p.ReadFile("run", 0); err == nil || !strings.Contains(err.Error(), "hides") || strings.Contains(string(b), "SECRET") {
		t.Errorf("read through a link into the hidden folder: %q, %v", b, err)
	}
	if err := p.CheckFile("load", 0); err == nil || !strings.Contains(err.Error(), "hides") {
		t.Errorf("check through a link into the hidden folder: %v", err)
	}
}
