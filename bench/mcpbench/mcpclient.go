// A go-sdk client session on an MCP server process, and the process's RSS.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is one server process with a go-sdk client session on it.
type mcpServer struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

func connect(cmd *exec.Cmd) (*mcpServer, error) {
	cmd.Stderr = io.Discard
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		return nil, err
	}
	return &mcpServer{cmd: cmd, cs: cs}, nil
}

func (s *mcpServer) close() { s.cs.Close() }

// call invokes a tool; a tool error is an error, with its text.
func (s *mcpServer) call(tool string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return b.String(), fmt.Errorf("%s: %s", tool, firstLine(b.String()))
	}
	return b.String(), nil
}

// peakRSS is the process's peak and current resident set in MB (Linux).
func rss(pid int) (peak, cur float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb / 1024
		case "VmRSS:":
			cur = kb / 1024
		}
	}
	return peak, cur
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return firstLine(lines[len(lines)-1])
}
