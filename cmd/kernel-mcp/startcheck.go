package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
)

// Start-up checks of what the configuration names on this machine. Each
// error is one line, and a usage error (exit status 2): the server would
// otherwise start and fail every session.

// checkWorkDir refuses a --workdir that is not an existing directory.
func checkWorkDir(cfg config) error {
	if cfg.WorkDir == "" {
		return nil
	}
	fi, err := os.Stat(cfg.WorkDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalid("workdir", cfg.WorkDir, "no such directory")
	case err != nil:
		return invalid("workdir", cfg.WorkDir, oneLine(err.Error()))
	case !fi.IsDir():
		return invalid("workdir", cfg.WorkDir, "not a directory")
	}
	return nil
}

// checkPython runs the interpreter named by --python or
// PYTHON_MCP_INTERPRETER once and refuses one that is missing, is not a
// Python 3, or has no ipykernel. With --kernel the kernelspec decides what
// runs, and with --gateway-url there is no local interpreter: nothing is
// checked then, nor when no interpreter is named (the resolution then
// looks further, see kernelspec.Resolve).
func checkPython(ctx context.Context, cfg config) error {
	if cfg.Python == "" || cfg.Kernel != "" || cfg.GatewayURL != "" {
		return nil
	}
	in, err := kernelspec.Inspect(ctx, cfg.Python)
	if err != nil {
		return fmt.Errorf("%s names %s, which cannot run the kernel: %s; name a Python 3 that has ipykernel (install it with: <python> -m pip install ipykernel)",
			cfg.PythonFrom, cfg.Python, oneLine(err.Error()))
	}
	if in.IPyKernel == "" {
		return fmt.Errorf("%s (%s) has no ipykernel; install it with: %s -m pip install ipykernel", in.Path, cfg.PythonFrom, quoteArg(in.Path))
	}
	return nil
}

// oneLine puts s on one line, each run of white space one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// quoteArg quotes a path with spaces or quotes for a shell, so that the
// command shown can be pasted as it is.
func quoteArg(p string) string {
	if !strings.ContainsAny(p, " \t'\"") {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
