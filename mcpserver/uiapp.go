package mcpserver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/chartlib"
	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP App (the io.modelcontextprotocol/ui extension): a cell view the
// host shows inside the conversation. The tools that run code link it from
// their _meta; the view reads the tool's result the host hands it, and
// follows a run that goes on through view_run, a tool only the view calls.
// Results stay exactly as they are for every client: a client without the
// extension sees the same tools (apart from _meta) and the same results.

const (
	// uiExtension is the extension's id in the client's capabilities.
	uiExtension = "io.modelcontextprotocol/ui"
	// cellURI is the cell view's resource.
	cellURI = "ui://kernel-mcp/cell.html"
	// appMIMEType marks an MCP App's HTML.
	appMIMEType = "text/html;profile=mcp-app"
	// viewRunTool is the app-only tool that follows a run.
	viewRunTool = "view_run"
	// chartURIPrefix starts the chart libraries' resources: the cell view
	// reads ui://kernel-mcp/charts/plotly.js or vega.js when a chart appears.
	chartURIPrefix = "ui://kernel-mcp/charts/"
	// chartMIMEType is a chart library's type; chartGzipMIMEType that of
	// its gzipped form (NAME.js.gz, a blob), which a view that can
	// decompress reads instead: 2.4 times fewer bytes through the host.
	chartMIMEType     = "text/javascript"
	chartGzipMIMEType = "application/gzip"
)

// cellTools are the tools whose results the cell view shows.
var cellTools = map[string]bool{
	"run_code": true, "run_file": true, "rerun_code": true, "run_notebook": true, "wait_run": true,
	"load_data": true, "describe_data": true, "plot_data": true, "estimate_ols": true,
}

// cellMeta links a tool to the cell view: the key of the stable spec and
// the flat one VS Code still reads.
func cellMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"resourceUri": cellURI}, "ui/resourceUri": cellURI}
}

