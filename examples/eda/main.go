// Command eda is an exploratory analysis driven over MCP, the way an
// assistant would do it: it starts kernel-mcp over stdio, writes a small
// dataset, then calls load_data, describe_data, plot_data, estimate_ols,
// get_value and save_figure, printing each call and what came back.
//
//	make build && go run ./examples/eda -server bin/kernel-mcp
//
// docs/walkthrough.md is its output.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	server := flag.String("server", "bin/kernel-mcp", "the kernel-mcp binary")
	dir := flag.String("dir", "", "working directory for the data and the figure (default: a new temporary one)")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "kernel-mcp-eda-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	if err := writeData(filepath.Join(*dir, "sales.csv")); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	cmd := exec.Command(*server, "--state-dir", "none")
	client := mcp.NewClient(&mcp.Implementation{Name: "eda-example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		log.Fatalf("starting %s: %v", *server, err)
	}
	defer cs.Close()

	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		a, _ := json.Marshal(args)
		fmt.Printf("→ %s %s\n", tool, a)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			log.Fatalf("%s: %v", tool, err)
		}
		for _, c := range res.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				fmt.Println(indent(c.Text))
			case *mcp.ImageContent:
				fmt.Printf("  [%s image, %d bytes]\n", c.MIMEType, len(c.Data))
			case *mcp.ResourceLink:
				fmt.Printf("  [link: %s]\n", c.URI)
			}
		}
		if res.IsError {
			log.Fatalf("%s failed", tool)
		}
		fmt.Println()
		return res
	}

	call("create_session", map[string]any{"session_id": "eda", "cwd": *dir})
	call("load_data", map[string]any{"session_id": "eda", "path": "sales.csv"})
	call("describe_data", map[string]any{"session_id": "eda"})
	call("plot_data", map[string]any{"session_id": "eda", "kind": "scatter", "x": "price", "y": "sales"})
	res := call("estimate_ols", map[string]any{"session_id": "eda", "y": "sales", "x": []string{"price", "advertising"}})
	var est struct {
		Coefficients []struct {
			Name   string  `json:"name"`
			Coef   float64 `json:"coef"`
			StdErr float64 `json:"std_err"`
		} `json:"coefficients"`
		R2 float64 `json:"r2"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &est)
	fmt.Println("Structured estimate:")
	for _, c := range est.Coefficients {
		fmt.Printf("  %-12s %8.3f (%.3f)\n", c.Name, c.Coef, c.StdErr)
	}
	fmt.Printf("  R² %.3f\n\n", est.R2)
	call("get_value", map[string]any{"session_id": "eda", "expression": "model.params.round(3)"})
	call("save_figure", map[string]any{"session_id": "eda", "path": "figures/price_vs_sales.png"})
}

// writeData writes 200 rows of weekly sales: sales = 50 - 3 price +
// 0.5 advertising + noise, with a few advertising values missing.
func writeData(path string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("week,price,advertising,sales\n")
	for w := 1; w <= 200; w++ {
		price := 5 + 5*rng.Float64()
		adv := 10 + 40*rng.Float64()
		sales := 50 - 3*price + 0.5*adv + 2*rng.NormFloat64()
		advText := fmt.Sprintf("%.1f", adv)
		if w%50 == 0 {
			advText = ""
		}
		fmt.Fprintf(&b, "%d,%.2f,%s,%.2f\n", w, price, advText, sales)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
