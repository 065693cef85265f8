package main

import (
	"fmt"
	"os"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// sandboxOptions builds the kernels' sandbox from the configuration, nil
// without --sandbox, and checks at start what would otherwise fail at the
// first kernel: bwrap missing or unable to create namespaces, an allowed
// path that does not exist.
func sandboxOptions(cfg config) (*kernel.SandboxOptions, error) {
	if !cfg.Sandbox {
		return nil, nil
	}
	o := &kernel.SandboxOptions{Network: cfg.SandboxNetwork, ReadOnly: cfg.SandboxAllow}
	for _, p := range cfg.SandboxAllow {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("--sandbox-allow / KERNEL_MCP_SANDBOX_ALLOW path %s: %v", p, err)
		}
	}
	// The kernels must not see the server's state (every user's histories
	// and work directories; each kernel gets its own bound back).
	if cfg.StateDir != "" {
		o.Hide = append(o.Hide, cfg.StateDir)
	}
	if cfg.TokensFile != "" {
		o.Hide = append(o.Hide, cfg.TokensFile)
	}
	if err := kernel.CheckSandbox(*o); err != nil {
		return nil, err
	}
	return o, nil
}