// ViewRunInput is the input of view_run.
type ViewRunInput struct {
	SessionID string  `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	RunID     string  `json:"run_id,omitempty" jsonschema:"the run (default: the session's latest)"`
	Cursor    int     `json:"cursor,omitempty" jsonschema:"the cursor the previous call returned; 0 for everything"`
	Wait      float64 `json:"wait,omitempty" jsonschema:"seconds to wait for something new (output, a change of status) when there is nothing yet (default 0, at most 10)"`
	Status    string  `json:"status,omitempty" jsonschema:"the run's status as the previous call returned it: another status now is news"`
}

// maxViewWait bounds view_run's wait for news.
const maxViewWait = 10 * time.Second

// ViewRunOutput is view_run's structured content. While the run goes on,
// Cells is one cell whose outputs are those that arrived from the cursor
// on (the view appends them); once it is done, Done is set and Cells are
// the blocks the run recorded, with their final outputs (the view shows
// them instead).
type ViewRunOutput struct {
	Cells  []Cell `json:"cells"`
	Cursor int    `json:"cursor"`
	Done   bool   `json:"done"`
}

// Cell is a notebook cell as the views render it (engine.Cell).
type Cell = engine.Cell

// addApp registers the cell view and its app-only tools, when the server offers a
// tool that links the view.
func (s *Server) addApp() {
	if !slices.ContainsFunc(allTools, func(t string) bool { return cellTools[t] && s.offers(t) }) {
		return
	}
	uiMeta := mcp.Meta{"ui": map[string]any{"prefersBorder": true}}
	s.mcp.AddResource(&mcp.Resource{
		URI:         cellURI,
		Name:        "cell-view",
		Title:       "Notebook cell view",
		Description: "The MCP App that shows a run as a notebook cell: code, outputs, live progress",
		MIMEType:    appMIMEType,
		Meta:        uiMeta,
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		html, err := cellHTML()
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: cellURI, MIMEType: appMIMEType, Text: html, Meta: uiMeta}}}, nil
	})
	// The chart libraries, read by the view through the host when a chart
	// appears (resources/read): the view's own load stays small, and under
	// the hosts' default CSP (connect-src 'none') a view fetches nothing
	// itself; it runs the script it read as an inline script.
	for _, name := range append(slices.Clone(chartlib.Names), chartlib.Widgets) {
		uri := chartURIPrefix + name + ".js"
		s.mcp.AddResource(&mcp.Resource{
			URI:         uri,
			Name:        "chart-library-" + name,
			Title:       "Chart library " + name + " for the cell view",
			Description: "The script the cell view runs to draw " + map[string]string{"plotly": "Plotly figures", "vega": "Vega-Lite and Vega charts", "katex": "math (KaTeX, as MathML)", chartlib.Widgets: "ipywidgets"}[name] + " interactively",
			MIMEType:    chartMIMEType,
		}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			text, ok := chartlib.Text(name)
			if !ok {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: chartMIMEType, Text: text}}}, nil
		})
		gzURI := uri + ".gz"
		s.mcp.AddResource(&mcp.Resource{
			URI:         gzURI,
			Name:        "chart-library-" + name + "-gzip",
			Title:       "Chart library " + name + " for the cell view, gzipped",
			Description: "The same script as " + uri + ", gzipped",
			MIMEType:    chartGzipMIMEType,
		}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			gz, ok := chartlib.Gzip(name)
			if !ok {
				return nil, mcp.ResourceNotFoundError(gzURI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: gzURI, MIMEType: chartGzipMIMEType, Blob: gz}}}, nil
		})
	}
	view := &mcp.Tool{
		Name:        viewRunTool,
		Description: "For the cell view only: a run's state and the outputs that arrived after cursor, or once it is done its recorded cells. Takes nothing from wait_run.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": cellURI, "visibility": []string{"app"}}},
	}
	mcp.AddTool(s.mcp, view, exactOutput(view, s.viewRun))
	s.addWidgetTools()
	s.mcp.AddReceivingMiddleware(s.appOnly)
}

// viewRun is view_run: it takes no turn in the session's queue and reads
// the run's viewer log, never wait_run's pending output.
func (s *Server) viewRun(ctx context.Context, _ *mcp.CallToolRequest, in ViewRunInput) (*mcp.CallToolResult, any, error) {
	if in.Cursor < 0 {
		return errResult[any]("invalid cursor %d: give 0 or the cursor the previous call returned", in.Cursor)
	}
	if math.IsNaN(in.Wait) || in.Wait < 0 {
		return errResult[any]("invalid wait %v: give seconds >= 0", in.Wait)
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[any]("%v", err)
	}
	r, err := ss.FindRun(in.RunID)
	if err != nil {
		return errResult[any]("%v", err)
	}
	snap := s.eng.ViewNews(ctx, r, in.Cursor, in.Status, min(time.Duration(in.Wait*float64(time.Second)), maxViewWait, s.cfg.MaxWait))
	lang := ss.Describe().Language
	out := ViewRunOutput{Cursor: snap.Cursor, Done: snap.View.Status == engine.StatusDone}
	if out.Done {
		out.Cells = ss.RunCells(r, lang)
	}
	if len(out.Cells) == 0 {
		// A run going on; or one that recorded nothing (it failed to
		// start, or its blocks were deleted since): its live cell.
		c := engine.LiveCell(r, lang, snap)
		if snap.Truncated {
			c.Note = "The live view stopped following this run's output: too much of it. The recorded cell will show what history keeps."
		}
		if out.Done {
			c.Status, c.Note = endStatus(r)
		}
		out.Cells = []Cell{c}
	}
	status := snap.View.Status
	if out.Done {
		status = out.Cells[len(out.Cells)-1].Status
	}
	return textResult(fmt.Sprintf("run %s in session %s: %s", r.ID(), ss.ID(), status)), out, nil
}

// endStatus is how a run that recorded no block ended, and why.
func endStatus(r *engine.Run) (status, note string) {
	v, err := r.Result()
	if err != nil {
		return "error", err.Error()
	}
	tr, _ := v.(toolResult)
	if ro, ok := tr.out.(RunOutput); ok && ro.Status != "" {
		return ro.Status, ro.Note
	}
	if tr.res != nil && tr.res.IsError {
		return "error", ""
	}
	return "ok", ""
}

// appTools are the tools only the cell view calls.
var appTools = []string{viewRunTool, viewWidgetsTool, sendWidgetTool}

// appOnly hides the app-only tools from a client that did not declare the extension:
// tools/list leaves it out, and a call is refused as the SDK refuses an
// unknown tool. resources/list leaves the view out for such a client too,
// so that its lists stay as they were (and so do the chart libraries the
// view reads); the view can still be read.
func (s *Server) appOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if r.Params != nil && slices.Contains(appTools, r.Params.Name) && !declaresUI(r) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
			}
			return next(ctx, method, req)
		case *mcp.ListToolsRequest:
			if declaresUI(r) {
				return next(ctx, method, req)
			}
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				c := *lt
				c.Tools = slices.DeleteFunc(slices.Clone(lt.Tools), func(t *mcp.Tool) bool { return slices.Contains(appTools, t.Name) })
				return &c, nil
			}
			return res, err
		case *mcp.ListResourcesRequest:
			if declaresUI(r) {
				return next(ctx, method, req)
			}
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil {
				c := *lr
				c.Resources = slices.DeleteFunc(slices.Clone(lr.Resources), func(r *mcp.Resource) bool {
					return r.URI == cellURI || strings.HasPrefix(r.URI, chartURIPrefix)
				})
				return &c, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// declaresUI reports whether the calling client declared the MCP Apps
// extension (in its initialize request, or in the request's own _meta in
// the stateless protocol).
func declaresUI(req interface {
	ClientCapabilities() *mcp.ClientCapabilities
}) bool {
	caps := req.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[uiExtension]
	return ok
}
