package toolresult

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/imgscale"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
)

const svgType = engine.SVGType

// OutputURI is the URI of a session's kept image n.
func OutputURI(id string, n int) string { return fmt.Sprintf("session://%s/outputs/%d", id, n) }

// ImagePolicy says what a result makes of an image output.
type ImagePolicy struct {
	// MaxInline is the most bytes of base64 an image may have inline.
	MaxInline int
	// LinkOnly puts no image inline, only links to the kept image.
	LinkOnly bool
	// Session is the id in the URIs of kept images.
	Session string
	// Store returns where images are kept; nil keeps none.
	Store func() *engine.ImageStore
	// WidgetText renders a widget view from the kernel's widget state
	// (engine.Session.WidgetText); nil leaves a view its text/plain.
	WidgetText func(kernel.Output) (string, bool)
	// ModelImage draws a chart or an SVG as a PNG
	// (engine.Session.ModelImage); nil draws none.
	ModelImage func(kernel.Output, outputtext.Description) ([]byte, bool, error)
}

// Renderer renders the runs of a server as its configuration says.
type Renderer struct {
	// Limit is the number of characters of output in one result.
	Limit int
	// MaxInlineImage and ImageLinkOnly are ImagePolicy's MaxInline and
	// LinkOnly.
	MaxInlineImage int
	ImageLinkOnly  bool
}

// Block renders a run of session ss: each image is kept in the session
// and shown as the renderer's policy says.
func (rd Renderer) Block(ss *engine.Session, res *kernel.ExecuteResult, out *RunOutput, shown engine.StreamShown) []Part {
	if ss == nil {
		return Render(res, out, rd.Limit, nil, shown)
	}
	return Render(res, out, rd.Limit, &ImagePolicy{
		MaxInline:  rd.MaxInlineImage,
		LinkOnly:   rd.ImageLinkOnly,
		Session:    ss.ID(),
		Store:      func() *engine.ImageStore { return ss.Images(true) },
		WidgetText: ss.WidgetText,
		ModelImage: func(o kernel.Output, d outputtext.Description) ([]byte, bool, error) {
			return ss.ModelImage(context.Background(), o, d)
		},
	}, shown)
}

// renderImage turns an image output into result content and returns the
// URI where it is kept ("" if it is not). ok is false when the image is not
// shown at all and the output's text stands for it.
//
// With a policy, the image is kept in the session; content is the image
// inline when its base64 fits pol.MaxInline, else a downscaled copy inline
// followed by a link to the whole and a note; a link and a note when no
// copy can be made (SVG, an undecodable image) or when pol.LinkOnly.
// Without one, it goes inline up to maxInlineImage bytes.
func renderImage(pol *ImagePolicy, mime string, data []byte) (content []Part, uri string, ok bool) {
	if pol == nil {
		if mime == svgType {
			return nil, "", false
		}
		if len(data) > maxInlineImage {
			note := fmt.Sprintf("[%s of %.1f MB not shown: larger than the %d MB an image may have inline; save_notebook keeps it]", mime, float64(len(data))/1e6, maxInlineImage>>20)
			return []Part{{Text: note}}, "", true
		}
		return []Part{{Image: &Image{MIME: mime, Data: data}}}, "", true
	}

	var link *Link
	if pol.Store != nil {
		if n, kept := pol.Store().Add(mime, data); kept {
			uri = OutputURI(pol.Session, n)
			size := int64(len(data))
			link = &Link{
				URI:         uri,
				Name:        fmt.Sprintf("output-%d.%s", n, engine.ImageExt(mime)),
				Title:       fmt.Sprintf("Output %d of session %s", n, pol.Session),
				Description: "the full image, as the code produced it",
				MIME:        mime,
				Size:        &size,
			}
		}
	}
	// where says where the full image is, for the notes.
	where := "the full image is at " + uri
	switch {
	case pol.Store == nil:
		where = "the full image is not kept"
	case link == nil:
		where = fmt.Sprintf("the full image is not kept: it is larger than the %s a session keeps", imgscale.HumanBytes(engine.MaxKeptImageBytes))
	}
	withLink := func(c ...Part) []Part {
		if link != nil {
			c = append([]Part{{Link: link}}, c...)
		}
		return c
	}
	desc := engine.DescribeImage(mime, data)

	switch {
	case pol.LinkOnly:
		return withLink(Part{Text: fmt.Sprintf("[%s; %s]", desc, where)}), uri, true
	case mime == svgType:
		return withLink(Part{Text: fmt.Sprintf("[%s, not shown inline (SVG is not an inline image type); %s]", desc, where)}), uri, true
	case base64.StdEncoding.EncodedLen(len(data)) <= pol.MaxInline:
		return []Part{{Image: &Image{MIME: mime, Data: data}}}, uri, true
	}
	small, err := imgscale.Downscale(data, pol.MaxInline)
	if err != nil {
		note := fmt.Sprintf("[%s, not shown inline: over the %s of base64 an inline image may have, and no smaller copy could be made (%v); %s]", desc, imgscale.HumanBytes(int64(pol.MaxInline)), err, where)
		return withLink(Part{Text: note}), uri, true
	}
	note := fmt.Sprintf("[the inline copy is %dx%d, downscaled from %dx%d to fit %s of base64; %s (%s, %s)]", small.Width, small.Height, small.SrcWidth, small.SrcHeight, imgscale.HumanBytes(int64(pol.MaxInline)), where, mime, imgscale.HumanBytes(int64(len(data))))
	c := []Part{{Image: &Image{MIME: small.MIME, Data: small.Data}}}
	if link != nil {
		c = append(c, Part{Link: link})
	}
	return append(c, Part{Text: note}), uri, true
}
