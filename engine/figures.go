package engine

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // registers GIF, JPEG and PNG for DescribeImage and Figure's size
	_ "image/jpeg"
	_ "image/png"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/imgscale"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// SVGType is the MIME type of SVG, which Jupyter bundles carry as text.
const SVGType = "image/svg+xml"

// ImageTypes are the image MIME types of a display bundle, in order of
// preference: an output shows the first it has.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", SVGType}

// ImageData returns the bytes of an output's value of type mime: base64
// decoded, or for SVG, the text.
func ImageData(o kernel.Output, mime string) ([]byte, bool) {
	s, ok := o.String(mime)
	if !ok {
		return nil, false
	}
	if mime == SVGType {
		return []byte(s), s != ""
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(data) == 0 {
		return nil, false
	}
	return data, true
}

// DescribeImage is "image/png, 812.3 KB, 2400x1600", the size in pixels
// when the image's header can be read.
func DescribeImage(mime string, data []byte) string {
	d := mime + ", " + imgscale.HumanBytes(int64(len(data)))
	if mime != SVGType {
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			d += fmt.Sprintf(", %dx%d", cfg.Width, cfg.Height)
		}
	}
	return d
}

// ImageExt is the file extension of an image type, without the dot.
func ImageExt(mime string) string {
	switch mime {
	case "image/jpeg":
		return "jpg"
	case SVGType:
		return "svg"
	}
	return strings.TrimPrefix(mime, "image/")
}

// Figure is an image output of a session's history, as the code produced it.
type Figure struct {
	MIME string
	Data []byte
	// Block is the history block (1-based) that produced it.
	Block int
	// Width and Height are its size in pixels, 0 when its header cannot
	// be read (SVG).
	Width, Height int
}

// Figure returns the image n back in the session's history (1 the latest).
// The caller holds the session's turn, so that the figure of a run sent
// just before is the latest.
func (s *Session) Figure(n int) (Figure, error) {
	hist := s.History()
	seen := 0
	for bi := len(hist) - 1; bi >= 0; bi-- {
		outs := hist[bi].Outputs
		for oi := len(outs) - 1; oi >= 0; oi-- {
			mime, data, ok := imageOf(outs[oi])
			if !ok {
				continue
			}
			if seen++; seen < n {
				continue
			}
			if data == nil {
				return Figure{}, fmt.Errorf("image %d back (block %d) was not kept: it was larger than the %d MB history keeps of an output", n, bi+1, HistoryDataLimit>>20)
			}
			f := Figure{MIME: mime, Data: data, Block: bi + 1}
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
				f.Width, f.Height = cfg.Width, cfg.Height
			}
			return f, nil
		}
	}
	if seen == 0 {
		return Figure{}, fmt.Errorf("session %q has no figure yet: draw one with run_code (plt.show()) or plot_data first", s.ID())
	}
	return Figure{}, fmt.Errorf("session %q has %d image(s); index %d goes further back than that", s.ID(), seen, n)
}

// imageOf returns an output's image: its type and bytes. data is nil for
// an image history did not keep (replaced by a note).
func imageOf(o history.Output) (mime string, data []byte, ok bool) {
	if o.OutputType != "display_data" && o.OutputType != "execute_result" {
		return "", nil, false
	}
	for _, mt := range ImageTypes {
		if b, ok := ImageData(kernel.Output{Data: o.Data}, mt); ok {
			return mt, b, true
		}
	}
	// An image history dropped for its size leaves a note in text/plain.
	if t, has := o.Data["text/plain"]; has && bytes.Contains(t, []byte("not kept in history")) && bytes.Contains(t, []byte("image/")) {
		return "", nil, true
	}
	return "", nil, false
}
