// Package imgscale makes small copies of large images, for a result that
// may carry only so many bytes of base64: a box-filtered downscale of a
// PNG, JPEG or GIF to the largest size whose encoding fits, PNG or (for a
// JPEG) JPEG, keeping the aspect ratio.
//
//	small, err := imgscale.Downscale(pngBytes, 1<<20) // at most 1 MB of base64
//	if err != nil {
//		return fmt.Errorf("no smaller copy could be made (%v)", err)
//	}
//	fmt.Printf("%dx%d from %dx%d, %s\n", small.Width, small.Height, small.SrcWidth, small.SrcHeight, small.MIME)
//
// It is pure image processing: it knows nothing of MCP, sessions or where
// the full image is kept. Importing it registers the PNG, JPEG and GIF
// decoders with package image.
package imgscale

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // registers GIF for image.Decode
	"image/jpeg"
	"image/png"
	"math"
	"strconv"
)

const (
	// maxDecodePixels is the largest image decoded for a downscaled copy;
	// a larger one is only linked (a decoded pixel takes 4 bytes or more).
	maxDecodePixels = 50_000_000
	// jpegQuality is the quality of a downscaled JPEG.
	jpegQuality = 85
)

// Scaled is a downscaled copy of an image.
type Scaled struct {
	Data                []byte // the copy, encoded
	MIME                string // the copy's type: image/png or image/jpeg
	Width, Height       int    // the copy's size in pixels
	SrcWidth, SrcHeight int    // the original's size in pixels
}

// Downscale makes a smaller copy of a PNG, JPEG or GIF image whose base64
// fits maxB64 bytes: PNG, or JPEG for a JPEG. The aspect ratio is kept to
// the pixel. It tries a few sizes and keeps the largest that fits.
//
// The copy is always smaller than the original, even when the original
// fits: whether a copy is needed is the caller's call. It refuses an image of more than 50 million pixels
// without decoding it. Its errors are phrased to follow "no smaller copy
// could be made", e.g. "cannot decode it: ...".
func Downscale(data []byte, maxB64 int) (Scaled, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Scaled{}, fmt.Errorf("cannot decode it: %v", err)
	}
	w0, h0 := cfg.Width, cfg.Height
	if w0 <= 0 || h0 <= 0 {
		return Scaled{}, fmt.Errorf("its size is %dx%d", w0, h0)
	}
	if int64(w0)*int64(h0) > maxDecodePixels {
		return Scaled{}, fmt.Errorf("%dx%d is more pixels than the server decodes", w0, h0)
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Scaled{}, fmt.Errorf("cannot decode it: %v", err)
	}
	mime, encode := "image/png", encodePNG
	if format == "jpeg" {
		mime, encode = "image/jpeg", encodeJPEG
	}
	maxRaw := maxB64 / 4 * 3 // the most bytes whose base64 surely fits
	if maxRaw <= 0 {
		return Scaled{}, errors.New("the inline limit is too small for any image")
	}
	pyr := newPyramid(toRGBA(img))

	var (
		best      Scaled // the largest copy that fits so far
		bestScale float64
		failScale = 1.0 // the smallest scale known not to fit
	)
	// try encodes a copy and reports whether it fits.
	try := func(c *image.RGBA) (fits bool, err error) {
		w, h := c.Rect.Dx(), c.Rect.Dy()
		scale := float64(max(w, h)) / float64(max(w0, h0))
		var buf bytes.Buffer
		if err := encode(&buf, c); err != nil {
			return false, fmt.Errorf("encoding the copy: %v", err)
		}
		if base64.StdEncoding.EncodedLen(buf.Len()) > maxB64 {
			failScale = min(failScale, scale)
			return false, nil
		}
		if scale > bestScale {
			best, bestScale = Scaled{Data: buf.Bytes(), MIME: mime, Width: w, Height: h, SrcWidth: w0, SrcHeight: h0}, scale
		}
		return true, nil
	}

	// Halvings first: a drawing (a plot, text) resampled by a whole factor
	// stays crisp and compresses well, while by 0.9 it blurs and a copy of
	// a PNG barely over the limit is larger than the original. Start at
	// the halving the size alone says might fit, and go down.
	k := 1
	if est := math.Sqrt(float64(maxRaw) / float64(len(data))); est < 0.5 {
		k = int(math.Floor(math.Log2(1 / est)))
	}
	for ; ; k++ {
		c := pyr.level(k)
		fits, err := try(c)
		if err != nil {
			return Scaled{}, err
		}
		if fits {
			break
		}
		if c.Rect.Dx() == 1 && c.Rect.Dy() == 1 {
			return Scaled{}, fmt.Errorf("no copy small enough fits %s of base64", HumanBytes(int64(maxB64)))
		}
	}
	// Then, while the copy leaves room, sizes between it and the smallest
	// that did not fit. A photo (JPEG) blurs little and gains there; a
	// drawing blurs and compresses worse, so it takes an in-between size
	// only when the halving left more than half of the room unused.
	room := maxRaw / 2
	if format == "jpeg" {
		room = maxRaw * 85 / 100
	}
	for range 3 {
		if len(best.Data) >= room {
			break
		}
		w, h := scaledSize(w0, h0, math.Sqrt(bestScale*failScale))
		if (w == best.Width && h == best.Height) || float64(max(w, h)) >= failScale*float64(max(w0, h0)) {
			break // no size left in between
		}
		if _, err := try(resize(pyr.base(w, h), w, h)); err != nil {
			return Scaled{}, err
		}
	}
	return best, nil
}

