package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
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
	// Gone says why the server no longer runs ("was stopped (by …)"),
	// or "" while it runs. It is asked when the connection to a kernel
	// there drops, so that a server stopped under a session is a kernel
	// death at once rather than after the reconnect window, and when a
	// kernel start there fails, so that a server that ended is started
	// again.
	Gone(ctx context.Context) (string, error)
}

// userServerStopped is kernel.Gateway.Stopped for the user's server: why
// its kernels are lost when the server no longer runs, "" while it runs or
// cannot be asked (the reconnect window goes on then).
func userServerStopped(us UserServer) func(ctx context.Context) string {
	return func(ctx context.Context) string {
		why, err := us.Gone(ctx)
		if err != nil || why == "" {
			return ""
		}
		return fmt.Sprintf("your server %s %s, and its kernels with it; the next call starts it again", us.URL(), why)
	}
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
	if err := s.awaitUserServer(ctx); err != nil {
		return nil, "", err
	}
	return s.Gateway().KernelSpecs(ctx)
}

// awaitUserServer makes sure the user's server runs (if there is one),
// holding the caller at most MaxWait: a start that takes longer goes on at
// the hub, and the error says to ask again.
func (s *Engine) awaitUserServer(ctx context.Context) error {
	us := s.cfg.UserServer
	if us == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.MaxWait)
	defer cancel()
	err := s.startUserServer(sctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("your server %s is still starting after %v; the hub goes on starting it: ask again in a moment", us.URL(), s.cfg.MaxWait)
	}
	return err
}

// Files in the user's server. A tool's path names a file under the
// server's root (where its kernels start, and what its file browser
// shows), read and written through the server's contents API: a notebook
// the assistant saves appears in the person's JupyterLab. A path on
// kernel-mcp's machine is never reached: it would be beside every other
// user's state, their hub tokens among it.

// serverFileWait bounds one read or write through the contents API,
// starting the server if it was stopped. ToolPath's methods take no
// context: the engine's bounds them, with this limit.
const serverFileWait = 2 * time.Minute

// serverPath checks a tool's path for the user's server: relative to its
// root, and staying there.
func (s *Engine) serverPath(p string) (ToolPath, error) {
	clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	switch {
	case path.IsAbs(clean) || filepath.IsAbs(p):
		return ToolPath{}, fmt.Errorf("path %s is absolute: paths name files in your server %s, relative to its root (where the session's code starts), such as analysis/report.ipynb", p, s.cfg.UserServer.URL())
	case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
		return ToolPath{}, fmt.Errorf("path %s leads out of your server's root: paths name files in your server %s, relative to its root", p, s.cfg.UserServer.URL())
	}
	return ToolPath{abs: clean, rel: clean, server: s}, nil
}

// serverFileRefusal is the answer of a tool that would need the file
// open on kernel-mcp's machine, which a file in the user's server never is.
func (s *Engine) serverFileRefusal(verb string) error {
	return fmt.Errorf("cannot %s files in your server %s from here: read it from code in the session instead (its working directory is the server's root), e.g. pandas.read_csv", verb, s.cfg.UserServer.URL())
}

// checkServerFile checks through the contents API that rel is a file in
// the user's server, of at most limit bytes (0: any size), without reading
// it: the kernel reads it (load_data).
func (s *Engine) checkServerFile(rel, verb string, limit int64) error {
	ctx, cancel := context.WithTimeout(s.ctx, serverFileWait)
	defer cancel()
	// The check holds the call before its run begins.
	if err := s.awaitUserServer(ctx); err != nil {
		return fmt.Errorf("cannot %s %s: %v", verb, rel, err)
	}
	if err := s.Gateway().StatContents(ctx, rel, limit); err != nil {
		return fmt.Errorf("cannot %s %s in your server: %v", verb, rel, err)
	}
	return nil
}

func (s *Engine) writeServerFile(rel string, data []byte) error {
	ctx, cancel := context.WithTimeout(s.ctx, serverFileWait)
	defer cancel()
	if err := s.startUserServer(ctx); err != nil {
		return fmt.Errorf("cannot write %s: %v", rel, err)
	}
	if err := s.Gateway().WriteContents(ctx, rel, data); err != nil {
		return fmt.Errorf("cannot write %s in your server: %v", rel, err)
	}
	return nil
}

func (s *Engine) readServerFile(rel, verb string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = 64 << 20
	}
	ctx, cancel := context.WithTimeout(s.ctx, serverFileWait)
	defer cancel()
	if err := s.startUserServer(ctx); err != nil {
		return nil, fmt.Errorf("cannot %s %s: %v", verb, rel, err)
	}
	b, err := s.Gateway().ReadContents(ctx, rel, limit)
	if err != nil {
		return nil, fmt.Errorf("cannot %s %s in your server: %v", verb, rel, err)
	}
	return b, nil
}
