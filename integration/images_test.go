//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigFigure is a 2400x1600 scatter plot, some 550 KB of PNG. The inline
// backend's tight bounding box would trim it; without it the image has the
// figure's size exactly.
const bigFigure = `%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}
import matplotlib.pyplot as plt, numpy as np
fig, ax = plt.subplots(figsize=(12, 8), dpi=200)
ax.scatter(*np.random.default_rng(0).random((2, 20000)), s=1)
plt.show()`

// imageParts sorts a result's content: its images and its resource links.
func imageParts(res *mcp.CallToolResult) (imgs []*mcp.ImageContent, links []*mcp.ResourceLink) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			imgs = append(imgs, c)
		case *mcp.ResourceLink:
			links = append(links, c)
		}
	}
	return imgs, links
}

// readImage reads an image resource and returns its single content.
func readImage(t *testing.T, s *server, uri string) *mcp.ResourceContents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("reading %s: %v", uri, err)
	}
	if len(r.Contents) != 1 {
		t.Fatalf("reading %s: %d contents", uri, len(r.Contents))
	}
	return r.Contents[0]
}

func decodePNG(t *testing.T, what string, data []byte) image.Config {
	t.Helper()
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("%s is not a valid PNG (%d bytes): %v", what, len(data), err)
	}
	cfg, _ := png.DecodeConfig(bytes.NewReader(data))
	return cfg
}

// A figure over --max-inline-image comes back downscaled inline, with a
// link to the whole, which reads back at the figure's size.
func TestImageDownscaledWithLink(t *testing.T) {
	t.Parallel()
	requirePython(t, "matplotlib", "numpy")
	s := startServer(t, "--max-inline-image", "100K")
	res, out := s.run("fig", bigFigure)
	if res.IsError || out.Status != "ok" {
		t.Fatalf("figure: %+v\n%s", out, text(res))
	}
	imgs, links := imageParts(res)
	if len(imgs) != 1 || len(links) != 1 {
		t.Fatalf("want 1 image and 1 link, got %d and %d; text: %s", len(imgs), len(links), text(res))
	}
	img, link := imgs[0], links[0]
	if n := base64.StdEncoding.EncodedLen(len(img.Data)); img.MIMEType != "image/png" || n > 100<<10 {
		t.Fatalf("inline image %s with %d bytes of base64, over 100K", img.MIMEType, n)
	}
	if !strings.HasPrefix(link.URI, "session://fig/outputs/") || link.MIMEType != "image/png" || !strings.HasSuffix(link.Name, ".png") {
		t.Fatalf("link %+v", link)
	}
	small := decodePNG(t, "the inline copy", img.Data)

	full := readImage(t, s, link.URI)
	if full.MIMEType != "image/png" {
		t.Fatalf("resource is %s", full.MIMEType)
	}
	if link.Size == nil || *link.Size != int64(len(full.Blob)) {
		t.Errorf("link size %v, resource has %d bytes", link.Size, len(full.Blob))
	}
	whole := decodePNG(t, "the full image", full.Blob)
	if whole.Width != 2400 || whole.Height != 1600 {
		t.Fatalf("full image is %dx%d, want the figure's 2400x1600", whole.Width, whole.Height)
	}
	if small.Width >= whole.Width || small.Height >= whole.Height || len(img.Data) >= len(full.Blob) {
		t.Fatalf("inline copy %dx%d (%d bytes) is not smaller than the full %dx%d (%d bytes)", small.Width, small.Height, len(img.Data), whole.Width, whole.Height, len(full.Blob))
	}
	if d := small.Height*3 - small.Width*2; d > 3 || d < -3 {
		t.Errorf("inline copy %dx%d does not keep the 3:2 aspect ratio", small.Width, small.Height)
	}
	if note := text(res); !strings.Contains(note, "2400x1600") || !strings.Contains(note, link.URI) {
		t.Errorf("no note of the downscaling and the link: %q", note)
	}
	displays := structured[struct {
		Displays []struct {
			Resource string `json:"resource"`
		} `json:"displays"`
	}](t, res).Displays
	if len(displays) != 1 || displays[0].Resource != link.URI {
		t.Errorf("structured displays %+v, want the resource %s", displays, link.URI)
	}
	t.Logf("inline %dx%d, %d bytes; full %dx%d, %d bytes", small.Width, small.Height, len(img.Data), whole.Width, whole.Height, len(full.Blob))

	// A small plot goes inline whole, and is kept too: the next number.
	res, _ = s.run("fig", "plt.figure(figsize=(2, 1.5)); plt.plot([1, 2, 3]); plt.show()")
	imgs, links = imageParts(res)
	if len(imgs) != 1 || len(links) != 0 {
		t.Fatalf("small plot: %d images, %d links; text: %s", len(imgs), len(links), text(res))
	}
	second := strings.TrimSuffix(link.URI, "1") + "2"
	if kept := readImage(t, s, second); !bytes.Equal(kept.Blob, imgs[0].Data) {
		t.Fatalf("%s is not the small plot", second)
	}
}

// --image-mode link puts no image inline: one link per image, which reads
// back a valid PNG.
func TestImageLinkMode(t *testing.T) {
	t.Parallel()
	requirePython(t, "matplotlib")
	s := startServer(t, "--image-mode", "link")
	res, out := s.run("links", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()")
	if res.IsError || out.Status != "ok" {
		t.Fatalf("plot: %+v\n%s", out, text(res))
	}
	imgs, links := imageParts(res)
	if len(imgs) != 0 || len(links) != 1 {
		t.Fatalf("want no image and 1 link, got %d and %d", len(imgs), len(links))
	}
	if note := text(res); !strings.Contains(note, "image/png") || !strings.Contains(note, links[0].URI) {
		t.Errorf("note %q does not describe the image", note)
	}
	c := readImage(t, s, links[0].URI)
	if c.MIMEType != "image/png" {
		t.Fatalf("resource is %s", c.MIMEType)
	}
	decodePNG(t, "the linked image", c.Blob)
}

func TestImageResourceErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://nosuch/outputs/1"}); err == nil {
		t.Fatal("reading an image of a session that does not exist succeeded")
	} else if !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("error %q does not name the session", err)
	}
	if _, out := s.run("plain", "1 + 1"); out.Result != "2" {
		t.Fatalf("%+v", out)
	}
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://plain/outputs/1"}); err == nil {
		t.Fatal("reading an image of a session without images succeeded")
	}
}
