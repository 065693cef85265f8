package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// scriptedServer is a UserServer whose start reports one progress line,
// then waits for the test to say how it ends.
type scriptedServer struct {
	reported chan struct{}
	outcome  chan error
}

func (s *scriptedServer) URL() string                          { return "http://127.0.0.1:1/user/alice/" }
func (s *scriptedServer) Token() (string, error)               { return "t", nil }
func (s *scriptedServer) Gone(context.Context) (string, error) { return "", nil }
func (s *scriptedServer) Start(ctx context.Context, progress func(string)) error {
	progress("30% pulling the image")
	close(s.reported)
	select {
	case err := <-s.outcome:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestUserServerStartIsTheRunsProgress: while a run waits for the user's
// server to start, the run shows the start as its progress and counts as
// executing (so its caller gets progress notifications); a start that
// fails fails the block with the server's own words, and file paths are
// refused.
func TestUserServerStartIsTheRunsProgress(t *testing.T) {
	us := &scriptedServer{reported: make(chan struct{}), outcome: make(chan error, 1)}
	e := newTestEngine(t, Config{UserServer: us})
	if e.Config().GatewayURL != us.URL() || e.Config().PoolSize != 0 {
		t.Fatalf("config: gateway %q, pool %d", e.Config().GatewayURL, e.Config().PoolSize)
	}
	ss, err := e.LookupOrCreate("s")
	if err != nil {
		t.Fatal(err)
	}
	// Paths name files under the server's root, never kernel-mcp's.
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", "."} {
		if _, err := ss.ResolvePath(p, WriteAccess); err == nil || !strings.Contains(err.Error(), us.URL()) {
			t.Errorf("path %q: %v", p, err)
		}
	}
	tp, err := ss.ResolvePath("out/./a.ipynb", WriteAccess)
	if err != nil || tp.String() != "out/a.ipynb" {
		t.Errorf("a relative path: %q %v", tp.String(), err)
	}
	// The kernel names it from the folder it started in, the server's
	// root, whatever the session's code chdir'd to since.
	if got, err := tp.Python(); got != `__import__("os").path.join(get_ipython().starting_dir, "out/a.ipynb")` || err != nil {
		t.Errorf("as the kernel names it: %s %v", got, err)
	}
	// A kernel attached by id started in a folder of its own.
	att := e.newSession("att", Choice{KernelID: "0123"})
	if tp, err := att.ResolvePath("d.csv", ReadAccess); err != nil {
		t.Error(err)
	} else if _, err := tp.Python(); err == nil || !strings.Contains(err.Error(), "attached by kernel_id") {
		t.Errorf("a path for an attached kernel: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		b, err := r.RunBlock(ctx, "1+1", "", 0)
		if err != nil {
			return nil, err
		}
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-us.reported
	if v := r.View(); !strings.Contains(v.Progress, "starting your server "+us.URL()+": 30% pulling the image") || !r.Executing() {
		t.Errorf("while the server starts: progress %q, executing %v", v.Progress, r.Executing())
	}
	us.outcome <- errors.New("JupyterHub could not start alice's server: Spawn failed: no room")
	if got := r.Await(ctx, time.Minute); got != AwaitDone {
		t.Fatalf("await: %v", got)
	}
	if _, err := r.Result(); err == nil || !strings.Contains(err.Error(), "Spawn failed: no room") {
		t.Errorf("the run's error: %v", err)
	}
	if r.Executing() {
		t.Error("the run still counts as executing")
	}
}

// TestUserServerListingObeysMaxWait: list_kernels on a server that takes
// longer than MaxWait to start answers at MaxWait, saying it still starts.
func TestUserServerListingObeysMaxWait(t *testing.T) {
	us := &scriptedServer{reported: make(chan struct{}), outcome: make(chan error, 1)}
	e := newTestEngine(t, Config{UserServer: us, MaxWait: 200 * time.Millisecond})
	_, _, err := e.GatewayKernelSpecs(context.Background())
	if err == nil || !strings.Contains(err.Error(), "still starting after 200ms") {
		t.Errorf("listing: %v", err)
	}
}