// pyramid is an image and its halvings, made as needed: level k is the
// image scaled by 1/2^k, each level made from the one above, so that a try
// of Downscale resamples from a copy at most four times its size.
type pyramid struct {
	w0, h0 int
	levels []*image.RGBA
}

func newPyramid(src *image.RGBA) *pyramid {
	return &pyramid{w0: src.Rect.Dx(), h0: src.Rect.Dy(), levels: []*image.RGBA{src}}
}

// level returns the image scaled by 1/2^k.
func (p *pyramid) level(k int) *image.RGBA {
	for len(p.levels) <= k {
		n := len(p.levels)
		w, h := scaledSize(p.w0, p.h0, math.Ldexp(1, -n))
		p.levels = append(p.levels, resize(p.levels[n-1], w, h))
	}
	return p.levels[k]
}

// base returns the smallest level at least twice w x h.
func (p *pyramid) base(w, h int) *image.RGBA {
	k := 0
	for {
		nw, nh := scaledSize(p.w0, p.h0, math.Ldexp(1, -(k+1)))
		if nw < 2*w || nh < 2*h {
			return p.level(k)
		}
		k++
	}
}

// scaledSize is the size of an image of w0xh0 scaled by scale < 1, smaller
// than the original and at least 1x1: the longer side is rounded and the
// shorter one derived from it, so the aspect ratio holds to half a pixel.
func scaledSize(w0, h0 int, scale float64) (w, h int) {
	long, short := w0, h0
	if h0 > w0 {
		long, short = h0, w0
	}
	l := int(math.Round(float64(long) * scale))
	l = max(1, min(l, long-1))
	s := max(1, int(math.Round(float64(l)*float64(short)/float64(long))))
	if h0 > w0 {
		return s, l
	}
	return l, s
}

func encodePNG(w *bytes.Buffer, img image.Image) error { return png.Encode(w, img) }

func encodeJPEG(w *bytes.Buffer, img image.Image) error {
	return jpeg.Encode(w, img, &jpeg.Options{Quality: jpegQuality})
}

// toRGBA returns img as premultiplied RGBA with its origin at (0, 0).
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	if r, ok := img.(*image.RGBA); ok && b.Min == (image.Point{}) {
		return r
	}
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
	return dst
}

// span is what one destination pixel takes from the source along an axis:
// source pixels lo, lo+1, ... with weights w, which sum to 1.
type span struct {
	lo int
	w  []float32
}

// spans maps src pixels onto dst <= src pixels by area: destination pixel i
// covers source interval [i·r, (i+1)·r) with r = src/dst, each source pixel
// weighing by how much of it lies inside.
func spans(src, dst int) []span {
	r := float64(src) / float64(dst)
	out := make([]span, dst)
	for i := range out {
		a, b := float64(i)*r, float64(i+1)*r
		lo := int(math.Floor(a))
		hi := min(int(math.Ceil(b)), src)
		w := make([]float32, 0, hi-lo)
		for j := lo; j < hi; j++ {
			w = append(w, float32((math.Min(b, float64(j+1))-math.Max(a, float64(j)))/r))
		}
		out[i] = span{lo: lo, w: w}
	}
	return out
}

// resize downscales src to w x h with a box (area-average) filter. Colors
// are premultiplied, so transparent pixels do not bleed into opaque ones.
// It works a destination row at a time: memory is O(w).
func resize(src *image.RGBA, w, h int) *image.RGBA {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	xs, ys := spans(sw, w), spans(sh, h)
	acc := make([]float32, 4*w)
	for y, sy := range ys {
		clear(acc)
		for k, wy := range sy.w {
			row := src.Pix[(sy.lo+k)*src.Stride:]
			for x, sx := range xs {
				var r, g, b, a float32
				for m, wx := range sx.w {
					p := row[4*(sx.lo+m) : 4*(sx.lo+m)+4 : 4*(sx.lo+m)+4]
					r += wx * float32(p[0])
					g += wx * float32(p[1])
					b += wx * float32(p[2])
					a += wx * float32(p[3])
				}
				q := acc[4*x : 4*x+4 : 4*x+4]
				q[0] += wy * r
				q[1] += wy * g
				q[2] += wy * b
				q[3] += wy * a
			}
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for i, v := range acc {
			out[i] = uint8(min(255, max(0, v+0.5)))
		}
	}
	return dst
}

// HumanBytes writes a size as the server's flags take it: K and M are 1024
// and 1024².
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
