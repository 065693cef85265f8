package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// allTools is every tool the server has, in the order they are listed.
var allTools = []string{
	"create_session", "list_sessions", "run_code", "run_file", "wait_run", "send_input", "interrupt_session",
	"reset_session", "reset_run_context", "delete_session", "install_package", "session_status",
	"get_history", "delete_history", "export_history", "save_script", "save_notebook", "rerun_code",
	"run_notebook", "list_kernels",
	"get_value", "list_variables", "complete", "inspect", "save_figure",
	"load_data", "describe_data", "estimate_ols", "plot_data",
}

// runTools are the tools whose calls start runs, which a call can hand off
// (see runTool).
var runTools = map[string]bool{
	"run_code": true, "run_file": true, "rerun_code": true, "install_package": true, "run_notebook": true,
	"load_data": true, "describe_data": true, "estimate_ols": true, "plot_data": true,
}

// toolProfiles are the named sets --tools accepts besides "all".
var toolProfiles = map[string][]string{
	"minimal": {"run_code", "wait_run", "send_input", "get_history", "session_status"},
	"standard": {
		"create_session", "list_sessions", "run_code", "run_file", "wait_run", "send_input", "interrupt_session",
		"reset_session", "reset_run_context", "delete_session", "session_status",
		"get_history", "delete_history", "export_history", "save_script", "save_notebook", "rerun_code",
		"run_notebook",
	},
}

// ToolProfile turns a --tools value into the tools to offer: "all" (nil),
// "minimal", "standard", or a comma-separated list of tool and profile
// names, which are joined.
func ToolProfile(v string) ([]string, error) {
	var out []string
	all := false
	for _, item := range strings.Split(v, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		switch {
		case item == "":
			continue
		case item == "all":
			all = true
		case toolProfiles[item] != nil:
			out = append(out, toolProfiles[item]...)
		case slices.Contains(allTools, item):
			out = append(out, item)
		default:
			return nil, fmt.Errorf("unknown tool or profile %q; profiles: all, minimal, standard; tools: %s", item, strings.Join(allTools, ", "))
		}
	}
	if all {
		return nil, nil
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tools named; profiles: all, minimal, standard")
	}
	// A tool whose run can be handed off is useless without the tools that
	// pick the run up again.
	if slices.ContainsFunc(out, func(t string) bool { return runTools[t] }) {
		out = append(out, "wait_run", "send_input")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// offers reports whether the server offers a tool.
func (s *Server) offers(name string) bool {
	return s.cfg.Tools == nil || slices.Contains(s.cfg.Tools, name)
}

// addTool registers a tool if the server offers it.
func addTool[In, Out any](s *Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if !slices.Contains(allTools, t.Name) {
		panic("mcpserver: tool " + t.Name + " missing from allTools")
	}
	if !s.offers(t.Name) {
		return
	}
	if cellTools[t.Name] {
		t.Meta = cellMeta()
	}
	if t.OutputSchema == nil && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		// The structured content's fields are documented in docs/tools.md;
		// the schema inferred from Out cost more characters of tools/list
		// than every description together, and no client shows it to the
		// model. A tool whose Out is any (wait_run) declares none, since
		// some of its results have no structured content, which a
		// declared schema would make an error for the client.
		t.OutputSchema = &jsonschema.Schema{Type: "object"}
	}
	if queuedTools[t.Name] {
		// A queued call acts in the order it was sent: nothing it does,
		// not even finding or creating its session, comes before the
		// calls sent ahead of it (see awaitTicket).
		inner := h
		h = func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			ctx = context.WithValue(ctx, callStartKey{}, time.Now())
			if err := s.awaitTicket(ctx, req); err != nil {
				var zero Out
				return nil, zero, err
			}
			return inner(ctx, req, in)
		}
	}
	// What the call changed is in the resources before its result: the
	// session it created is listed, the history it wrote notified.
	handler := h
	h = func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := handler(ctx, req, in)
		s.awaitFollower()
		return res, out, err
	}
	mcp.AddTool(s.mcp, t, exactOutput(t, h))
}

// exactOutput has h's Out encoded once, by encoding/json, into the
// result's structured content. Given an Out, the SDK encodes it, decodes
// that into any to check it against the output schema and encodes it
// again: every number passes through a float64, and an integer above 2^53
// (an id, a nanosecond timestamp) reaches the client rounded. Set as a
// json.RawMessage, the structured content goes out as encoded. The check
// against the schema stays, on a decoded copy.
func exactOutput[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, any] {
	var schema *jsonschema.Resolved
	if sch, ok := t.OutputSchema.(*jsonschema.Schema); ok {
		var err error
		if schema, err = sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			panic(fmt.Sprintf("mcpserver: tool %s: output schema: %v", t.Name, err))
		}
	}
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if res.InputRequests != nil {
			return res, nil, nil // a question has no structured content
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the output of %s: %w", t.Name, err)
		}
		if string(raw) == "null" {
			return res, nil, nil // an Out of any left unset: none
		}
		if schema != nil {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, nil, err
			}
			if err := schema.Validate(&v); err != nil {
				return nil, nil, fmt.Errorf("the output of %s does not match its schema: %w", t.Name, err)
			}
		}
		res.StructuredContent = json.RawMessage(raw)
		if res.Content == nil {
			// As the SDK does: a client that reads no structured
			// content finds it as text.
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(raw)}}
		}
		return res, nil, nil
	}
}
