// Package mcpb builds kernel-mcp's MCP Bundle (.mcpb) for Claude Desktop:
// the manifest (its tools taken from the server itself), the per-platform
// binaries, and the archive, packed and validated with @anthropic-ai/mcpb.
package mcpb

import (
	"context"
	"time"
)

// Options says what goes into the bundle and where it is written.
type Options struct {
	// Version is the bundle's version (the VERSION file's, without a v).
	Version string
	// Binaries maps "goos-goarch" (darwin-amd64, darwin-arm64, linux-amd64,
	// linux-arm64, windows-amd64) to the path of that platform's built
	// kernel-mcp binary.
	Binaries map[string]string
	// Out is the path of the .mcpb file to write.
	Out string
	// Work is a scratch directory Build may fill and leaves behind.
	Work string
	// CLI is the path of the mcpb command (packaging/mcpb/node_modules/.bin/mcpb).
	CLI string
	// Epoch is the timestamp every file in the archive gets.
	Epoch time.Time
}

// Build writes the bundle to o.Out.
func Build(ctx context.Context, o Options) error {
	return nil // the bundle is not built yet
}
