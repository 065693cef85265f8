package chartimage

import (
	"context"
	"testing"
)

// The warm benchmarks time one image on a running browser with its tab
// loaded (the first, which starts the browser, is not timed); the cold one
// a new renderer's first image: the browser's start, the render page's
// load and the drawing, and Close. docs/performance.md ("Chart images")
// has the figures, and bench/charts/charts.py compares them with kaleido
// and vl-convert in the kernel.

func BenchmarkRenderPlotlyWarm(b *testing.B)   { benchWarm(b, Plotly, plotlyFig) }
func BenchmarkRenderVegaLiteWarm(b *testing.B) { benchWarm(b, VegaLite, vegaLite) }
func BenchmarkRenderSVGWarm(b *testing.B)      { benchWarm(b, SVG, svgDoc) }

func benchWarm(b *testing.B, k Kind, spec string) {
	r := newRenderer(b, Options{})
	ctx := context.Background()
	if _, err := r.Render(ctx, k, []byte(spec)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Render(ctx, k, []byte(spec)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderCold is what the first chart of a server costs: New, the
// first Render (a Plotly figure) and Close, per iteration.
func BenchmarkRenderCold(b *testing.B) {
	requireBrowser(b)
	ctx := context.Background()
	for b.Loop() {
		r := New(Options{})
		_, err := r.Render(ctx, Plotly, []byte(plotlyFig))
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
