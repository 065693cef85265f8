package chartimage

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"strings"
	"testing"
)

// requireBrowser skips when the machine has no browser, unless CI=true,
// where a missing browser fails (.ci/run installs chromium).
func requireBrowser(t testing.TB) string {
	t.Helper()
	p, err := FindBrowser()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no browser: %v", err)
		}
		t.Skip(err)
	}
	return p
}

func newRenderer(t testing.TB, o Options) *Renderer {
	t.Helper()
	requireBrowser(t)
	r := New(o)
	t.Cleanup(func() { r.Close() })
	return r
}

// colours counts the distinct colours on a grid of samples: a blank image
// has one.
func colours(t testing.TB, b []byte) (image.Image, int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	seen := map[[4]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y += max(1, r.Dy()/60) {
		for x := r.Min.X; x < r.Max.X; x += max(1, r.Dx()/60) {
			cr, cg, cb, ca := img.At(x, y).RGBA()
			seen[[4]uint32{cr, cg, cb, ca}] = true
		}
	}
	return img, len(seen)
}

const plotlyFig = `{"data":[{"type":"scatter","mode":"markers","name":"a","x":[1,2,3],"y":[2,4,3],"marker":{"color":"red","size":14}},
{"type":"bar","name":"b","x":[1,2,3],"y":[1,1.5,2]}],"layout":{"title":{"text":"Growth"},"width":640,"height":400}}`

const vegaLite = `{"$schema":"https://vega.github.io/schema/vega-lite/v5.json","title":"Sales",
"data":{"values":[{"m":"a","v":3},{"m":"b","v":7},{"m":"c","v":5}]},"mark":"bar",
"encoding":{"x":{"field":"m","type":"nominal"},"y":{"field":"v","type":"quantitative"}}}`

const vegaSpec = `{"$schema":"https://vega.github.io/schema/vega/v5.json","width":200,"height":100,
"marks":[{"type":"rect","encode":{"enter":{"x":{"value":10},"y":{"value":10},"width":{"value":100},"height":{"value":50},"fill":{"value":"steelblue"}}}}]}`

const svgDoc = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect x="10" y="10" width="60" height="40" fill="green"/><text x="10" y="75">hi</text></svg>`

func TestRenderKinds(t *testing.T) {
	r := newRenderer(t, Options{})
	for _, c := range []struct {
		kind Kind
		spec string
		w, h int
	}{
		{Plotly, plotlyFig, 640, 400},
		{VegaLite, vegaLite, 0, 0},
		{Vega, vegaSpec, 200, 100},
		{SVG, svgDoc, 120, 80},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			b, err := r.Render(context.Background(), c.kind, []byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			img, n := colours(t, b)
			if n < 2 {
				t.Errorf("the image is blank: %d colours", n)
			}
			if c.w > 0 && (img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h) {
				t.Errorf("size %v, want %dx%d", img.Bounds().Size(), c.w, c.h)
			}
		})
	}
}

// A chart's own error, and specs refused before any drawing, come back as
// errors that say why; the renderer goes on drawing.
func TestRenderBadSpecs(t *testing.T) {
	r := newRenderer(t, Options{MaxSpecBytes: 1 << 20})
	for _, c := range []struct {
		kind Kind
		spec string
		want string
	}{
		{Plotly, `{"data": [1, 2`, "not valid JSON"},
		{VegaLite, `{"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}}, "data": {"url": "https://example.com/x.csv"}}`, "not fetched"},
		{Plotly, `[1, 2]`, "object with data and layout"},
		{Plotly, `{"data":[{"type":"scatter","x":[` + strings.Repeat("1,", 600_000) + `1]}]}`, "over the 1 MB"},
		{"gif", `{}`, "unknown chart kind"},
	} {
		_, err := r.Render(context.Background(), c.kind, []byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %.40s: error %v, want %q", c.kind, c.spec, err, c.want)
		}
	}
	if _, err := r.Render(context.Background(), Plotly, []byte(plotlyFig)); err != nil {
		t.Errorf("after the bad specs: %v", err)
	}
}

func TestNoBrowser(t *testing.T) {
	r := New(Options{Browser: "/nonexistent/chrome"})
	defer r.Close()
	if r.Available() == nil {
		t.Fatal("a missing browser is available")
	}
	_, err := r.Render(context.Background(), Plotly, []byte(plotlyFig))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/chrome") {
		t.Errorf("error %v", err)
	}
}
