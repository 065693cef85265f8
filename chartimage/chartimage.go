// Package chartimage draws charts as PNG images for readers that take
// images but run no JavaScript: a model. Plotly figures, Vega-Lite and Vega
// specs and SVG documents are drawn in a headless Chrome, Chromium or Edge
// found on the machine, driven over the DevTools protocol (chromedp) through
// a pipe, in a page that runs the views' plotly.js and Vega (package
// chartlib, in the binary once) and page/render.js (built by ui/build.mjs):
// nothing is fetched at render time.
//
// A chart spec comes from a kernel and is untrusted. The renderer parses it
// as JSON, never evaluates it; the page fetches nothing a spec names (Vega's
// loader refuses every URL, Plotly's map tiles and topojson are off); the
// browser has no network (a dead proxy and a resolver that finds no host,
// and with Options.Confine no network namespace) and no file of the server
// (the page is set as the document of about:blank, not loaded from disk).
// Options.Confine puts the browser in a confinement of the caller's, such as
// the kernels' sandbox.
//
// The browser starts lazily, on the first image, and is reused. Images are
// drawn in up to Options.Tabs tabs at once, so that one slow chart does not
// hold up another. A chart that takes longer than Options.Timeout, a tab
// that crashes (Options.HeapMB bounds its JavaScript heap) and a browser
// that dies all cost that image only: the browser is killed or discarded,
// another render in flight on it is tried once more on a new one, and the
// next image starts a new browser.
package chartimage

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/kernel-mcp/kernel-mcp/chartlib"
)

// renderScript draws a chart on the views' chart libraries (chartlib),
// which run before it in each tab; built by ui/build.mjs from
// ui/src/chartpage.js.
//
//go:embed page/render.js
var renderScript string

// blankPage is the document each tab starts from: about:blank's origin, no
// file, nothing to fetch.
const blankPage = "<!doctype html><html><head><meta charset=\"utf-8\"></head><body></body></html>"

// Kind is what a spec is drawn with.
type Kind string

// The kinds of chart the renderer draws.
const (
	Plotly   Kind = "plotly"
	VegaLite Kind = "vega-lite"
	Vega     Kind = "vega"
	SVG      Kind = "svg"
)

// KindOf is the Kind of an output's MIME type: Plotly's
// application/vnd.plotly.v1+json, any application/vnd.vegalite.v*+json or
// application/vnd.vega.v*+json (or .json), and image/svg+xml.
func KindOf(mime string) (Kind, bool) {
	switch {
	case mime == "application/vnd.plotly.v1+json":
		return Plotly, true
	case strings.HasPrefix(mime, "application/vnd.vegalite.v") && isJSONType(mime):
		return VegaLite, true
	case strings.HasPrefix(mime, "application/vnd.vega.v") && isJSONType(mime):
		return Vega, true
	case mime == "image/svg+xml":
		return SVG, true
	}
	return "", false
}

// isJSONType: Altair 6 names its Vega-Lite type ".v6.json", not "+json".
func isJSONType(mime string) bool {
	return strings.HasSuffix(mime, "+json") || strings.HasSuffix(mime, ".json")
}

