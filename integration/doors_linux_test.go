package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// caller is a client of one server (stdio) or of one user of it (HTTP).
type caller interface {
	call(tool string, args map[string]any) *mcp.CallToolResult
}

// Code in a sandboxed kernel tries the doors the server itself opens, and
// none leads out, with the server run as root and as an unprivileged user
// (nobody, with a tokens file, as the review that found them did):
//   - an interpreter the kernel wrote, named to create_session, is refused
//     without being run, by the session and by the warm pool;
//   - create_session refuses connection_file, so the server never dials the
//     listener a kernel-written connection file names, and its answer is
//     the same for a missing file, a file that is not JSON and a JSON file
//     of the wrong shape outside the session's folder.
func TestSandboxDoors(t *testing.T) {
	requireBwrap(t)
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		marker := filepath.Join(t.TempDir(), "ran-on-host")
		s := startServer(t, "--sandbox", "--pool-size", "1")
		sandboxDoors(t, s, marker, t.TempDir())
	})
	t.Run("nobody", func(t *testing.T) {
		t.Parallel()
		if os.Getuid() != 0 {
			t.Skip("needs root to start the server as nobody")
		}
		u := startAsNobody(t)
		sandboxDoors(t, u.client, u.marker, u.outside)
	})
}

// sandboxDoors is TestSandboxDoors against one server: marker is a host
// file the kernel's script would write if it ran on the host (the sandbox
// cannot reach it), outside a host folder outside the session's tree.
func sandboxDoors(t *testing.T, c caller, marker, outside string) {
	// The kernel writes a python that records where it runs, then runs
	// the real one.
	res := c.call("run_code", map[string]any{"code": fmt.Sprintf(`import os, sys
os.makedirs('evil/bin', exist_ok=True)
p = os.path.abspath('evil/bin/python')
open(p, 'w').write('#!/bin/sh\necho "$(id -u) $*" >> %s\nexec ' + sys.executable + ' "$@"\n')
os.chmod(p, 0o755)
print(p)`, marker)})
	if res.IsError {
		t.Fatal(text(res))
	}
	evil := strings.TrimSpace(structured[runOutput](t, res).Stdout)
	if !filepath.IsAbs(evil) {
		t.Fatalf("the kernel's script: %q", evil)
	}
	res = c.call("create_session", map[string]any{"session_id": "evil", "python": evil})
	if !res.IsError || !strings.Contains(text(res), "not one of the interpreters this server runs under --sandbox") {
		t.Errorf("create_session with the kernel's python: %s", text(res))
	}
	// run_code on the refused session, and the pool that would refill
	// with that kind, run nothing either.
	c.call("run_code", map[string]any{"session_id": "evil", "code": "1"})
	deadline := time.Now().Add(60 * time.Second)
	type poolState struct {
		Pool struct {
			Starting int `json:"starting"`
		} `json:"pool"`
	}
	for {
		ls := structured[poolState](t, c.call("list_sessions", nil))
		if ls.Pool.Starting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the kernel's python ran on the host: %s", b)
	}
	// list_kernels lists (and runs) only the interpreters fixed at start.
	if res := c.call("list_kernels", nil); strings.Contains(text(res), evil) {
		t.Errorf("list_kernels lists the kernel's python: %s", text(res))
	}

	// A connection file the kernel writes, naming a listener on the host.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var dialled atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			conn.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res = c.call("run_code", map[string]any{"code": fmt.Sprintf(`import json, os
p = os.path.abspath('kernel-x.json')
json.dump({"transport": "tcp", "ip": "127.0.0.1", "shell_port": %d, "iopub_port": %d, "stdin_port": %d, "control_port": %d, "hb_port": %d, "key": "k", "signature_scheme": "hmac-sha256"}, open(p, 'w'))
print(p)`, port, port, port, port, port)})
	if res.IsError {
		t.Fatal(text(res))
	}
	cf := strings.TrimSpace(structured[runOutput](t, res).Stdout)
	notJSON, wrongJSON := filepath.Join(outside, "notes.txt"), filepath.Join(outside, "config.json")
	if err := os.WriteFile(notJSON, []byte("user = someone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongJSON, []byte(`{"user": "someone"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for i, p := range []string{cf, filepath.Join(outside, "id_rsa"), notJSON, wrongJSON} {
		res := c.call("create_session", map[string]any{"session_id": fmt.Sprintf("att%d", i), "connection_file": p})
		if !res.IsError || !strings.Contains(text(res), "connection_file cannot be used under --sandbox") {
			t.Errorf("create_session {connection_file: %s}: %s", p, text(res))
		}
		answers = append(answers, text(res))
	}
	for i, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("the answers tell files apart:\n%s\n%s", answers[0], answers[i+1])
		}
	}
	ln.Close()
	if n := dialled.Load(); n > 0 {
		t.Errorf("the server dialled the kernel's listener %d times", n)
	}
}

