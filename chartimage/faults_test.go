//go:build unix

package chartimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserProcess is the running browser's process.
func browserProcess(t *testing.T, r *Renderer) *os.Process {
	t.Helper()
	r.mu.Lock()
	br := r.br
	r.mu.Unlock()
	if br == nil {
		t.Fatal("no browser runs")
	}
	p := chromedp.FromContext(br.ctx).Browser.Process()
	if p == nil {
		t.Fatal("the browser has no process")
	}
	return p
}

// A chart that never finishes costs that image only: it ends at the
// timeout with an error that says so, a render that was waiting on the
// same browser is drawn on the next one, and so is the image after.
func TestRenderHang(t *testing.T) {
	r := newRenderer(t, Options{Timeout: 3 * time.Second})
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Fatal(err)
	}
	first := browserProcess(t, r)
	var wg sync.WaitGroup
	var hangErr, otherErr error
	started := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		close(started)
		_, hangErr = r.render(context.Background(), `new Promise(() => { for (;;) {} })`)
	}()
	go func() {
		defer wg.Done()
		<-started
		_, otherErr = r.Render(context.Background(), VegaLite, []byte(vegaLite))
	}()
	wg.Wait()
	if hangErr == nil || !strings.Contains(hangErr.Error(), "longer than 3s") {
		t.Errorf("the hung chart: %v", hangErr)
	}
	if otherErr != nil {
		t.Errorf("the chart drawn beside it: %v", otherErr)
	}
	if _, err := r.Render(context.Background(), SVG, []byte(svgDoc)); err != nil {
		t.Errorf("the image after: %v", err)
	}
	if browserProcess(t, r).Pid == first.Pid {
		t.Error("the browser of the hung chart was not replaced")
	}
}

// A browser killed in the middle of an image, or between images before
// the renderer noticed, costs a new browser: the image is drawn again on
// it, once.
func TestRenderBrowserKilled(t *testing.T) {
	r := newRenderer(t, Options{Timeout: 20 * time.Second})
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Fatal(err)
	}

	// Mid-render: the chart below draws only after a deadline the first
	// browser does not live to see (a new one takes longer to start).
	p := browserProcess(t, r)
	lit, _ := json.Marshal(svgDoc)
	expr := fmt.Sprintf(`new Promise((ok, fail) => { if (Date.now() < %d) return; kmRender("svg", %s).then(ok, fail); })`,
		time.Now().Add(300*time.Millisecond).UnixMilli(), lit)
	done := make(chan error, 1)
	go func() {
		_, err := r.render(context.Background(), expr)
		done <- err
	}()
	for len(r.slots) == 0 { // the render holds its slot
		time.Sleep(time.Millisecond)
	}
	p.Kill()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the image whose browser was killed mid-render: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the render did not end when its browser was killed")
	}
	second := browserProcess(t, r)
	if second.Pid == p.Pid {
		t.Error("the killed browser was not replaced")
	}

	// Between images: the kill is not noticed before the next image.
	second.Kill()
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Errorf("the image after a kill between images: %v", err)
	}
}

// The caller's cancellation ends a render; Close stops the browser and
// removes its profile, and later renders say the renderer is closed.
func TestRenderCancelAndClose(t *testing.T) {
	r := newRenderer(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(r.slots) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := r.render(ctx, `new Promise(() => {})`); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled render: %v", err)
	}
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Fatal(err)
	}
	p := browserProcess(t, r)
	r.mu.Lock()
	dir := r.br.dataDir
	r.mu.Unlock()
	r.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the profile %s outlived Close: %v", dir, err)
	}
	if processAlive(p.Pid) {
		t.Errorf("the browser %d outlived Close", p.Pid)
	}
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// A chart that takes more memory than a tab may have crashes that tab only:
// the image fails with the reason, the next is drawn.
func TestRenderOutOfMemory(t *testing.T) {
	r := newRenderer(t, Options{HeapMB: 64, Timeout: time.Minute})
	start := time.Now()
	_, err := r.render(context.Background(), `new Promise(() => { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)); })`)
	if err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Errorf("error %v", err)
	}
	t.Logf("the tab crashed after %v", time.Since(start))
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Errorf("the image after: %v", err)
	}
}

// After IdleTimeout without a chart the browser stops, giving its memory
// back; the next chart starts another.
func TestRenderIdleStop(t *testing.T) {
	r := newRenderer(t, Options{IdleTimeout: 300 * time.Millisecond})
	if _, err := r.Render(context.Background(), SVG, []byte(svgDoc)); err != nil {
		t.Fatal(err)
	}
	p := browserProcess(t, r)
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(p.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the idle browser did not stop")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := r.Render(context.Background(), SVG, []byte(svgDoc)); err != nil {
		t.Errorf("the chart after the idle stop: %v", err)
	}
}
