package imgscale

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScaledSizeKeepsAspect(t *testing.T) {
	for _, tc := range [][2]int{{3000, 2000}, {2000, 3000}, {1000, 1}, {1, 1000}, {7, 5}, {2, 2}, {4096, 17}} {
		for _, s := range []float64{0.999, 0.5, 0.333, 0.01, 0.0001} {
			w, h := scaledSize(tc[0], tc[1], s)
			if w < 1 || h < 1 || (w >= tc[0] && h >= tc[1] && tc[0]*tc[1] > 1) || w > tc[0] || h > tc[1] {
				t.Errorf("scaledSize(%v, %v) = %dx%d", tc, s, w, h)
			}
			if w > 1 && h > 1 {
				if d := float64(h) - float64(w)*float64(tc[1])/float64(tc[0]); d > 1 || d < -1 {
					t.Errorf("scaledSize(%v, %v) = %dx%d: aspect ratio off by %.2f px", tc, s, w, h, d)
				}
			}
		}
	}
}

// The box filter averages: a 2x2 checkerboard of black and white halves to
// mid-gray, and transparent pixels do not darken opaque ones.
func TestResizeAverages(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for x := range 4 {
		for y := range 2 {
			if (x+y)%2 == 0 {
				src.SetRGBA(x, y, color.RGBA{255, 255, 255, 255})
			} else {
				src.SetRGBA(x, y, color.RGBA{0, 0, 0, 255})
			}
		}
	}
	dst := resize(src, 2, 1)
	for x := range 2 {
		if c := dst.RGBAAt(x, 0); c.R < 126 || c.R > 129 || c.A != 255 {
			t.Errorf("pixel %d = %v, want mid-gray", x, c)
		}
	}
	// 3 → 2 pixels: the middle one is shared half and half.
	row := image.NewRGBA(image.Rect(0, 0, 3, 1))
	row.SetRGBA(0, 0, color.RGBA{0, 0, 0, 255})
	row.SetRGBA(1, 0, color.RGBA{90, 90, 90, 255})
	row.SetRGBA(2, 0, color.RGBA{180, 180, 180, 255})
	got := resize(row, 2, 1)
	if a, b := got.RGBAAt(0, 0).R, got.RGBAAt(1, 0).R; a != 30 || b != 150 {
		t.Errorf("3→2: %d, %d; want 30, 150", a, b)
	}
	// Red over transparent stays pure red, half as opaque.
	tr := image.NewRGBA(image.Rect(0, 0, 2, 1))
	tr.SetRGBA(0, 0, color.RGBA{255, 0, 0, 255})
	if c := color.NRGBAModel.Convert(resize(tr, 1, 1).RGBAAt(0, 0)).(color.NRGBA); c.R != 255 || c.G != 0 || c.A < 127 || c.A > 128 {
		t.Errorf("red over transparent: %v", c)
	}
}

// noisePNG is a w x h PNG of opaque noise, which does not compress away.
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 0xff
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A copy fits the limit, keeps the aspect ratio and the type (PNG, or JPEG
// for a JPEG), and says both sizes.
func TestDownscaleFitsAndKeepsType(t *testing.T) {
	full := noisePNG(t, 600, 400)
	const limit = 200_000
	if base64.StdEncoding.EncodedLen(len(full)) <= limit {
		t.Fatalf("test image is only %d bytes: too small to need downscaling", len(full))
	}
	small, err := Downscale(full, limit)
	if err != nil {
		t.Fatal(err)
	}
	if small.MIME != "image/png" || small.SrcWidth != 600 || small.SrcHeight != 400 || small.Width >= 600 || small.Width < 10 {
		t.Fatalf("copy %s %dx%d from %dx%d", small.MIME, small.Width, small.Height, small.SrcWidth, small.SrcHeight)
	}
	if n := base64.StdEncoding.EncodedLen(len(small.Data)); n > limit {
		t.Fatalf("copy has %d bytes of base64, over %d", n, limit)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(small.Data))
	if err != nil || cfg.Width != small.Width || cfg.Height != small.Height {
		t.Fatalf("copy decodes as %+v (%v), want %dx%d", cfg, err, small.Width, small.Height)
	}
	if d := float64(small.Height) - float64(small.Width)*400/600; d > 1 || d < -1 {
		t.Fatalf("copy %dx%d does not keep the 3:2 aspect ratio", small.Width, small.Height)
	}

	img, err := png.Decode(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	js, err := Downscale(jb.Bytes(), base64.StdEncoding.EncodedLen(jb.Len())/2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jpeg.DecodeConfig(bytes.NewReader(js.Data)); err != nil || js.MIME != "image/jpeg" {
		t.Fatalf("copy of a JPEG is %s (%v)", js.MIME, err)
	}
}

// Downscale's errors say why no copy was made, in words that follow "no
// smaller copy could be made".
func TestDownscaleErrors(t *testing.T) {
	bogus := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 5000)...)
	if _, err := Downscale(bogus, 1000); err == nil || !strings.HasPrefix(err.Error(), "cannot decode it: ") {
		t.Errorf("undecodable: %v", err)
	}
	full := noisePNG(t, 60, 40)
	if _, err := Downscale(full, 3); err == nil || err.Error() != "the inline limit is too small for any image" {
		t.Errorf("limit 3: %v", err)
	}
	if _, err := Downscale(full, 8); err == nil || err.Error() != "no copy small enough fits 8 bytes of base64" {
		t.Errorf("limit 8: %v", err)
	}
}
