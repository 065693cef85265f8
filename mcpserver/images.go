package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/imgscale"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const svgType = engine.SVGType

func outputURI(id string, n int) string { return fmt.Sprintf("session://%s/outputs/%d", id, n) }

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
	// widgetText renders a widget view from the kernel's widget state
	// (engine.Session.WidgetText); nil leaves a view its text/plain.
	widgetText func(kernel.Output) (string, bool)
	// modelImage draws a chart or an SVG as a PNG
	// (engine.Session.ModelImage); nil draws none.
	modelImage func(kernel.Output, outputtext.Description) ([]byte, bool, error)
}

// renderFor renders a run of session ss: each image is kept in the session
// and shown as its policy (Config.MaxInlineImage, Config.ImageLinkOnly) says.
func (s *Server) renderFor(ss *engine.Session, res *kernel.ExecuteResult, out *RunOutput, shown engine.StreamShown) []mcp.Content {
	if ss == nil {
		return renderWith(res, out, s.cfg.OutputLimit, nil, shown)
	}
	return renderWith(res, out, s.cfg.OutputLimit, &imagePolicy{
		maxInline:  s.cfg.MaxInlineImage,
		linkOnly:   s.cfg.ImageLinkOnly,
		session:    ss.ID(),
		store:      func() *engine.ImageStore { return ss.Images(true) },
		widgetText: ss.WidgetText,
		modelImage: func(o kernel.Output, d outputtext.Description) ([]byte, bool, error) {
			return ss.ModelImage(context.Background(), o, d)
		},
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
				Name:        fmt.Sprintf("output-%d.%s", n, engine.ImageExt(mime)),
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
		where = fmt.Sprintf("the full image is not kept: it is larger than the %s a session keeps", imgscale.HumanBytes(engine.MaxKeptImageBytes))
	}
	withLink := func(c ...mcp.Content) []mcp.Content {
		if link != nil {
			c = append([]mcp.Content{link}, c...)
		}
		return c
	}
	desc := engine.DescribeImage(mime, data)

	switch {
	case pol.linkOnly:
		return withLink(&mcp.TextContent{Text: fmt.Sprintf("[%s; %s]", desc, where)}), uri, true
	case mime == svgType:
		return withLink(&mcp.TextContent{Text: fmt.Sprintf("[%s, not shown inline (SVG is not an inline image type); %s]", desc, where)}), uri, true
	case base64.StdEncoding.EncodedLen(len(data)) <= pol.maxInline:
		return []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: mime}}, uri, true
	}
	small, err := imgscale.Downscale(data, pol.maxInline)
	if err != nil {
		note := fmt.Sprintf("[%s, not shown inline: over the %s of base64 an inline image may have, and no smaller copy could be made (%v); %s]", desc, imgscale.HumanBytes(int64(pol.maxInline)), err, where)
		return withLink(&mcp.TextContent{Text: note}), uri, true
	}
	note := fmt.Sprintf("[the inline copy is %dx%d, downscaled from %dx%d to fit %s of base64; %s (%s, %s)]", small.Width, small.Height, small.SrcWidth, small.SrcHeight, imgscale.HumanBytes(int64(pol.maxInline)), where, mime, imgscale.HumanBytes(int64(len(data))))
	c := []mcp.Content{&mcp.ImageContent{Data: small.Data, MIMEType: small.MIME}}
	if link != nil {
		c = append(c, link)
	}
	return append(c, &mcp.TextContent{Text: note}), uri, true
}

func (s *Server) addImageResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "session://{session_id}/outputs/{n}",
		Name:        "session-output",
		Title:       "Session output image",
		Description: fmt.Sprintf("Image output n (1, 2, 3 ... in order of production) of a session, whole, as the code produced it; run results link to it. A session keeps its last %d images, at most %s.", engine.MaxKeptImages, imgscale.HumanBytes(engine.MaxKeptImageBytes)),
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
			return nil, resourceNotFound(uri, "resource %s not found: output %d of session %q was dropped to bound memory (a session keeps its last %d images, at most %s); none is kept now", uri, n, id, engine.MaxKeptImages, imgscale.HumanBytes(engine.MaxKeptImageBytes))
		default:
			return nil, resourceNotFound(uri, "resource %s not found: output %d of session %q was dropped to bound memory (a session keeps its last %d images, at most %s); the oldest still kept is %d", uri, n, id, engine.MaxKeptImages, imgscale.HumanBytes(engine.MaxKeptImageBytes), oldest)
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
