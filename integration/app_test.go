//go:build unix

package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAppResource: the built binary serves the MCP App's cell view as one
// HTML document of the app MIME type, and lists it (and view_run) only to a
// client that declared the extension.
func TestAppResource(t *testing.T) {
	t.Parallel()
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	app := startServerWith(t, mcp.NewClient(&mcp.Implementation{Name: "app-host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps}))
	plain := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, s := range []*server{app, plain} {
		rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://kernel-mcp/cell.html"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rr.Contents) != 1 {
			t.Fatalf("resources/read gave %d contents", len(rr.Contents))
		}
		c := rr.Contents[0]
		if c.MIMEType != "text/html;profile=mcp-app" || !strings.HasPrefix(strings.ToLower(c.Text), "<!doctype html") {
			t.Fatalf("resources/read: MIME type %q, text %.60q", c.MIMEType, c.Text)
		}

		isApp := s == app
		tools, err := s.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "view_run" }); got != isApp {
			t.Errorf("tools/list (app client: %v) has view_run: %v", isApp, got)
		}
		res, err := s.cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == "ui://kernel-mcp/cell.html" }); got != isApp {
			t.Errorf("resources/list (app client: %v) has the view: %v", isApp, got)
		}
	}
}
