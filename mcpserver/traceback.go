package mcpserver

import "github.com/kernel-mcp/kernel-mcp/engine/traceback"

// shortTraceback is traceback.Short, under the name format.go calls.
func shortTraceback(entries []string) []string { return traceback.Short(entries) }