// Options configure a Renderer. The zero value finds a browser and uses the
// defaults below.
type Options struct {
	// Browser is the browser's executable; "" finds one (FindBrowser).
	Browser string
	// Confine, when set, returns the command line that runs argv (the
	// browser's) confined; rw are the folders the browser must be able to
	// write (its profile). The browser is then told to use no sandbox of
	// its own, which cannot start inside most confinements.
	Confine func(argv, rw []string) ([]string, error)
	// Timeout bounds one image, from the moment it has a tab; default 20 s.
	Timeout time.Duration
	// StartTimeout bounds the browser's start; default 30 s.
	StartTimeout time.Duration
	// MaxSpecBytes is the largest spec drawn; default 16 MiB. A larger
	// one is refused at once: drawing it would take longer than Timeout.
	MaxSpecBytes int
	// Tabs is how many images are drawn at once; default 2.
	Tabs int
	// HeapMB bounds each tab's JavaScript heap; default 512.
	HeapMB int
	// IdleTimeout stops the browser after that long without a chart, to
	// give its memory back (the next chart starts another); default 5 min.
	IdleTimeout time.Duration
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.MaxSpecBytes <= 0 {
		o.MaxSpecBytes = 16 << 20
	}
	if o.Tabs <= 0 {
		o.Tabs = 2
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 512
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
}

// bigSpec is the spec size past which a tab is closed after its image,
// rather than kept warm with the heap the chart grew.
const bigSpec = 1 << 20

// maxTmpDirLen is the longest profile path used as the browser's TMPDIR:
// Chrome adds /org.chromium.Chromium.XXXXXX/SingletonSocket (44 bytes) to
// it for a Unix socket, whose path may have at most 104.
const maxTmpDirLen = 56

// Errors a render can end with besides a chart's own.
var (
	// ErrNoBrowser: no browser was found or configured.
	ErrNoBrowser = errors.New("no Chrome, Chromium or Edge found on this machine")
	// ErrClosed: the renderer was closed.
	ErrClosed = errors.New("the chart renderer is closed")
)

// Renderer draws charts. It is safe for concurrent use.
type Renderer struct {
	o    Options
	path string // the browser; "" with noBrowser
	none error  // why there is no browser, if there is none

	slots chan struct{} // one per tab

	mu     sync.Mutex
	br     *browser // nil until the first image, and after a browser is discarded
	closed bool
	idle   *time.Timer // stops the browser after Options.IdleTimeout without a chart
	// stops counts browsers being stopped outside a render (idle, gone);
	// Close waits for them.
	stops sync.WaitGroup
}

// New returns a Renderer; it starts no browser until the first image.
func New(o Options) *Renderer {
	o.defaults()
	r := &Renderer{o: o, slots: make(chan struct{}, o.Tabs)}
	switch {
	case o.Browser != "":
		p, err := exec.LookPath(o.Browser)
		if err != nil {
			r.none = fmt.Errorf("the browser %s cannot be run: %w", o.Browser, err)
		}
		r.path = p
	default:
		p, err := FindBrowser()
		if err != nil {
			r.none = err
		}
		r.path = p
	}
	return r
}

// Available reports whether the renderer has a browser to draw with, and
// if not, why.
func (r *Renderer) Available() error {
	if r == nil {
		return ErrNoBrowser
	}
	return r.none
}

// Browser is the browser the renderer draws with ("" if none).
func (r *Renderer) Browser() string { return r.path }

// Close stops the browser, if one runs, and waits for it to end. Renders
// in flight fail.
func (r *Renderer) Close() error {
	r.mu.Lock()
	br := r.br
	r.br, r.closed = nil, true
	if r.idle != nil {
		r.idle.Stop()
	}
	r.mu.Unlock()
	if br != nil {
		br.stop()
	}
	r.stops.Wait()
	return nil
}

// Render draws spec, of kind k, as a PNG image. Its errors say in words
// what went wrong: no browser, a spec too large, a chart that could not be
// drawn (the page's own message), a render past its time, a crash.
func (r *Renderer) Render(ctx context.Context, k Kind, spec []byte) ([]byte, error) {
	if err := r.Available(); err != nil {
		return nil, err
	}
	switch k {
	case Plotly, VegaLite, Vega:
		if !json.Valid(spec) {
			return nil, errors.New("the chart's spec is not valid JSON")
		}
	case SVG:
	default:
		return nil, fmt.Errorf("unknown chart kind %q", k)
	}
	if len(spec) > r.o.MaxSpecBytes {
		return nil, fmt.Errorf("the chart's spec is %.1f MB, over the %d MB drawn as an image", float64(len(spec))/1e6, r.o.MaxSpecBytes>>20)
	}
	// The spec travels as a JavaScript string literal (JSON's string
	// syntax is JavaScript's), so nothing in it is evaluated.
	lit, err := json.Marshal(string(spec))
	if err != nil {
		return nil, err
	}
	return r.render(ctx, "kmRender("+string(mustJSON(string(k)))+","+string(lit)+")")
}

// render evaluates expr, which resolves to a PNG data URL, in a tab.
func (r *Renderer) render(ctx context.Context, expr string) ([]byte, error) {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("no tab of the chart renderer came free: %w", ctx.Err())
	}
	defer func() {
		<-r.slots
		r.armIdle()
	}()

	for attempt := 0; ; attempt++ {
		png, retry, err := r.renderOnce(ctx, expr)
		if err == nil || !retry || attempt > 0 || ctx.Err() != nil {
			return png, err
		}
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// renderOnce draws in one tab of the current browser. retry says the
// browser went away under this render for a reason of another render's
// (its kill after a timeout, a crash), so that a second try may succeed.
func (r *Renderer) renderOnce(ctx context.Context, expr string) (png []byte, retry bool, err error) {
	br, err := r.browser(ctx)
	if err != nil {
		return nil, false, err
	}
	t, err := br.tab(ctx)
	if err != nil {
		r.discard(br)
		return nil, ctx.Err() == nil, fmt.Errorf("the chart renderer could not open a tab: %w", err)
	}
	rctx, cancel := context.WithTimeout(t.ctx, r.o.Timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the caller's cancellation ends the render too
	defer stop()

	url, err := chromedp.Run(rctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	var exc *chromedp.ExceptionError
	switch {
	case err == nil:
		if len(expr) > bigSpec {
			// A tab keeps the heap a large chart grew: it goes.
			t.close()
		} else {
			br.put(t)
		}
		png, err := decodeDataURL(url)
		return png, false, err
	case errors.As(err, &exc):
		// The chart's own error: the tab is fine.
		br.put(t)
		return nil, false, fmt.Errorf("the chart could not be drawn: %s", exceptionText(exc.ExceptionDetails))
	case t.crashed.Load():
		t.close()
		return nil, false, errors.New("the chart renderer's tab crashed while drawing this chart (out of memory?)")
	case ctx.Err() != nil:
		// The caller gave up: the tab may still be busy, so it goes.
		t.close()
		return nil, false, ctx.Err()
	case errors.Is(rctx.Err(), context.DeadlineExceeded) && !br.gone():
		// This chart took too long. A page stuck in a script cannot be
		// stopped from outside it, so the browser goes; the next image
		// starts another.
		r.discard(br)
		return nil, false, fmt.Errorf("the chart took longer than %s to draw; the renderer was stopped", r.o.Timeout)
	case br.discarded.Load():
		// Another render's timeout stopped the browser under this one,
		// which deserves another try.
		return nil, true, errors.New("the chart renderer was stopped for another chart, and again on a second try")
	default:
		// The browser went away (killed, crashed), perhaps before this
		// render began, unnoticed: it is tried once more on a new one.
		r.discard(br)
		return nil, true, fmt.Errorf("the chart renderer stopped while drawing this chart: %v", err)
	}
}

func exceptionText(e *runtime.ExceptionDetails) string {
	msg := e.Text
	if e.Exception != nil && e.Exception.Description != "" {
		msg = e.Exception.Description
	}
	if i := strings.Index(msg, "\n    at "); i > 0 {
		msg = msg[:i] // the stack says nothing to the reader
	}
	msg = strings.TrimPrefix(msg, "Error: ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

func decodeDataURL(u string) ([]byte, error) {
	b64, ok := strings.CutPrefix(u, "data:image/png;base64,")
	if !ok {
		return nil, errors.New("the chart renderer returned no PNG")
	}
	return base64.StdEncoding.DecodeString(b64)
}

// armIdle (re)starts the idle timer after a render.
func (r *Renderer) armIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.idle != nil {
		r.idle.Stop()
	}
	r.idle = time.AfterFunc(r.o.IdleTimeout, r.stopIdle)
}

// stopIdle stops the browser when no render is in flight (one that is
// re-arms the timer when it ends).
func (r *Renderer) stopIdle() {
	r.mu.Lock()
	br := r.br
	if len(r.slots) > 0 || br == nil {
		r.mu.Unlock()
		return
	}
	r.br = nil
	r.stops.Add(1)
	r.mu.Unlock()
	defer r.stops.Done()
	br.stop()
}

// browser returns the running browser, starting one if there is none.
func (r *Renderer) browser(ctx context.Context) (*browser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.br != nil && !r.br.gone() {
		return r.br, nil
	}
	if r.br != nil {
		r.stops.Go(r.br.stop)
		r.br = nil
	}
	br, err := startBrowser(ctx, r.path, r.o)
	if err != nil {
		return nil, err
	}
	r.br = br
	return br, nil
}

// discard stops br and forgets it, if it is still the current browser.
func (r *Renderer) discard(br *browser) {
	br.discarded.Store(true)
	r.mu.Lock()
	if r.br == br {
		r.br = nil
	}
	r.mu.Unlock()
	br.stop()
}

// browser is one browser process and its warm tabs.
type browser struct {
	opts      Options
	ctx       context.Context // the browser's; done when it ends
	cancel    context.CancelFunc
	allocStop context.CancelFunc
	dataDir   string
	idle      chan *tab
	stopOnce  sync.Once
	// discarded: a render stopped this browser (its chart's timeout, a
	// tab that would not open); renders in flight on it try again.
	discarded atomic.Bool
}

func (b *browser) gone() bool { return b.ctx.Err() != nil }

// startBrowser starts a browser and waits for it to answer.
func startBrowser(ctx context.Context, path string, o Options) (*browser, error) {
	sweepStaleProfiles(os.TempDir())
	dataDir, err := os.MkdirTemp("", profilePrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("the chart renderer's profile folder: %w", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dataDir),

		chromedp.DisableGPU,
		// No network: a proxy that is not there for every host, loopback
		// too, and a resolver that finds no host.
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("js-flags", fmt.Sprintf("--max-old-space-size=%d", o.HeapMB)),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1024, 768),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { prepareCmd(cmd) }),
	)
	if len(dataDir) <= maxTmpDirLen {
		// Chrome's shared-memory files (disable-dev-shm-usage puts them
		// in the temporary folder) stay in the profile, which stop
		// removes, even when the browser is killed. Not past
		// maxTmpDirLen: Chrome's singleton socket goes there too, and a
		// Unix socket's path is at most 104 bytes (macOS; 108 on Linux).
		opts = append(opts, chromedp.Env("TMPDIR="+dataDir))
	}
	var confineErr error
	if o.Confine != nil {
		opts = append(opts, chromedp.NoSandbox, chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			argv, err := o.Confine(cmd.Args, []string{dataDir})
			if err != nil {
				confineErr = err
				cmd.Path, cmd.Args = "/nonexistent/confinement", []string{"/nonexistent/confinement"}
				return
			}
			p, err := exec.LookPath(argv[0])
			if err != nil {
				confineErr = err
				cmd.Path, cmd.Args = "/nonexistent/confinement", []string{"/nonexistent/confinement"}
				return
			}
			cmd.Path, cmd.Args = p, argv
			prepareCmd(cmd)
		}))
	}
	actx, allocStop := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs protocol oddities (a DOM event before the first frame)
	// that say nothing about the chart; the render's own errors say what
	// matters.
	quiet := func(string, ...any) {}
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(quiet), chromedp.WithErrorf(quiet))
	var started atomic.Bool
	b := &browser{opts: o, ctx: bctx, cancel: cancel, allocStop: allocStop, dataDir: dataDir, idle: make(chan *tab, o.Tabs)}

	sctx, scancel := context.WithTimeout(bctx, o.StartTimeout)
	defer scancel()
	stop := context.AfterFunc(ctx, scancel)
	defer stop()
	// The first Run on the browser's own context starts the browser, which
	// then lives as long as that context (a deadline on it would end the
	// browser: the start's bound stops it from outside instead). Its
	// first tab is then kept warm.
	watch := context.AfterFunc(sctx, func() {
		if !started.Load() {
			allocStop() // kills the browser; cancel would wait for it
		}
	})
	defer watch()
	_, err = chromedp.Run(bctx, func(context.Context, *chromedp.Target) (chromedp.Void, error) { return chromedp.Void{}, nil })
	started.Store(err == nil)
	var t *tab
	if err == nil {
		t, err = b.newTabIn(sctx, bctx)
	}
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			err = context.DeadlineExceeded
		}
		b.stop()
		if confineErr != nil {
			return nil, fmt.Errorf("the chart renderer could not be confined: %w", confineErr)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the browser %s did not start within %s", path, o.StartTimeout)
		}
		return nil, fmt.Errorf("the browser %s did not start: %w", path, err)
	}
	b.put(t)
	return b, nil
}

