package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// gatewayKernel is the provisioner of a kernel that runs on a gateway: the
// server launches, interrupts, restarts and deletes it through REST, where
// a local kernel has a process this package signals.
type gatewayKernel struct {
	client *gatewayClient
	id     string
	owned  bool // started by this client, not attached to
	// deleteOnStop says stopping the generation deletes the kernel on the
	// server; false for a detaching attachment and across a restart, which
	// keeps the kernel id.
	deleteOnStop bool
	// stopErr is why the DELETE of a stopped generation failed, for Close.
	stopErr error
}

// launchGateway asks the gateway for a kernel and connects to it.
func (k *Kernel) launchGateway(ctx context.Context) (*generation, error) {
	env, err := gatewayEnv(k.opts.Env)
	if err != nil {
		return nil, err
	}
	m, err := k.gwc.startKernel(ctx, k.opts.Spec.Name, env)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (start timeout %v)", err, k.opts.StartTimeout)
		}
		return nil, err
	}
	if k.opts.Spec.Name == "" {
		k.opts.Spec.Name = m.Name
	}
	g, err := k.connectGateway(ctx, m.ID, true)
	if err != nil {
		dctx, cancel := context.WithTimeout(context.Background(), k.opts.ShutdownWait+k.opts.TermWait)
		k.gwc.deleteKernel(dctx, m.ID)
		cancel()
		return nil, err
	}
	return g, nil
}

// connectGateway opens a generation on a kernel the gateway runs: a
// WebSocket with a fresh session_id (so nothing the server buffered for an
// earlier generation is replayed into this one), a watcher for the death
// signals wsConn sees, and the readiness wait.
//
// A restart that lands during the readiness wait (the server's own
// restarter racing a restart asked for here, or another client's) leaves
// a fresh kernel under the same id, which is what every caller wants; the
// wait starts over on a new WebSocket, a few times at most (five: on a
// loaded machine the server's restarter and a restart asked for here can
// each land during a wait, and three tries ran out once in CI).
func (k *Kernel) connectGateway(ctx context.Context, id string, owned bool) (*generation, error) {
	const attempts = 5
	for i := 1; ; i++ {
		g, err := k.connectGatewayOnce(ctx, id, owned)
		if err == nil || i == attempts || ctx.Err() != nil || !errors.Is(err, errRestartedWhileConnecting) {
			return g, err
		}
	}
}

// errRestartedWhileConnecting marks a readiness wait cut short by a
// restart of the kernel.
var errRestartedWhileConnecting = errors.New("the kernel was restarted while connecting")

func (k *Kernel) connectGatewayOnce(ctx context.Context, id string, owned bool) (*generation, error) {
	conn, err := dialWS(ctx, k.gwc, id, uuid.NewString(), k.opts.MaxMessageSize)
	if err != nil {
		return nil, err
	}
	g := &generation{
		conn: conn, router: newRouter(conn, k.widgets.observer()), died: make(chan struct{}),
		gw: &gatewayKernel{client: k.gwc, id: id, owned: owned, deleteOnStop: owned || !k.opts.DetachOnClose},
	}
	wctx, stop := context.WithCancel(context.Background())
	g.stop, g.watcher = stop, make(chan struct{})
	go func() {
		defer close(g.watcher)
		select {
		case <-conn.gone:
			g.markDead(conn.goneErr)
		case <-wctx.Done():
		}
	}()
	if err := k.waitReady(ctx, g); err != nil {
		g.gw.deleteOnStop = false // the caller decides
		k.stopGeneration(g, 0)
		if conn.restarted.Load() {
			err = fmt.Errorf("%w: %w", errRestartedWhileConnecting, err)
		}
		return nil, fmt.Errorf("kernel: gateway %s: kernel %s did not become ready: %w", k.gwc, id, err)
	}
	return g, nil
}

