//go:build stress

package kernel

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var stressFor = flag.Duration("stress.for", 8*time.Minute, "how long TestStressStart runs")

// TestStressStart starts and stops kernels from 6 goroutines at once for
// -stress.for; every start must succeed. Run it on a loaded machine:
//
//	go test -tags stress -race -run TestStressStart -timeout 20m ./kernel/
//
// It found kernels given a port another kernel took first (about 1 start in
// 80 under load, before ipykernel was left to bind its own ports).
func TestStressStart(t *testing.T) {
	requireIPyKernel(t)
	var fails, total atomic.Int32
	var wg sync.WaitGroup
	deadline := time.Now().Add(*stressFor)
	for w := range 6 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				ctx := context.Background()
				t0 := time.Now()
				k, err := Start(ctx, Options{StartTimeout: 25 * time.Second})
				total.Add(1)
				if err != nil {
					fails.Add(1)
					t.Errorf("worker %d: start failed after %v: %v", w, time.Since(t0), err)
					continue
				}
				if _, err := k.Execute(ctx, "1+1", ExecuteOptions{}); err != nil {
					t.Errorf("worker %d: execute: %v", w, err)
				}
				k.Close()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d starts failed", fails.Load(), total.Load())
}
