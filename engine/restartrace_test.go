package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// A session whose kernel is being restarted keeps that kernel: a call that
// finds it mid-restart (its old process marked dead by the restart) must
// not start a second kernel beside it, which would leak the restarted one
// and slip past the kernel limit.
func TestKernelMidRestartIsNotReplaced(t *testing.T) {
	ipytest.Require(t)
	srv, err := New(Config{PoolSize: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ss, err := srv.LookupOrCreate("r")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k, _, err := ss.Kernel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- k.Restart(ctx) }()
	// Wait for the restart to mark the old process dead.
	for {
		done, why := k.Dead()
		var de *kernel.DiedError
		if isClosed(done) && errors.As(why(), &de) && de.Restarted {
			break
		}
		select {
		case err := <-restarted:
			t.Fatalf("the restart ended (%v) before it was seen under way", err)
		case <-time.After(time.Millisecond):
		}
	}
	got, lost, err := ss.Kernel(ctx)
	if err != nil || got != k || lost != nil {
		t.Errorf("kernel() mid-restart: %p, lost %v, err %v; want the restarting kernel %p", got, lost, err, k)
	}
	if !ss.holdsKernel() {
		t.Error("a session whose kernel is restarting does not count as holding a kernel")
	}
	if err := ss.Gone(); err != nil {
		t.Errorf("gone() mid-restart: %v", err)
	}
	if got != nil && got != k {
		got.Close()
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	ss.mu.Lock()
	now := ss.k
	ss.mu.Unlock()
	if now != k {
		t.Errorf("after the restart the session holds %p, not the restarted kernel %p", now, k)
	}
}