// nobodyServer is a --sandbox --tokens-file server run as nobody.
type nobodyServer struct {
	client  *userClient
	marker  string // a file only nobody, on the host, could write
	outside string // a folder outside the user's tree
}

// startAsNobody starts the binary as nobody (uid 65534), with a home and
// state folder of its own, an interpreter it can run (the test's python
// reaches ipykernel only through root's home, so its install is linked
// into a readable folder), and a tokens file; and connects as its user.
func startAsNobody(t *testing.T) nobodyServer {
	t.Helper()
	const uid, gid = 65534, 65534
	root, err := os.MkdirTemp("", "kernel-mcp-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.base_prefix)").Output()
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSpace(string(out))
	py := filepath.Join(root, "py")
	if out, err := exec.Command("cp", "-al", prefix, py).CombinedOutput(); err != nil {
		t.Fatalf("linking %s for nobody: %v\n%s", prefix, err, out)
	}
	bin := filepath.Join(root, "kernel-mcp")
	if err := os.Link(binary, bin); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	home, markers, outside := mk("home"), mk("markers"), mk("outside")
	const token = "nobody-token-0123456789abcdef"
	tokens := filepath.Join(home, "tokens")
	if err := os.WriteFile(tokens, []byte("user "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tokens, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--transport", "streamable-http", "--port", "0", "--sandbox", "--pool-size", "1",
		"--tokens-file", tokens, "--state-dir", filepath.Join(home, "state"), "--python", filepath.Join(py, "bin", "python3"))
	cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Join(py, "bin") + ":/usr/bin:/bin", "LD_LIBRARY_PATH=" + filepath.Join(py, "lib")}
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	url := startHTTPCmd(t, cmd)
	return nobodyServer{client: connectUser(t, url, token), marker: filepath.Join(markers, "ran-on-host"), outside: outside}
}

// startHTTPCmd is startHTTPServer for a command of the caller's.
func startHTTPCmd(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interruptSignal)
		cmd.Wait()
	})
	log := &lockedBuffer{}
	urlc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving streamable-http at (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
				break
			}
		}
		io.Copy(log, stderr)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case u := <-urlc:
		return u
	case <-ctx.Done():
		t.Fatalf("the server did not start listening:\n%s", log.String())
		return ""
	}
}

// With --tokens-file and no sandbox, connection_file is refused too, the
// same way whatever the path names: it could be another user's kernel.
func TestUsersNoConnectionFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const token = "alice-token-0123456789abcdef"
	if err := os.WriteFile(tokens, []byte("alice "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON, wrongJSON := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "config.json")
	os.WriteFile(notJSON, []byte("user = someone\n"), 0o644)
	os.WriteFile(wrongJSON, []byte(`{"user": "someone"}`), 0o644)
	alice := connectUser(t, startHTTPServer(t, "--tokens-file", tokens, "--pool-size", "0"), token)
	var answers []string
	for i, p := range []string{filepath.Join(dir, "id_rsa"), notJSON, wrongJSON} {
		res := alice.call("create_session", map[string]any{"session_id": "att" + strconv.Itoa(i), "connection_file": p})
		if !res.IsError || !strings.Contains(text(res), "several users") {
			t.Errorf("create_session {connection_file: %s}: %s", p, text(res))
		}
		answers = append(answers, text(res))
	}
	for i, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("the answers tell files apart:\n%s\n%s", answers[0], answers[i+1])
		}
	}
}
