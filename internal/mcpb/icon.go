package mcpb

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// iconSize is the icon's width and height: 512 px, what Claude Desktop
// recommends.
const iconSize = 512

// icon draws the bundle's icon, a prompt ("›_") on a rounded square, and
// encodes it as PNG. It is drawn, not stored, so the bundle is made from
// sources alone; the same Go version gives the same bytes on any machine.
func icon() ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, iconSize, iconSize))
	bg := [3]float64{0x1f, 0x3a, 0x5f}
	fg := [3]float64{0xff, 0xff, 0xff}
	accent := [3]float64{0xf3, 0x77, 0x26}
	const s = iconSize
	for y := 0; y < s; y++ {
		for x := 0; x < s; x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			// Coverage of each shape from its signed distance (negative
			// inside), one pixel of anti-aliasing.
			cover := func(d float64) float64 { return math.Max(0, math.Min(1, 0.5-d)) }
			square := cover(roundedBox(px-s/2, py-s/2, s/2-8, s/2-8, 96))
			if square == 0 {
				continue
			}
			chevron := cover(math.Min(
				segment(px, py, 150, 160, 260, 256),
				segment(px, py, 260, 256, 150, 352)) - 26)
			bar := cover(segment(px, py, 300, 352, 380, 352) - 26)
			c := bg
			for i := range c {
				c[i] = float64(c[i]*(1-chevron)) + float64(fg[i]*chevron)
				c[i] = float64(c[i]*(1-bar)) + float64(accent[i]*bar)
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(math.Round(c[0])), uint8(math.Round(c[1])), uint8(math.Round(c[2])), uint8(math.Round(255 * square))})
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// roundedBox is the signed distance from (x, y) to a box centred on the
// origin with half-sizes w, h and corner radius r.
func roundedBox(x, y, w, h, r float64) float64 {
	qx, qy := math.Abs(x)-w+r, math.Abs(y)-h+r
	return length(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - r
}

// segment is the distance from (x, y) to the segment from (ax, ay) to (bx, by).
func segment(x, y, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	t := math.Max(0, math.Min(1, (float64((x-ax)*dx)+float64((y-ay)*dy))/(float64(dx*dx)+float64(dy*dy))))
	return length(x-ax-float64(t*dx), y-ay-float64(t*dy))
}

// length is the length of (x, y). The float64 conversions keep the
// compiler from fusing multiply and add (it may on arm64), and Sqrt is
// exact everywhere, so the icon's pixels do not depend on the machine
// that builds it. (math.Hypot is plain Go and could be fused.)
func length(x, y float64) float64 { return math.Sqrt(float64(x*x) + float64(y*y)) }
