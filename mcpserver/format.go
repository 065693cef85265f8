package mcpserver

import (
	"github.com/kernel-mcp/kernel-mcp/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunOutput is the structured content of run_code and the other tools
// that run code (see toolresult.RunOutput).
type RunOutput = toolresult.RunOutput

// content is a result's parts as MCP content, one item each.
func content(parts []toolresult.Part) []mcp.Content {
	c := make([]mcp.Content, len(parts))
	for i, p := range parts {
		switch {
		case p.Image != nil:
			c[i] = &mcp.ImageContent{Data: p.Image.Data, MIMEType: p.Image.MIME}
		case p.Link != nil:
			l := p.Link
			c[i] = &mcp.ResourceLink{URI: l.URI, Name: l.Name, Title: l.Title, Description: l.Description, MIMEType: l.MIME, Size: l.Size}
		default:
			c[i] = &mcp.TextContent{Text: p.Text}
		}
	}
	return c
}

// callResult is a toolresult result as the MCP result of a tool call.
func callResult[Out any](res *toolresult.Result, out Out, err error) (*mcp.CallToolResult, Out, error) {
	if err != nil || res == nil {
		return nil, out, err
	}
	return &mcp.CallToolResult{Content: content(res.Parts), IsError: res.IsError}, out, nil
}
