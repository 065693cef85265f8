package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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
	for _, l := range sandboxLegs(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			home, outside := l.dir(t, "home"), l.dir(t, "outside")
			// Under /tmp, which every sandbox hides: only a program run
			// on the host as the server's user can write it.
			marker := filepath.Join(l.dir(t, "markers"), "ran-on-host")
			state := filepath.Join(home, "state")
			if l.uid == 0 {
				sandboxDoors(t, l.startServer(t, home, home, "--sandbox", "--pool-size", "1", "--state-dir", state), marker, outside)
				return
			}
			const token = "nobody-token-0123456789abcdef"
			tokens := filepath.Join(home, "tokens")
			l.file(t, tokens, "user "+token+"\n", 0o600)
			url := l.startHTTP(t, home, "--sandbox", "--pool-size", "1", "--tokens-file", tokens, "--state-dir", state)
			sandboxDoors(t, connectUser(t, url, token), marker, outside)
		})
	}
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
