package kernel

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// TestFrameBombStopsOnlyThatKernel: code in a kernel writes a frame header
// announcing 2^50 bytes onto its iopub connection. Without the guard, zmq4
// allocates what the header announces and panics the whole process. With
// it, that kernel is stopped with a ProtocolError naming the size and the
// limit, and another kernel of the same process goes on.
func TestFrameBombStopsOnlyThatKernel(t *testing.T) {
	t.Parallel()
	bomber := startKernel(t, Options{})
	other := startKernel(t, Options{})
	mustExecute(t, other, "kept = 42")
	pid := bomber.Pid()

	_, err := bomber.Execute(testCtx(t, 60*time.Second), ipytest.FrameBomb, ExecuteOptions{})
	var de *DiedError
	if !errors.Is(err, ErrKernelDied) || !errors.As(err, &de) || de.Protocol == nil {
		t.Fatalf("Execute: %v, want a *DiedError with Protocol set", err)
	}
	// Over TCP only iopub gets the header; over ipc every connection does
	// (see ipytest.FrameBomb), and whichever is read first stops the kernel.
	got := *de.Protocol
	if !slices.Contains([]string{"shell", "control", "stdin", "iopub", "heartbeat"}, got.Channel) {
		t.Errorf("Protocol.Channel = %q, want one of the kernel's channels", got.Channel)
	}
	got.Channel = ""
	if want := (ProtocolError{Size: 1 << 50, Limit: DefaultMaxMessageSize, What: "frame"}); got != want {
		t.Errorf("Protocol = %+v, want %+v", got, want)
	}
	if want := "kernel stopped: the kernel broke the protocol on " + de.Protocol.Channel + ": it announced a 1125899906842624-byte frame, over the 268435456-byte limit"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if s := bomber.State(); s != "dead" {
		t.Errorf("State() = %q, want dead", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !processGone(pid) {
		t.Errorf("the kernel that broke the protocol (pid %d) still runs", pid)
	}
	wantOutputs(t, mustExecute(t, other, "kept"), "execute_result 42")
	if err := bomber.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatalf("Restart after the violation: %v", err)
	}
	wantOutputs(t, mustExecute(t, bomber, "1 + 1"), "execute_result 2")
}
