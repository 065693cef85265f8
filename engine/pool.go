package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// pool keeps Config.PoolSize kernels started and idle for each kind of
// kernel sessions ask for, so that a new session, or a session whose kernel
// is reset or died, gets a kernel in milliseconds instead of the second a
// cold ipykernel start takes. A kind is a Choice: kernelspec,
// interpreter and working directory.
//
// The server's default kind is warmed when the server starts; any other kind
// from its first use on. Pool kernels obey the memory limit like any other
// and are not sessions: they do not count towards MaxSessions and are not
// listed. Close shuts them all down and waits for starts under way.
type pool struct {
	srv  *Engine
	size int

	mu      sync.Mutex
	kinds   map[Choice]*poolKind
	closed  bool
	filling sync.WaitGroup
}

// poolKind is the warm kernels of one kind.
type poolKind struct {
	ready    []warmKernel
	starting int
	// changed is closed and replaced whenever a start ends, so callers
	// waiting for a kernel under way wake up and look again.
	changed chan struct{}
	// failedAt is when the last start failed: the pool does not retry a
	// kind that cannot start until someone asks for it again.
	failedAt time.Time
	lastUsed time.Time
}

type warmKernel struct {
	k    *kernel.Kernel
	info KernelInfo
}

// maxPoolKinds bounds how many kinds are kept warm: the least recently used
// kind beyond it gives its kernels up.
const maxPoolKinds = 4

func newPool(s *Engine, size int) *pool {
	return &pool{srv: s, size: size, kinds: map[Choice]*poolKind{}}
}

// warm starts filling the pool for a kind.
func (p *pool) warm(c Choice) {
	if p == nil || p.size <= 0 || c.Attached() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillLocked(c, p.kindLocked(c))
}

func (p *pool) kindLocked(c Choice) *poolKind {
	pk := p.kinds[c]
	if pk == nil {
		pk = &poolKind{changed: make(chan struct{}), lastUsed: time.Now()}
		p.kinds[c] = pk
		p.evictLocked()
	}
	return pk
}

// evictLocked gives up the least recently used kinds beyond maxPoolKinds.
func (p *pool) evictLocked() {
	for len(p.kinds) > maxPoolKinds {
		var oldest Choice
		var at time.Time
		for c, pk := range p.kinds {
			if at.IsZero() || pk.lastUsed.Before(at) {
				oldest, at = c, pk.lastUsed
			}
		}
		pk := p.kinds[oldest]
		delete(p.kinds, oldest)
		p.closeLater(pk.ready)
		pk.ready = nil
	}
}

// fillLocked starts kernels until the kind has size ready or starting.
func (p *pool) fillLocked(c Choice, pk *poolKind) {
	if p.closed {
		return
	}
	for len(pk.ready)+pk.starting < p.size {
		pk.starting++
		p.filling.Add(1)
		go p.start(c, pk)
	}
}

func (p *pool) start(c Choice, pk *poolKind) {
	defer p.filling.Done()
	k, info, err := p.srv.coldStart(p.srv.ctx, c)
	p.mu.Lock()
	pk.starting--
	close(pk.changed)
	pk.changed = make(chan struct{})
	switch {
	case err != nil:
		pk.failedAt = time.Now()
		p.mu.Unlock()
		if p.srv.ctx.Err() == nil {
			p.srv.cfg.Logger.Warn("could not start a pool kernel", "kernel", c.Kernel, "python", c.Python, "cwd", c.Cwd, "error", err)
		}
		return
	case p.closed || p.kinds[c] != pk:
		// The server closed, or the kind was evicted, while it started.
		p.mu.Unlock()
		k.Close()
		return
	}
	pk.ready = append(pk.ready, warmKernel{k: k, info: info})
	p.mu.Unlock()
	p.srv.cfg.Logger.Debug("pool kernel ready", "kernel", c.Kernel, "python", c.Python, "pid", k.Pid())
}

