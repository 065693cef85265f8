package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cell view's live widgets: it has no event stream, so it polls
// view_widgets for the models its outputs show (waiting for a change, as
// view_run waits for output), and sends the person's changes with
// send_widget. Both are app-only, like view_run.

const (
	viewWidgetsTool = "view_widgets"
	sendWidgetTool  = "send_widget"
	// maxWidgetRoots bounds the widget views one view_widgets call names.
	maxWidgetRoots = 200
)

// ViewWidgetsInput is the input of view_widgets.
type ViewWidgetsInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	ModelIDs  []string `json:"model_ids" jsonschema:"the model ids of the widget views the cell shows"`
	Version   uint64   `json:"version,omitempty" jsonschema:"the version the previous call returned; 0 for every model"`
	Wait      float64  `json:"wait,omitempty" jsonschema:"seconds to wait for a change when nothing changed since version (default 0, at most 10)"`
}

// SendWidgetInput is the input of send_widget.
type SendWidgetInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (default \"default\")"`
	ModelID   string `json:"model_id" jsonschema:"the widget model the person changed"`
	engine.WidgetMessage
}

// addWidgetTools registers the cell view's widget tools: view_widgets
// always with the view, send_widget when the server runs code for its
// clients (a widget's callbacks run in the kernel).
func (s *Server) addWidgetTools() {
	meta := mcp.Meta{"ui": map[string]any{"resourceUri": cellURI, "visibility": []string{"app"}}}
	view := &mcp.Tool{
		Name:        viewWidgetsTool,
		Description: "For the cell view only: the state of the widget models a cell shows (and the models they name), those changed since version.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        meta,
	}
	mcp.AddTool(s.mcp, view, exactOutput(view, s.viewWidgets))
	if !s.offers("run_code") {
		return
	}
	send := &mcp.Tool{
		Name:        sendWidgetTool,
		Description: "For the cell view only: send a change the person made to a widget (a slider moved, a button clicked) to the session's kernel.",
		Meta:        meta,
	}
	mcp.AddTool(s.mcp, send, s.sendWidget)
}

func (s *Server) viewWidgets(ctx context.Context, _ *mcp.CallToolRequest, in ViewWidgetsInput) (*mcp.CallToolResult, engine.WidgetView, error) {
	var zero engine.WidgetView
	if len(in.ModelIDs) == 0 || len(in.ModelIDs) > maxWidgetRoots {
		return nil, zero, fmt.Errorf("invalid model_ids: give 1 to %d model ids, not %d", maxWidgetRoots, len(in.ModelIDs))
	}
	if math.IsNaN(in.Wait) || in.Wait < 0 {
		return nil, zero, fmt.Errorf("invalid wait %v: give seconds >= 0", in.Wait)
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return nil, zero, err
	}
	wait := min(time.Duration(in.Wait*float64(time.Second)), maxViewWait, s.cfg.MaxWait)
	v := ss.WidgetsSince(ctx, in.ModelIDs, in.Version, wait)
	return textResult(fmt.Sprintf("%d widget models of session %s changed (version %d)", len(v.Models), ss.ID(), v.Version)), v, nil
}

func (s *Server) sendWidget(ctx context.Context, _ *mcp.CallToolRequest, in SendWidgetInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.ModelID) == "" {
		return errResult[any]("model_id is empty: give the model the person changed")
	}
	ss, err := s.eng.Lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[any]("%v", err)
	}
	err = ss.SendWidgetMessage(ctx, in.ModelID, in.WidgetMessage)
	switch {
	case errors.Is(err, engine.ErrUnknownWidget), errors.Is(err, engine.ErrNoKernel):
		return errResult[any]("%v (session %s): the widget is gone; run its cell again", err, ss.ID())
	case err != nil:
		return errResult[any]("%v", err)
	}
	return textResult("sent to widget " + in.ModelID + " of session " + ss.ID()), nil, nil
}
