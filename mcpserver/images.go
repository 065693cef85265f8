package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/imgscale"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const svgType = engine.SVGType

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
