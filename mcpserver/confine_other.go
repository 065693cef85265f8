//go:build !linux

package mcpserver

import "github.com/kernel-mcp/kernel-mcp/kernel"

// mkdirBeneath is Linux-only, as the sandbox is.
func mkdirBeneath(root, rel string) (string, error) { return "", kernel.ErrSandboxUnsupported }
