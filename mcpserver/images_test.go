package mcpserver

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/internal/testimg"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resource template serves kept images and explains the missing ones.
func TestImageResource(t *testing.T) {
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ss, err := srv.eng.LookupOrCreate("pics")
	if err != nil {
		t.Fatal(err)
	}
	st := ss.Images(true)
	pngData := testimg.ScatterPNG(t, 64, 48, 10)
	svg := `<svg xmlns="http://www.w3.org/2000/svg"/>`
	st.Add("image/png", pngData)
	st.Add(svgType, []byte(svg))
	st.SetBounds(2, engine.MaxKeptImageBytes)
	st.Add("image/png", pngData) // drops 1

	ct, stt := mcp.NewInMemoryTransports()
	ctx := context.Background()
	sss, err := srv.MCP().Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://pics/outputs/3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Contents) != 1 || r.Contents[0].MIMEType != "image/png" || !bytes.Equal(r.Contents[0].Blob, pngData) {
		t.Fatalf("output 3: %+v", r.Contents)
	}
	r, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://pics/outputs/2"})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Contents[0]; c.MIMEType != svgType || c.Text != svg || len(c.Blob) != 0 {
		t.Fatalf("SVG output: %+v", c)
	}
	for uri, want := range map[string][]string{
		"session://pics/outputs/1":   {"dropped", `"pics"`, "oldest still kept is 2"},
		"session://pics/outputs/9":   {"no output 9", "1 to 3"},
		"session://nosuch/outputs/1": {"nosuch"},
		"session://pics/outputs/0":   {"not found"},
		"session://pics/outputs/x":   {"not found"},
	} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			t.Errorf("%s: no error", uri)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", uri, err, w)
			}
		}
	}
	// The history resource still answers beside it.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "session://pics/history"}); err != nil {
		t.Fatalf("history: %v", err)
	}
}
