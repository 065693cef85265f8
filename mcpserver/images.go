package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // registers GIF for image.Decode
	"image/jpeg"
	"image/png"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// maxDecodePixels is the largest image decoded for a downscaled copy;
	// a larger one is only linked (a decoded pixel takes 4 bytes or more).
	maxDecodePixels = 50_000_000
	// jpegQuality is the quality of a downscaled JPEG.
	jpegQuality = 85
)

const svgType = "image/svg+xml"

func outputURI(id string, n int) string { return fmt.Sprintf("session://%s/outputs/%d", id, n) }

// imageData returns the bytes of an output's value of type mime: base64
// decoded, or for SVG, which Jupyter bundles carry as text, the text.
func imageData(o kernel.Output, mime string) ([]byte, bool) {
	s, ok := o.String(mime)
	if !ok {
		return nil, false
	}
	if mime == svgType {
		return []byte(s), s != ""
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(data) == 0 {
		return nil, false
	}
	return data, true
}

// imagePolicy says what a result makes of an image output.
type imagePolicy struct {
	// maxInline is the most bytes of base64 an image may have inline.
	maxInline int
	// linkOnly puts no image inline, only links to the kept image.
	linkOnly bool
	// session is the id in the URIs of kept images.
	session string
	// store returns where images are kept; nil keeps none.
	store func() *engine.ImageStore
}

// renderFor renders a run of session ss: each image is kept in the session
// and shown as its policy (Config.MaxInlineImage, Config.ImageLinkOnly) says.
func (s *Server) renderFor(ss *engine.Session, res *kernel.ExecuteResult, out *RunOutput, shown engine.StreamShown) []mcp.Content {
	if ss == nil {
		return renderWith(res, out, s.cfg.OutputLimit, nil, shown)
	}
	return renderWith(res, out, s.cfg.OutputLimit, &imagePolicy{
		maxInline: s.cfg.MaxInlineImage,
		linkOnly:  s.cfg.ImageLinkOnly,
		session:   ss.ID(),
		store:     func() *engine.ImageStore { return ss.Images(true) },
	}, shown)
}

// renderImage turns an image output into result content and returns the
// URI where it is kept ("" if it is not). ok is false when the image is not
// shown at all and the output's text stands for it.
//
// With a policy, the image is kept in the session; content is the image
// inline when its base64 fits pol.maxInline, else a downscaled copy inline
// followed by a link to the whole and a note; a link and a note when no
// copy can be made (SVG, an undecodable image) or when pol.linkOnly.
// Without one, it goes inline up to maxInlineImage bytes.
func renderImage(pol *imagePolicy, mime string, data []byte) (content []mcp.Content, uri string, ok bool) {
	if pol == nil {
		if mime == svgType {
			return nil, "", false
		}
		if len(data) > maxInlineImage {
			note := fmt.Sprintf("[%s of %.1f MB not shown: larger than the %d MB an image may have inline; save_notebook keeps it]", mime, float64(len(data))/1e6, maxInlineImage>>20)
			return []mcp.Content{&mcp.TextContent{Text: note}}, "", true
		}
		return []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: mime}}, "", true
	}

	var link *mcp.ResourceLink
	if pol.store != nil {
		if n, kept := pol.store().Add(mime, data); kept {
			uri = outputURI(pol.session, n)
			size := int64(len(data))
			link = &mcp.ResourceLink{
				URI:         uri,
				Name:        fmt.Sprintf("output-%d.%s", n, imageExt(mime)),
				Title:       fmt.Sprintf("Output %d of session %s", n, pol.session),
				Description: "the full image, as the code produced it",
				MIMEType:    mime,
				Size:        &size,
			}
		}
	}
	// where says where the full image is, for the notes.
	where := "the full image is at " + uri
	switch {
	case pol.store == nil:
		where = "the full image is not kept"
	case link == nil:
		where = fmt.Sprintf("the full image is not kept: it is larger than the %s a session keeps", humanBytes(engine.MaxKeptImageBytes))
	}
	withLink := func(c ...mcp.Content) []mcp.Content {
		if link != nil {
			c = append([]mcp.Content{link}, c...)
		}
		return c
	}
	desc := describeImage(mime, data)

	switch {
	case pol.linkOnly:
		return withLink(&mcp.TextContent{Text: fmt.Sprintf("[%s; %s]", desc, where)}), uri, true
	case mime == svgType:
		return withLink(&mcp.TextContent{Text: fmt.Sprintf("[%s, not shown inline (SVG is not an inline image type); %s]", desc, where)}), uri, true
	case base64.StdEncoding.EncodedLen(len(data)) <= pol.maxInline:
		return []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: mime}}, uri, true
	}
	small, err := downscale(data, pol.maxInline)
	if err != nil {
		note := fmt.Sprintf("[%s, not shown inline: over the %s of base64 an inline image may have, and no smaller copy could be made (%v); %s]", desc, humanBytes(int64(pol.maxInline)), err, where)
		return withLink(&mcp.TextContent{Text: note}), uri, true
	}
	note := fmt.Sprintf("[the inline copy is %dx%d, downscaled from %dx%d to fit %s of base64; %s (%s, %s)]", small.w, small.h, small.w0, small.h0, humanBytes(int64(pol.maxInline)), where, mime, humanBytes(int64(len(data))))
	c := []mcp.Content{&mcp.ImageContent{Data: small.data, MIMEType: small.mime}}
	if link != nil {
		c = append(c, link)
	}
	return append(c, &mcp.TextContent{Text: note}), uri, true
}

