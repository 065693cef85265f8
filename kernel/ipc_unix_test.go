//go:build unix

package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wantPrivateIPC fails t unless ci names ipc sockets in dir, a 0700
// folder of this user's, and every socket is there. Any local user can
// connect to a port on 127.0.0.1 and read a PUB socket; only the owner
// (and root) can reach a socket in such a folder.
func wantPrivateIPC(t *testing.T, ci ConnectionInfo, dir string) {
	t.Helper()
	if ci.Transport != "ipc" || filepath.Dir(ci.IP) != dir {
		t.Fatalf("connection %s %s, want ipc sockets in %s", ci.Transport, ci.IP, dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.IsDir() || st.Mode().Perm() != 0o700 || !ok || int(sys.Uid) != os.Getuid() {
		t.Errorf("runtime dir %s: mode %v, want a 0700 folder of uid %d", dir, st.Mode(), os.Getuid())
	}
	for _, p := range []int{ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort} {
		ep := strings.TrimPrefix(ci.endpoint(p), "ipc://")
		if st, err := os.Stat(ep); err != nil || st.Mode().Type() != os.ModeSocket {
			t.Errorf("socket %s: %v, %v", ep, st, err)
		}
	}
}

// A kernel started without a sandbox listens on ipc sockets in its own
// 0700 runtime dir, next to its connection file, and everything works over
// them: execute, interrupt, the heartbeat, restart (into a new runtime
// dir, the old one removed) and Close (which removes the last one).
func TestStartListensOnIPC(t *testing.T) {
	t.Parallel()
	k := startKernel(t, Options{})
	g, err := k.current()
	if err != nil {
		t.Fatal(err)
	}
	first := g.dir.path
	if filepath.Dir(k.ConnectionFile()) != first {
		t.Errorf("connection file %s is not in the runtime dir %s", k.ConnectionFile(), first)
	}
	file, err := ReadConnectionFile(k.ConnectionFile())
	if err != nil {
		t.Fatal(err)
	}
	if file != g.ci {
		t.Errorf("connection file %+v, dialed %+v", file, g.ci)
	}
	wantPrivateIPC(t, file, first)
	wantOutputs(t, mustExecute(t, k, "x = 6*7; x"), "execute_result 42")

	opts, started := startedSignal()
	done := executeAsync(testCtx(t, 60*time.Second), k, "import time\ndef wait():\n    print('started', flush=True)\n    for _ in range(1200):\n        time.sleep(0.05)\nwait()", opts)
	await(t, started, "the code to start")
	if err := k.Interrupt(testCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	wantExecError(t, await(t, done, "the interrupted execution").err, "KeyboardInterrupt")

	if err := g.conn.Heartbeat(testCtx(t, 10*time.Second)); err != nil {
		t.Errorf("heartbeat: %v", err)
	}

	if err := k.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	g, err = k.current()
	if err != nil {
		t.Fatal(err)
	}
	if g.dir.path == first {
		t.Errorf("the restarted kernel kept the runtime dir %s", first)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the first runtime dir after restart: %v, want it removed", err)
	}
	wantPrivateIPC(t, g.ci, g.dir.path)
	_, err = k.Execute(testCtx(t, 60*time.Second), "x", ExecuteOptions{})
	wantExecError(t, err, "NameError")
	wantOutputs(t, mustExecute(t, k, "1 + 1"), "execute_result 2")
	if err := g.conn.Heartbeat(testCtx(t, 10*time.Second)); err != nil {
		t.Errorf("heartbeat after restart: %v", err)
	}
	last := g.dir.path
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(last); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the runtime dir after Close: %v, want it removed", err)
	}
}

// Attach takes a connection file with transport ipc, as jupyter_client
// writes one: it runs code and sees the kernel's death by heartbeat.
func TestAttachIPC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ci, err := ipcConnectionInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	file, proc := launchIPyKernelOn(t, ci)
	k, err := Attach(testCtx(t, 60*time.Second), file, Options{HeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer k.Close()
	wantOutputs(t, mustExecute(t, k, "1 + 1"), "execute_result 2")
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	dead, why := k.Dead()
	await(t, dead, "the heartbeat to report the kernel dead")
	var de *DiedError
	if err := why(); !errors.As(err, &de) || !de.Heartbeat {
		t.Fatalf("Dead() error %#v, want a *DiedError with Heartbeat", err)
	}
}

// A runtime dir too long for a Unix socket's path is refused with an
// error that names the limit and the way out, before any kernel starts.
func TestIPCPathTooLong(t *testing.T) {
	long := "/" + strings.Repeat("d", maxSocketPath)
	_, err := ipcConnectionInfo(long)
	if err == nil || !strings.Contains(err.Error(), "too long for the kernel's Unix sockets") || !strings.Contains(err.Error(), "KERNEL_MCP_RUNTIME_DIR") {
		t.Fatalf("ipcConnectionInfo(%d bytes): %v", len(long), err)
	}
	fits := "/" + strings.Repeat("d", maxSocketPath-len("/"+ipcBaseName+"-5")-1)
	if ci, err := ipcConnectionInfo(fits); err != nil || len(strings.TrimPrefix(ci.endpoint(ci.HBPort), "ipc://")) != maxSocketPath {
		t.Errorf("ipcConnectionInfo(%d bytes): %+v, %v", len(fits), ci, err)
	}

	t.Setenv("KERNEL_MCP_RUNTIME_DIR", filepath.Join(t.TempDir(), strings.Repeat("r", 100)))
	requireIPyKernel(t)
	_, err = Start(testCtx(t, 60*time.Second), Options{})
	if err == nil || !strings.Contains(err.Error(), "too long for the kernel's Unix sockets") {
		t.Fatalf("Start with a long KERNEL_MCP_RUNTIME_DIR: %v", err)
	}
}
