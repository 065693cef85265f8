package engine

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/kernel/kernelspec"
)

// Under the sandbox, nothing a tool call names may run outside it. Finding
// out whether an interpreter has ipykernel means running it (`python -c`),
// on the host; so do the sys.prefix query behind a kernelspec search and
// the inspection of a kernelspec's python. A path given to create_session
// could be a script the kernel wrote into its working directory. So under
// the sandbox a session's python must be one of the interpreters fixed
// when the server started (the configured one, PYTHON_MCP_INTERPRETER,
// conda's, those on PATH, those the kernelspecs name: what list_kernels
// shows), and a kernelspec must not come from a folder the kernels can
// write in. Kernels themselves always start inside the sandbox.

// initAllowedPythons fixes the interpreters sessions may name under the
// sandbox. It runs none of them. Call after initSandbox.
func (s *Engine) initAllowedPythons() {
	if s.cfg.Sandbox == nil {
		return
	}
	var paths []string
	add := func(p string) {
		if p == "" || s.kernelWritable(p) || slices.Contains(paths, p) {
			return
		}
		paths = append(paths, p)
	}
	for _, in := range kernelspec.Candidates(kernelspec.ResolveOptions{Python: s.cfg.Python}) {
		add(in.Path)
	}
	if specs, err := kernelspec.Find(context.Background(), kernelspec.FindOptions{}); err == nil {
		for _, sp := range specs {
			if len(sp.Argv) > 0 && !s.kernelWritable(sp.Dir) {
				add(lookPython(sp.Argv[0]))
			}
		}
	}
	s.allowedPythons = paths
}

// lookPython is the absolute path a python argument names, found on PATH
// when it is a bare name, or "" when there is none. It runs nothing and,
// for a path, does not look at the file.
func lookPython(p string) string {
	if p == "" {
		return ""
	}
	if !strings.ContainsAny(p, `/\`) {
		found, err := exec.LookPath(p)
		if err != nil {
			return ""
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// kernelWritable reports whether p lies where a kernel, or another user's
// kernel, may write: the sandbox's work directory, the server's state
// directory, or a path the sandbox hides (every user's state).
func (s *Engine) kernelWritable(p string) bool {
	if p == "" {
		return false
	}
	p = filepath.Clean(p)
	roots := []string{s.workDir, s.cfg.StateDir}
	if s.cfg.Sandbox != nil {
		roots = append(roots, s.cfg.Sandbox.Hide...)
	}
	real, _ := realPath(p)
	for _, r := range roots {
		if r == "" {
			continue
		}
		r = filepath.Clean(r)
		if within(p, r) || (real != "" && within(real, r)) {
			return true
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil && (within(p, rr) || (real != "" && within(real, rr))) {
			return true
		}
	}
	return false
}

// checkPython refuses, under the sandbox, a python that is not one of the
// interpreters fixed at start. The answer depends only on the path named,
// never on what is there, and nothing is run.
func (s *Engine) checkPython(python string) error {
	if s.cfg.Sandbox == nil || python == "" {
		return nil
	}
	if p := lookPython(python); p != "" && slices.Contains(s.allowedPythons, p) {
		return nil
	}
	allowed := "none was found"
	if len(s.allowedPythons) > 0 {
		allowed = strings.Join(s.allowedPythons, ", ")
	}
	return fmt.Errorf("python %q is not one of the interpreters this server runs under --sandbox (%s; list_kernels shows them): "+
		"checking an interpreter means running it outside the sandbox, so only those fixed when the server started are used. "+
		"Leave python out, pick a kernelspec with kernel, or restart the server with --python naming the interpreter", python, allowed)
}

// checkKernelspec refuses, under the sandbox, a kernelspec that lies where
// a kernel may write: its python would be inspected outside the sandbox.
func (s *Engine) checkKernelspec(sp kernelspec.Spec) error {
	if s.cfg.Sandbox == nil {
		return nil
	}
	if s.kernelWritable(sp.Dir) || (len(sp.Argv) > 0 && filepath.IsAbs(sp.Argv[0]) && s.kernelWritable(sp.Argv[0])) {
		return fmt.Errorf("kernelspec %q lies in a folder the kernels can write in (%s): under --sandbox such a kernelspec is not used", sp.Name, sp.Dir)
	}
	return nil
}