// describeImage is "image/png, 812.3 KB, 2400x1600", the size in pixels
// when the image's header can be read.
func describeImage(mime string, data []byte) string {
	d := mime + ", " + humanBytes(int64(len(data)))
	if mime != svgType {
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			d += fmt.Sprintf(", %dx%d", cfg.Width, cfg.Height)
		}
	}
	return d
}

func imageExt(mime string) string {
	switch mime {
	case "image/jpeg":
		return "jpg"
	case svgType:
		return "svg"
	}
	return strings.TrimPrefix(mime, "image/")
}

// humanBytes writes a size as the flags take it: K and M are 1024 and 1024².
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// scaledImage is a downscaled copy of an image.
type scaledImage struct {
	data   []byte
	mime   string
	w, h   int // the copy's size
	w0, h0 int // the original's size
}

// downscale makes a smaller copy of a PNG, JPEG or GIF image whose base64
// fits maxB64 bytes: PNG, or JPEG for a JPEG. The aspect ratio is kept to
// the pixel. It tries a few sizes and keeps the largest that fits.
func downscale(data []byte, maxB64 int) (scaledImage, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return scaledImage{}, fmt.Errorf("cannot decode it: %v", err)
	}
	w0, h0 := cfg.Width, cfg.Height
	if w0 <= 0 || h0 <= 0 {
		return scaledImage{}, fmt.Errorf("its size is %dx%d", w0, h0)
	}
	if int64(w0)*int64(h0) > maxDecodePixels {
		return scaledImage{}, fmt.Errorf("%dx%d is more pixels than the server decodes", w0, h0)
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return scaledImage{}, fmt.Errorf("cannot decode it: %v", err)
	}
	mime, encode := "image/png", encodePNG
	if format == "jpeg" {
		mime, encode = "image/jpeg", encodeJPEG
	}
	maxRaw := maxB64 / 4 * 3 // the most bytes whose base64 surely fits
	if maxRaw <= 0 {
		return scaledImage{}, errors.New("the inline limit is too small for any image")
	}
	pyr := newPyramid(toRGBA(img))

	var (
		best      scaledImage // the largest copy that fits so far
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
			best, bestScale = scaledImage{data: buf.Bytes(), mime: mime, w: w, h: h, w0: w0, h0: h0}, scale
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
			return scaledImage{}, err
		}
		if fits {
			break
		}
		if c.Rect.Dx() == 1 && c.Rect.Dy() == 1 {
			return scaledImage{}, fmt.Errorf("no copy small enough fits %s of base64", humanBytes(int64(maxB64)))
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
		if len(best.data) >= room {
			break
		}
		w, h := scaledSize(w0, h0, math.Sqrt(bestScale*failScale))
		if (w == best.w && h == best.h) || float64(max(w, h)) >= failScale*float64(max(w0, h0)) {
			break // no size left in between
		}
		if _, err := try(resize(pyr.base(w, h), w, h)); err != nil {
			return scaledImage{}, err
		}
	}
	return best, nil
}

// pyramid is an image and its halvings, made as needed: level k is the
// image scaled by 1/2^k, each level made from the one above, so that a try
// of downscale resamples from a copy at most four times its size.
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

func (s *Server) addImageResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "session://{session_id}/outputs/{n}",
		Name:        "session-output",
		Title:       "Session output image",
		Description: fmt.Sprintf("Image output n (1, 2, 3 ... in order of production) of a session, whole, as the code produced it; run results link to it. A session keeps its last %d images, at most %s.", engine.MaxKeptImages, humanBytes(engine.MaxKeptImageBytes)),
	}, s.readImageResource)
}

// parseOutputURI splits session://{session_id}/outputs/{n}.
func parseOutputURI(uri string) (id string, n int, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "session" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", 0, false
	}
	num, found := strings.CutPrefix(u.Path, "/outputs/")
	if !found {
		return "", 0, false
	}
	n, err = strconv.Atoi(num)
	if err != nil || n < 1 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return u.Host, n, true
}

// readImageResource serves session://{session_id}/outputs/{n}.
func (s *Server) readImageResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, n, ok := parseOutputURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ss, err := s.eng.Lookup(id)
	if err != nil {
		return nil, resourceNotFound(uri, "resource %s not found: %v", uri, err)
	}
	st := ss.Images(false)
	if st == nil {
		return nil, resourceNotFound(uri, "resource %s not found: session %q has produced no images", uri, id)
	}
	img, oldest, last, ok := st.Get(n)
	if !ok {
		switch {
		case n > last && last == 0:
			return nil, resourceNotFound(uri, "resource %s not found: session %q has produced no images", uri, id)
		case n > last:
			return nil, resourceNotFound(uri, "resource %s not found: session %q has no output %d; its images so far are numbered 1 to %d", uri, id, n, last)
		case oldest == 0:
			return nil, resourceNotFound(uri, "resource %s not found: output %d of session %q was dropped to bound memory (a session keeps its last %d images, at most %s); none is kept now", uri, n, id, engine.MaxKeptImages, humanBytes(engine.MaxKeptImageBytes))
		default:
			return nil, resourceNotFound(uri, "resource %s not found: output %d of session %q was dropped to bound memory (a session keeps its last %d images, at most %s); the oldest still kept is %d", uri, n, id, engine.MaxKeptImages, humanBytes(engine.MaxKeptImageBytes), oldest)
		}
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: img.MIME}
	if img.MIME == svgType {
		c.Text = string(img.Data)
	} else {
		c.Blob = img.Data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// resourceNotFound is mcp.ResourceNotFoundError (same code and data) with
// a message that says why.
func resourceNotFound(uri, format string, args ...any) error {
	err := mcp.ResourceNotFoundError(uri)
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		we.Message = fmt.Sprintf(format, args...)
	}
	return err
}
