// Package testimg draws images for tests: plots as a chart library would
// make them, cheap to make under the race detector.
package testimg

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// ScatterPNG draws something like a scatter plot: a white w x h canvas
// with dots of a few colors, encoded as PNG.
func ScatterPNG(t testing.TB, w, h, dots int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	img.Pix[0] = 0xff // white, by doubling copies: the race detector makes a loop slow
	for n := 1; n < len(img.Pix); n *= 2 {
		copy(img.Pix[n:], img.Pix[:n])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	colors := []color.NRGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {0, 0, 0, 255}}
	for i := range dots {
		x, y, c := rng.IntN(w-3), rng.IntN(h-3), colors[i%len(colors)]
		for dy := range 3 {
			for dx := range 3 {
				img.SetNRGBA(x+dx, y+dy, c)
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