// take returns a warm kernel of the kind, waiting for one that is already
// starting rather than starting a second (with wait false it only takes a
// ready one). ok is false when the pool has none to give: it is off, the
// kind is new, or its last start failed. The caller then starts a kernel
// itself and reports the outcome with started.
func (p *pool) take(ctx context.Context, c Choice, wait bool) (w warmKernel, ok bool, err error) {
	if p == nil || p.size <= 0 || c.Attached() {
		return warmKernel{}, false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pk := p.kindLocked(c)
	pk.lastUsed = time.Now()
	if !pk.failedAt.IsZero() {
		return warmKernel{}, false, nil
	}
	for !p.closed {
		if len(pk.ready) > 0 {
			w = pk.ready[0]
			pk.ready = pk.ready[1:]
			p.fillLocked(c, pk)
			// A kernel that died while it waited, perhaps so recently that
			// its exit is not yet seen, must not be handed out: ask it
			// something first (a millisecond or two).
			p.mu.Unlock()
			live := p.responds(ctx, w.k)
			p.mu.Lock()
			if live {
				return w, true, nil
			}
			p.closeLater([]warmKernel{w})
			if ctx.Err() != nil {
				return warmKernel{}, false, ctx.Err()
			}
			continue
		}
		if pk.starting == 0 || !wait {
			return warmKernel{}, false, nil
		}
		changed := pk.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			p.mu.Lock()
			return warmKernel{}, false, ctx.Err()
		}
		p.mu.Lock()
	}
	return warmKernel{}, false, nil
}

// responds reports whether a kernel answers a kernel_info_request.
func (p *pool) responds(ctx context.Context, k *kernel.Kernel) bool {
	if done, _ := k.Dead(); isClosed(done) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := k.KernelInfo(ctx)
	return err == nil
}

// started is told how a caller's own start of a kind went, after take gave
// it nothing: a success (re)fills the pool for the kind, a failure keeps
// the pool from retrying it until someone asks again.
func (p *pool) started(ctx context.Context, c Choice, err error) {
	if p == nil || p.size <= 0 || ctx.Err() != nil || c.Attached() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pk := p.kindLocked(c)
	if err != nil {
		pk.failedAt = time.Now()
		return
	}
	pk.failedAt = time.Time{}
	p.fillLocked(c, pk)
}

// closeLater shuts kernels down without holding up the caller; close waits
// for them.
func (p *pool) closeLater(ws []warmKernel) {
	for _, w := range ws {
		if p.closed {
			// close may be waiting already: no new goroutines.
			w.k.Close()
			continue
		}
		p.filling.Add(1)
		go func() {
			defer p.filling.Done()
			w.k.Close()
		}()
	}
}

// retire shuts down a kernel a session no longer uses (it was replaced by
// a warm one) without holding up the session: force kills it at once, for
// a kernel that ignored an interrupt.
func (p *pool) retire(k *kernel.Kernel, force bool) {
	stop := k.Close
	if force {
		stop = k.Kill
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.filling.Add(1)
	}
	p.mu.Unlock()
	if closed {
		stop()
		return
	}
	go func() {
		defer p.filling.Done()
		stop()
	}()
}

// summary reports the pool's size, and its kernels ready and starting over
// all kinds.
func (p *pool) summary() PoolSummary {
	out := PoolSummary{Pids: []int{}}
	if p == nil || p.size <= 0 {
		return out
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out.Size = p.size
	for _, pk := range p.kinds {
		out.Ready += len(pk.ready)
		out.Starting += pk.starting
		for _, w := range pk.ready {
			out.Pids = append(out.Pids, w.k.Pid())
		}
	}
	slices.Sort(out.Pids)
	return out
}

// close shuts down every pool kernel and waits for starts under way (the
// server's context, cancelled before this, cuts them short).
func (p *pool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, pk := range p.kinds {
		p.closeLater(pk.ready)
		pk.ready = nil
	}
	p.closed = true
	p.mu.Unlock()
	p.filling.Wait()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