// stop ends the browser and removes its profile.
func (b *browser) stop() {
	b.stopOnce.Do(func() {
		// The allocator kills the process and waits for it; the browser's
		// context waits for that before it returns, so it comes second.
		b.allocStop()
		b.cancel()
		os.RemoveAll(b.dataDir)
	})
}

// tab is a tab with the render page loaded.
type tab struct {
	ctx     context.Context
	cancel  context.CancelFunc
	crashed atomic.Bool
}

// tab returns an idle warm tab, or opens one.
func (b *browser) tab(ctx context.Context) (*tab, error) {
	select {
	case t := <-b.idle:
		if t.ctx.Err() == nil {
			return t, nil
		}
	default:
	}
	octx, cancel := context.WithTimeout(ctx, b.opts.StartTimeout)
	defer cancel()
	return b.newTabIn(octx, b.ctx)
}

// put returns t to the idle tabs.
func (b *browser) put(t *tab) {
	select {
	case b.idle <- t:
	default:
		t.close()
	}
}

func (t *tab) close() { t.cancel() }

// newTabIn opens a tab in the browser of parent and loads the render page;
// ctx bounds the time that takes.
func (b *browser) newTabIn(ctx, parent context.Context) (*tab, error) {
	t := &tab{}
	tctx, cancel := chromedp.NewContext(parent, chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*inspector.EventTargetCrashed); ok {
			t.crashed.Store(true)
			t.cancel()
		}
	}))
	t.ctx, t.cancel = tctx, cancel
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	ready, err := chromedp.Run(tctx, func(ctx context.Context, tg *chromedp.Target) (bool, error) {
		tree, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return false, err
		}
		if tree.FrameTree == nil || tree.FrameTree.Frame == nil {
			return false, errors.New("the tab has no frame")
		}
		if _, err := cdp.Call(ctx, tg, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: tree.FrameTree.Frame.ID, HTML: blankPage}); err != nil {
			return false, err
		}
		for _, name := range []string{"plotly", "vega"} { // not katex: no math here
			lib, ok := chartlib.Text(name)
			if !ok {
				return false, fmt.Errorf("the chart library %s is missing", name)
			}
			if _, err := chromedp.Evaluate[chromedp.Void](lib)(ctx, tg); err != nil {
				return false, fmt.Errorf("loading %s: %w", name, err)
			}
		}
		if _, err := chromedp.Evaluate[chromedp.Void](renderScript)(ctx, tg); err != nil {
			return false, err
		}
		return chromedp.Evaluate[bool](`window.kmReady === true`)(ctx, tg)
	})
	if err == nil && !ready {
		err = errors.New("the render page did not load")
	}
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return t, nil
}
