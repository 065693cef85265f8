package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsListBudget keeps tools/list small: the client sends it to the
// model before the first call, on every turn. The size is that of the
// JSON of the tools array as a go-sdk client receives it.
func TestToolsListBudget(t *testing.T) {
	for _, tc := range []struct {
		profile string
		budget  int
	}{
		{"all", 20000},
		{"minimal", 6000},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			tools, err := ToolProfile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			got := listedTools(t, Config{Tools: tools})
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("--tools %s: %d tools, tools/list %d characters (budget %d); instructions %d characters", tc.profile, len(got), len(b), tc.budget, len(instructions(Config{})))
			if len(b) > tc.budget {
				t.Errorf("tools/list with --tools %s is %d characters, more than %d", tc.profile, len(b), tc.budget)
			}
		})
	}
}

// listedTools lists the tools of a server with cfg through a go-sdk client.
func listedTools(t *testing.T, cfg Config) []*mcp.Tool {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "budget", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}
