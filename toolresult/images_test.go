package toolresult

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/testimg"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

func noiseJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 0xff
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testPolicy(maxInline int) (*ImagePolicy, *engine.ImageStore) {
	st := engine.NewImageStore()
	return &ImagePolicy{MaxInline: maxInline, Session: "t", Store: func() *engine.ImageStore { return st }}, st
}

// contentKinds is a short form of a content list: "image,link,text".
func contentKinds(c []Part) string {
	var k []string
	for _, x := range c {
		switch {
		case x.Image != nil && x.Link == nil:
			k = append(k, "image")
		case x.Link != nil && x.Image == nil:
			k = append(k, "link")
		case x.isText():
			k = append(k, "text")
		default:
			k = append(k, "other")
		}
	}
	return strings.Join(k, ",")
}

func TestImageDownscalePNG(t *testing.T) {
	t.Parallel()
	const limit = 100_000
	full := testimg.ScatterPNG(t, 3000, 2000, 12000)
	if base64.StdEncoding.EncodedLen(len(full)) <= limit {
		t.Fatalf("test image is only %d bytes: too small to need downscaling", len(full))
	}
	pol, st := testPolicy(limit)
	content, uri, ok := renderImage(pol, "image/png", full)
	if !ok || uri != "session://t/outputs/1" {
		t.Fatalf("ok=%v uri=%q", ok, uri)
	}
	if got := contentKinds(content); got != "image,link,text" {
		t.Fatalf("content %s, want image,link,text", got)
	}
	img := content[0].Image
	if img.MIME != "image/png" {
		t.Fatalf("inline copy is %s", img.MIME)
	}
	if n := base64.StdEncoding.EncodedLen(len(img.Data)); n > limit {
		t.Fatalf("inline copy has %d bytes of base64, over %d", n, limit)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width >= 3000 || cfg.Height >= 2000 || cfg.Width < 100 {
		t.Fatalf("inline copy is %dx%d", cfg.Width, cfg.Height)
	}
	if d := float64(cfg.Height) - float64(cfg.Width)*2000/3000; d > 1 || d < -1 {
		t.Fatalf("inline copy %dx%d does not keep the 3:2 aspect ratio", cfg.Width, cfg.Height)
	}
	link := content[1].Link
	if link.URI != uri || link.Name != "output-1.png" || link.MIME != "image/png" || link.Size == nil || *link.Size != int64(len(full)) {
		t.Fatalf("link %+v", link)
	}
	note := content[2].Text
	for _, want := range []string{"2000", "3000x2000", uri} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	kept, _, _, ok := st.Get(1)
	if !ok || !bytes.Equal(kept.Data, full) || kept.MIME != "image/png" {
		t.Fatalf("store does not hold the full image: ok=%v %d bytes", ok, len(kept.Data))
	}
	t.Logf("%d bytes → %dx%d, %d bytes", len(full), cfg.Width, cfg.Height, len(img.Data))
}

func TestImageJPEGStaysJPEG(t *testing.T) {
	t.Parallel()
	const limit = 20_000
	full := noiseJPEG(t, 1200, 800)
	pol, _ := testPolicy(limit)
	content, _, _ := renderImage(pol, "image/jpeg", full)
	if got := contentKinds(content); got != "image,link,text" {
		t.Fatalf("content %s", got)
	}
	img := content[0].Image
	if img.MIME != "image/jpeg" || base64.StdEncoding.EncodedLen(len(img.Data)) > limit {
		t.Fatalf("inline copy %s of %d bytes", img.MIME, len(img.Data))
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("inline copy is not a JPEG: %v", err)
	}
	if d := float64(cfg.Height) - float64(cfg.Width)*800/1200; d > 1 || d < -1 {
		t.Fatalf("inline copy %dx%d", cfg.Width, cfg.Height)
	}
	if l := content[1].Link; l.Name != "output-1.jpg" || l.MIME != "image/jpeg" {
		t.Fatalf("link %+v", l)
	}
}

func TestImageSmallInline(t *testing.T) {
	small := testimg.ScatterPNG(t, 64, 48, 10)
	pol, st := testPolicy(1 << 20)
	content, uri, _ := renderImage(pol, "image/png", small)
	if got := contentKinds(content); got != "image" {
		t.Fatalf("content %s, want the image alone", got)
	}
	if !bytes.Equal(content[0].Image.Data, small) {
		t.Fatal("a small image is not inline as it is")
	}
	if _, _, _, ok := st.Get(1); !ok || uri != "session://t/outputs/1" {
		t.Fatalf("a small image is not kept too: %q", uri)
	}
}

func TestImageUndecodableAndSVGLinkOnly(t *testing.T) {
	pol, _ := testPolicy(1000)
	bogus := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 5000)...)
	content, _, _ := renderImage(pol, "image/png", bogus)
	if got := contentKinds(content); got != "link,text" {
		t.Fatalf("undecodable: content %s, want link,text", got)
	}
	if note := content[1].Text; !strings.Contains(note, "session://t/outputs/1") || !strings.Contains(note, "cannot decode") {
		t.Errorf("undecodable note: %q", note)
	}
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>`)
	for _, data := range [][]byte{svg, bytes.Repeat(svg, 100)} {
		content, uri, _ := renderImage(pol, svgType, data)
		if got := contentKinds(content); got != "link,text" {
			t.Fatalf("SVG of %d bytes: content %s, want link,text", len(data), got)
		}
		if l := content[0].Link; l.URI != uri || !strings.HasSuffix(l.Name, ".svg") || l.MIME != svgType {
			t.Fatalf("SVG link %+v", l)
		}
	}
}

func TestImageLinkOnlyMode(t *testing.T) {
	pol, _ := testPolicy(1 << 20)
	pol.LinkOnly = true
	content, uri, _ := renderImage(pol, "image/png", testimg.ScatterPNG(t, 64, 48, 10))
	if got := contentKinds(content); got != "link,text" {
		t.Fatalf("content %s, want link,text", got)
	}
	note := content[1].Text
	for _, want := range []string{"image/png", "64x48", uri} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if strings.Contains(note, "\n") {
		t.Errorf("note is not one line: %q", note)
	}
}

// Render keeps each display's image and names it in the display.
func TestFormatDisplayResource(t *testing.T) {
	pngData := testimg.ScatterPNG(t, 64, 48, 10)
	b64, _ := json.Marshal(base64.StdEncoding.EncodeToString(pngData))
	fig, _ := json.Marshal("<Figure size 64x48 with 1 Axes>")
	res := &kernel.ExecuteResult{Outputs: []kernel.Output{
		{Type: kernel.OutputStream, Name: "stdout", Text: "before\n"},
		{Type: kernel.OutputDisplayData, Data: map[string]json.RawMessage{"image/png": b64, "text/plain": fig}},
		{Type: kernel.OutputDisplayData, Data: map[string]json.RawMessage{"image/png": b64, "text/plain": fig}},
	}}
	pol, _ := testPolicy(1 << 20)
	var out RunOutput
	content := Render(res, &out, 20000, pol, engine.StreamShown{})
	if got := contentKinds(content); got != "text,image,image" {
		t.Fatalf("content %s", got)
	}
	if len(out.Displays) != 2 || out.Displays[0].Resource != "session://t/outputs/1" || out.Displays[1].Resource != "session://t/outputs/2" {
		t.Fatalf("displays %+v", out.Displays)
	}
	// Without a policy nothing is kept and the image is inline.
	out = RunOutput{}
	content = render(res, &out, 20000)
	if got := contentKinds(content); got != "text,image,image" || out.Displays[0].Resource != "" {
		t.Fatalf("render: content %s, displays %+v", got, out.Displays)
	}
}
