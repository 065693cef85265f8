package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	// With several users and histories in memory only, every user's work
	// directory is a folder of the temporary directory: an allowed path
	// holding it would show each user's files to every other.
	if cfg.TokensFile != "" && cfg.StateDir == "" {
		tmp := realDir(os.TempDir())
		for _, p := range cfg.SandboxAllow {
			if a := realDir(p); tmp == a || strings.HasPrefix(tmp, strings.TrimSuffix(a, string(filepath.Separator))+string(filepath.Separator)) {
				return nil, fmt.Errorf("--sandbox-allow / KERNEL_MCP_SANDBOX_ALLOW path %s holds %s, where each user's work directory lies with --state-dir none: every user could read the others' files. Give a --state-dir (each user's work is then hidden from the others), or allow a narrower path", p, tmp)
			}
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

// realDir is p absolute with its symlinks resolved, or as given when it
// cannot be resolved.
func realDir(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
