package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// TestPoolWaitsForStart: a caller arriving while the pool's kernel is
// still starting waits for it instead of starting a second kernel.
func TestPoolWaitsForStart(t *testing.T) {
	ipytest.Require(t)
	srv, err := New(Config{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if s := srv.pool.summary(); s.Starting != 1 {
		t.Fatalf("pool right after New: %+v, want one kernel starting", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k, _, err := srv.startKernel(ctx, Choice{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	// The kernel came from the pool: nothing else was starting it, and the
	// pool is now refilling with exactly one.
	if s := srv.pool.summary(); s.Ready+s.Starting != 1 || slicesContains(s.Pids, k.Pid()) {
		t.Fatalf("pool after the take: %+v (taken pid %d)", s, k.Pid())
	}
}

// TestPoolFailingKind: a kind whose kernel cannot start is not retried by
// the pool in a loop; the caller gets the start error, at once, each time.
func TestPoolFailingKind(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no-such-python")
	srv, err := New(Config{PoolSize: 1, Python: bad})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		_, _, err := srv.startKernel(ctx, Choice{})
		if err == nil || !strings.Contains(err.Error(), "no-such-python") {
			t.Fatalf("start %d with a missing interpreter: %v", i, err)
		}
		if s := srv.pool.summary(); s.Starting != 0 || s.Ready != 0 {
			t.Fatalf("after failed start %d the pool is %+v; it should not retry on its own", i, s)
		}
	}
}

// TestPoolTakeCancelled: a caller waiting for a starting pool kernel stops
// waiting when its context ends; the kernel stays in the pool.
func TestPoolTakeCancelled(t *testing.T) {
	ipytest.Require(t)
	srv, err := New(Config{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := srv.pool.take(ctx, Choice{}, true); ok || err != context.Canceled {
		t.Fatalf("take with a cancelled context: ok=%v err=%v", ok, err)
	}
	if _, ok, err := srv.pool.take(context.Background(), Choice{}, false); ok || err != nil {
		t.Fatalf("take without waiting while the kernel starts: ok=%v err=%v", ok, err)
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
