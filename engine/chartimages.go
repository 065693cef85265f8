package engine

import (
	"context"

	"errors"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/chartimage"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
)

// newChartRenderer makes the engine's chart renderer (chartimage): it starts
// no browser before the first chart. Under the sandbox the browser runs
// confined as a kernel is (kernel.ConfineCommand).
func (s *Engine) newChartRenderer() *chartimage.Renderer {
	if s.cfg.ChartBrowser == NoChartBrowser {
		return nil
	}
	o := chartimage.Options{Browser: s.cfg.ChartBrowser, Timeout: s.cfg.ChartTimeout}
	if sb := s.cfg.Sandbox; sb != nil {
		opts := *sb
		o.Confine = func(argv, rw []string) ([]string, error) {
			return kernel.ConfineCommand(opts, rw, argv)
		}
	}
	return chartimage.New(o)
}

// NoChartBrowser as Config.ChartBrowser turns chart images off.
const NoChartBrowser = "none"

// ErrChartsOff is ModelImage's error when chart images are turned off.
var ErrChartsOff = errors.New("chart images are turned off (--browser none)")

// ChartText is the text a model gets for chart d (outputtext.Describe)
// beside its image, given ModelImage's error: the summary alone when the
// image was drawn; with no browser, or images off, the summary and the
// line saying how the kernel can draw one (d.Note); else the summary and
// a line saying why there is no image. note is that line ("" for none).
func ChartText(d outputtext.Description, err error) (text, note string) {
	summary := strings.TrimSuffix(d.Text, "\n"+d.Note)
	switch {
	case err == nil:
		return summary, ""
	case errors.Is(err, chartimage.ErrNoBrowser) || errors.Is(err, ErrChartsOff):
		return d.Text, d.Note
	}
	note = "[no image of this chart: " + err.Error() + "]"
	return summary + "\n" + note, note
}

// ChartImageInfo says whether charts can be drawn as images here, and why
// not: "" when a browser was found.
func (s *Engine) ChartImageInfo() (browser string, why error) {
	if s.charts == nil {
		return "", ErrChartsOff
	}
	if err := s.charts.Available(); err != nil {
		return "", err
	}
	return s.charts.Browser(), nil
}

// ModelImage returns the PNG a model gets for output o, whose description
// is d (outputtext.Describe(o.Data), which the caller has made for the
// text), when o has no raster image: its chart (Plotly, Vega-Lite, Vega, Altair's HTML) drawn,
// or its SVG rasterised. ok is false when o has neither (nothing to
// draw); err, with ok, says why no image could be made (no browser, a
// chart past its time, a crash), in words for the reader. The record of
// the run is not touched: this is the model's view only.
func (ss *Session) ModelImage(ctx context.Context, o kernel.Output, d outputtext.Description) (png []byte, ok bool, err error) {
	if o.Type != kernel.OutputExecuteResult && o.Type != kernel.OutputDisplayData {
		return nil, false, nil
	}
	for _, mt := range []string{"image/png", "image/jpeg", "image/gif"} {
		if _, has := o.Data[mt]; has {
			return nil, false, nil
		}
	}
	kind, spec := chartimage.Kind(""), []byte(nil)
	if svg, has := ImageData(o, SVGType); has {
		kind, spec = chartimage.SVG, svg
	} else if d.Spec != nil {
		k, known := chartimage.KindOf(d.From)
		if !known {
			return nil, false, nil
		}
		kind, spec = k, d.Spec
	} else {
		return nil, false, nil
	}
	r := ss.eng.charts
	if r == nil {
		return nil, true, ErrChartsOff
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ss.eng.ctx, cancel) // the engine's close ends it
	defer stop()
	png, err = r.Render(ctx, kind, spec)
	if err != nil {
		ss.eng.cfg.Logger.Info("chart image", "session", ss.id, "kind", string(kind), "err", err)
	}
	return png, true, err
}
