//go:build !linux

package engine

import (
	"os"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// mkdirBeneath is Linux-only, as the sandbox is.
func mkdirBeneath(root, rel string) (string, error) { return "", kernel.ErrSandboxUnsupported }

// openedPath is Linux-only, as the sandbox is.
func openedPath(*os.File) (string, bool) { return "", false }
