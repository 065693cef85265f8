//go:build unix

package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// launchIPyKernel starts an ipykernel of the test's own, as someone else's
// kernel would run, for a test that attaches to it, and returns its
// connection file and process. Cleanup resumes it (it may be stopped) and
// kills it; a test that ends it itself may Wait for it first.
func launchIPyKernel(t *testing.T) (string, *os.Process) {
	t.Helper()
	requireIPyKernel(t)
	ci, err := NewConnectionInfo()
	if err != nil {
		t.Fatal(err)
	}
	return launchIPyKernelOn(t, ci)
}

// launchIPyKernelOn is launchIPyKernel with the connection ci.
func launchIPyKernelOn(t *testing.T, ci ConnectionInfo) (string, *os.Process) {
	t.Helper()
	requireIPyKernel(t)
	b, err := json.Marshal(ci)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kernel-attach.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-m", "ipykernel_launcher", "-f", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return file, cmd.Process
}

// within runs f on a goroutine and reports whether it returned within d.
// The bound only turns a hang into a failure: it is far beyond what f
// needs on a loaded machine.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestAttachFrozenKernel stops an attached kernel with SIGSTOP, as a paused
// container or a sleeping laptop would: its sockets still accept
// connections, but nothing answers, not even the ZMTP handshake of a new
// heartbeat socket. The heartbeat must report it dead, Close must return,
// and a new Attach must give up when its context ends.
func TestAttachFrozenKernel(t *testing.T) {
	t.Parallel()
	file, proc := launchIPyKernel(t)
	const (
		interval = 200 * time.Millisecond
		misses   = 3
		budget   = interval * misses
	)
	k, err := Attach(testCtx(t, 60*time.Second), file, Options{HeartbeatInterval: interval, HeartbeatMisses: misses, ShutdownWait: time.Second})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	wantOutputs(t, mustExecute(t, k, "1 + 1"), "execute_result 2")

	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	dead, why := k.Dead()
	select {
	case <-dead:
		t.Logf("death seen %v after SIGSTOP (heartbeat budget %v)", time.Since(stopped), budget)
		var de *DiedError
		if err := why(); !errors.As(err, &de) || !de.Heartbeat {
			t.Errorf("Dead() error %#v, want a *DiedError with Heartbeat", err)
		}
	case <-time.After(10 * budget):
		t.Errorf("a stopped kernel is not reported dead %v after SIGSTOP (heartbeat budget %v)", 10*budget, budget)
	}

	var cerr error
	if !within(30*time.Second, func() { cerr = k.Close() }) {
		t.Error("Close of an attached, stopped kernel still blocks after 30s")
	} else if cerr != nil {
		t.Errorf("Close: %v", cerr)
	}

	// A new attachment to the stopped kernel: every dial connects, no
	// handshake completes.
	var aerr error
	if !within(30*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var k2 *Kernel
		if k2, aerr = Attach(ctx, file, Options{}); k2 != nil {
			k2.Close()
		}
	}) {
		t.Fatal("Attach with a 2s deadline to a stopped kernel still blocks after 30s")
	}
	if !errors.Is(aerr, context.DeadlineExceeded) {
		t.Errorf("Attach to a stopped kernel: %v, want the context's DeadlineExceeded", aerr)
	}
}

// TestAttachSilentListener attaches to ports where something accepts TCP
// connections and never speaks ZMTP: Attach returns when its context
// ends, and leaves no goroutine behind (TestMain checks).
func TestAttachSilentListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never written to
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	port := ln.Addr().(*net.TCPAddr).Port
	ci := ConnectionInfo{
		Transport: "tcp", IP: "127.0.0.1", SignatureScheme: "hmac-sha256", Key: "k",
		ShellPort: port, IOPubPort: port, StdinPort: port, ControlPort: port, HBPort: port,
	}
	b, err := json.Marshal(ci)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "silent.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var aerr error
	if !within(30*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var k *Kernel
		if k, aerr = Attach(ctx, file, Options{}); k != nil {
			k.Close()
		}
	}) {
		t.Fatal("Attach with a 1s deadline to a listener that never speaks ZMTP still blocks after 30s")
	}
	if !errors.Is(aerr, context.DeadlineExceeded) {
		t.Errorf("Attach to a silent listener: %v, want the context's DeadlineExceeded", aerr)
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n == 0 {
		t.Error("Attach never connected to the listener")
	}
}
