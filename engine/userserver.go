package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// A UserServer is the Jupyter server a person's kernels run on when it is
// not always running: their JupyterHub single-user server, which the hub
// starts on request and its idle culler, an admin or the person stops
// (package hub has the hub's side; cmd/kernel-mcp adapts it). Every kernel
// start makes sure it runs first; a kernel of a server stopped under it
// dies as any gateway kernel does (history kept, variables lost), and the
// session's next call starts the server again.
type UserServer interface {
	// URL is the server's base URL, as kernel.Gateway takes it and as
	// results show it.
	URL() string
	// Token is the token to reach the server with now.
	Token() (string, error)
	// Start makes sure the server runs, starting it if need be, and tells
	// progress how the start goes. ctx bounds the wait; its error says
	// why the server cannot run, in the hub's words when it has them.
	Start(ctx context.Context, progress func(string)) error
}

// useUserServer points the gateway settings at the user's server. No warm
// pool is kept there: a warm kernel would start a server nobody asked for
// and keep it from looking idle.
func (c *Config) useUserServer() {
	if c.UserServer == nil {
		return
	}
	c.GatewayURL, c.GatewayToken = c.UserServer.URL(), ""
	c.PoolSize = 0
}

type runKey struct{}

// withRun marks ctx as the run's, so that a server started for its kernel
// reports the start as the run's progress.
func withRun(ctx context.Context, r *Run) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// startUserServer makes sure the user's server runs before a kernel starts
// on it. A run waiting for it shows the start as its progress (wait_run,
// list_sessions, progress notifications); the call's --max-wait applies as
// for any kernel start.
func (s *Engine) startUserServer(ctx context.Context) error {
	us := s.cfg.UserServer
	if us == nil {
		return nil
	}
	r, _ := ctx.Value(runKey{}).(*Run)
	begun := time.Now()
	started := false
	err := us.Start(ctx, func(msg string) {
		started = true
		s.cfg.Logger.Info("starting the user's server", "server", us.URL(), "progress", msg)
		if r != nil {
			r.setStartNote("starting your server " + us.URL() + ": " + msg)
		}
	})
	if r != nil {
		r.setStartNote("")
	}
	if err != nil {
		s.cfg.Logger.Warn("the user's server did not start", "server", us.URL(), "error", err)
		return err
	}
	if started {
		s.cfg.Logger.Info("the user's server is ready", "server", us.URL(), "after", time.Since(begun).Round(time.Millisecond))
	}
	return nil
}

// GatewayKernelSpecs lists the kernelspecs of the gateway, or of the user's
// server, which is started first when it does not run. Waiting for that
// start holds the caller at most MaxWait; the start goes on.
func (s *Engine) GatewayKernelSpecs(ctx context.Context) ([]kernel.GatewaySpec, string, error) {
	g := s.Gateway()
	if g == nil {
		return nil, "", fmt.Errorf("kernels run locally here: there is no gateway")
	}
	if us := s.cfg.UserServer; us != nil {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.MaxWait)
		err := s.startUserServer(sctx)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, "", fmt.Errorf("your server %s is still starting after %v; the hub goes on starting it: ask again in a moment", us.URL(), s.cfg.MaxWait)
		}
		if err != nil {
			return nil, "", err
		}
	}
	return s.Gateway().KernelSpecs(ctx)
}

// fileToolsRefusal answers a tool's path when kernels run in a user's
// server. The path would name a file on kernel-mcp's machine, beside every
// other user's state (their hub tokens among it), not in the person's
// server; until the tools reach the server's contents API, they refuse.
func fileToolsRefusal(us UserServer) error {
	return fmt.Errorf("file paths are not available in this mode yet: the session's kernel runs in your server %s, and this tool would read or write on kernel-mcp's machine instead. Read and write files from code in the session (its working directory is your server's root), e.g. nbformat to write a notebook", us.URL())
}