// restartGateway restarts the kernel through REST, which keeps its id, and
// connects a new generation to it. A kernel the server no longer has is
// started afresh when it was ours; an attached one is gone for good.
func (k *Kernel) restartGateway(ctx context.Context, old *generation) (*generation, error) {
	ctx, cancel := context.WithTimeout(ctx, k.opts.StartTimeout)
	defer cancel()
	ws := old.conn.(*wsConn)
	ws.expectShutdown.Store(true)
	err := k.gwc.restart(ctx, old.gw.id)
	if errors.Is(err, errNoSuchKernel) && old.gw.owned {
		k.stopGeneration(old, 0)
		return k.launchGateway(ctx)
	}
	if err != nil {
		ws.expectShutdown.Store(false)
		return nil, err
	}
	del := old.gw.deleteOnStop
	old.gw.deleteOnStop = false
	k.stopGeneration(old, 0)
	g, err := k.connectGateway(ctx, old.gw.id, old.gw.owned)
	if err != nil {
		// The old generation stays current: Close deletes the kernel on
		// the server as it would have, and a later Restart restarts it.
		old.gw.deleteOnStop = del
		return nil, err
	}
	return g, nil
}

// deleteGatewayKernel shuts the kernel down on the server. The WebSocket
// stays open after a DELETE, so its shutdown_reply is announced first.
func (k *Kernel) deleteGatewayKernel(g *generation) {
	if ws, ok := g.conn.(*wsConn); ok {
		ws.expectShutdown.Store(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.opts.ShutdownWait+k.opts.TermWait+5*time.Second)
	defer cancel()
	g.gw.stopErr = g.gw.client.deleteKernel(ctx, g.gw.id)
}

// AttachGateway connects to a kernel that already runs on the gateway, such
// as a JupyterLab notebook's, by its kernel id. Its namespace is shared
// with every other client. Restart restarts it for everyone; Close shuts
// it down unless opts.DetachOnClose is set.
func AttachGateway(ctx context.Context, gw Gateway, kernelID string, opts Options) (*Kernel, error) {
	opts.Gateway = &gw
	opts.setDefaults()
	gc, err := gw.client()
	if err != nil {
		return nil, err
	}
	if kernelID == "" {
		return nil, errors.New("kernel: attach to a gateway kernel: the kernel id is empty")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	m, err := gc.kernel(ctx, kernelID)
	if err != nil {
		gc.release()
		return nil, err
	}
	if opts.Spec.Name == "" {
		opts.Spec.Name = m.Name
	}
	k := &Kernel{opts: opts, session: uuid.NewString(), gwc: gc, widgets: newWidgets()}
	g, err := k.connectGateway(ctx, kernelID, false)
	if err != nil {
		gc.release()
		return nil, err
	}
	k.gen = g
	return k, nil
}

// GatewayKernelID is the kernel's id on its gateway, or "" for a local
// kernel.
func (k *Kernel) GatewayKernelID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == nil || k.gen.gw == nil {
		return ""
	}
	return k.gen.gw.id
}

// GatewayURL is the base URL of the kernel's gateway, or "" for a local
// kernel. A password in the URL is shown as "xxxxx" (url.URL.Redacted).
func (k *Kernel) GatewayURL() string {
	if k.gwc == nil {
		return ""
	}
	return k.gwc.String()
}

// Attached reports whether the kernel was attached to (Attach,
// AttachGateway) rather than started by this client.
func (k *Kernel) Attached() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == nil {
		return false
	}
	if k.gen.gw != nil {
		return !k.gen.gw.owned
	}
	return k.gen.proc == nil
}

// GatewayStatus asks the gateway what it knows of the kernel: its state,
// last activity and open connections. It fails for a local kernel.
func (k *Kernel) GatewayStatus(ctx context.Context) (*GatewayKernel, error) {
	id := k.GatewayKernelID()
	if id == "" {
		return nil, errors.New("kernel: not a gateway kernel")
	}
	m, err := k.gwc.kernel(ctx, id)
	if err != nil {
		return nil, err
	}
	return &m, nil
}
