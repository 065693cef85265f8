package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Confinement (Config.Sandbox). Every kernel runs under bubblewrap, and the
// server's own tools hold to the same rule as the kernel: a path resolves
// inside the session's working directory, or, for reads only, inside a
// Sandbox.ReadOnly path. Sessions that give no cwd share the server's work
// directory (StateDir/work), so that any warm kernel
// fits any session.

// Access says what a tool does with a path.
type Access int

const (
	ReadAccess Access = iota
	WriteAccess
)

// initSandbox prepares the work directory under --sandbox: StateDir/work,
// or a temporary directory removed by Close when histories are kept in
// memory only. Config.WorkDir is refused with the sandbox.
func (s *Engine) initSandbox() error {
	if s.cfg.Sandbox == nil {
		return nil
	}
	if s.cfg.WorkDir != "" {
		// A folder the kernels write in must hold nothing else of the
		// server's or the person's: the state directory, a home or the
		// interpreter could be inside a folder given here.
		return fmt.Errorf("a work directory (%s) cannot be used with the sandbox: sandboxed kernels write only in the state directory's work folder", s.cfg.WorkDir)
	}
	var dir string
	if s.cfg.StateDir != "" {
		// Absolute: the kernels' sandbox binds it, and bwrap takes a
		// relative path against its new root.
		abs, err := filepath.Abs(s.cfg.StateDir)
		if err != nil {
			return fmt.Errorf("sandbox work directory: %w", err)
		}
		dir = filepath.Join(abs, "work")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("sandbox work directory: %w", err)
		}
	} else {
		d, err := os.MkdirTemp("", "kernel-mcp-work-")
		if err != nil {
			return fmt.Errorf("sandbox work directory: %w", err)
		}
		dir, s.tempWorkDir = d, true
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("sandbox work directory: %w", err)
	}
	s.workDir = real
	return nil
}

// sandboxOptions are the kernel's sandbox for this server: the configured
// one, with the server's state directory hidden too (the kernel must not
// rewrite histories; its own work directory is bound back on top), or,
// when histories are kept in memory, the temporary work directory, where
// the other sessions' folders are.
func (s *Engine) sandboxOptions() *kernel.SandboxOptions {
	if s.cfg.Sandbox == nil {
		return nil
	}
	o := *s.cfg.Sandbox
	o.Hide = s.hiddenPaths()
	return &o
}

// hiddenPaths are what the kernels never see, whatever --sandbox-allow
// shows: the configured ones (the tokens file, every user's state), this
// server's state directory, and its work directory.
func (s *Engine) hiddenPaths() []string {
	out := append([]string(nil), s.cfg.Sandbox.Hide...)
	if s.cfg.StateDir != "" {
		if abs, err := filepath.Abs(s.cfg.StateDir); err == nil {
			out = append(out, abs)
		}
	}
	if s.workDir != "" {
		out = append(out, s.workDir)
	}
	// The kernels' runtime dirs: their connection files, and the one
	// folder outside the working directory each kernel writes in.
	return append(out, kernel.SandboxRuntimeBase())
}

// kernelDir is the working directory a kernel of this kind starts in.
// Under the sandbox it must be inside the work directory: a session
// restored from an unsandboxed run may name any directory, and binding it
// read-write would undo the sandbox.
func (s *Engine) kernelDir(c Choice) (string, error) {
	if s.cfg.Sandbox == nil {
		if c.Cwd == "" {
			return s.cfg.WorkDir, nil
		}
		return c.Cwd, nil
	}
	if c.Cwd == "" {
		return s.workDir, nil
	}
	real, err := filepath.EvalSymlinks(c.Cwd)
	if err != nil {
		return "", fmt.Errorf("the session's cwd %s: %w", c.Cwd, err)
	}
	if !within(real, s.workDir) {
		return "", fmt.Errorf("the session's cwd %s is outside the sandbox's work directory %s; create a new session (its cwd defaults to the work directory)", c.Cwd, s.workDir)
	}
	return real, nil
}

// sandboxCwd checks and makes absolute the cwd create_session was given
// under the sandbox: relative to the work directory, created if missing,
// and never outside it. It is checked before anything is created, and
// created one folder at a time below the work directory without following
// a symlink, so neither a link that leads out nor one swapped in meanwhile
// makes a folder outside.
func (s *Engine) sandboxCwd(cwd string) (string, error) {
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.workDir, p)
	}
	p = filepath.Clean(p)
	if !within(p, s.workDir) {
		return "", fmt.Errorf("cwd %q is outside the sandbox's work directory %s: under --sandbox a session's cwd is a folder of it (give a relative path)", cwd, s.workDir)
	}
	leadsOut := fmt.Errorf("cwd %q leads outside the sandbox's work directory %s", cwd, s.workDir)
	real, err := realPath(p)
	if err != nil || !within(real, s.workDir) {
		return "", leadsOut
	}
	rel, err := filepath.Rel(s.workDir, real)
	if err != nil {
		return "", leadsOut
	}
	made, err := mkdirBeneath(s.workDir, rel)
	if err != nil {
		return "", fmt.Errorf("cwd %q: %v", cwd, err)
	}
	if !within(made, s.workDir) {
		return "", leadsOut
	}
	return made, nil
}

// cwd is the session's working directory: its own, else the sandbox's
// work directory, else Config.WorkDir, else the server's.
func (ss *Session) cwd() (string, error) {
	if ss.choice.Cwd != "" {
		return ss.choice.Cwd, nil
	}
	if ss.eng.workDir != "" {
		return ss.eng.workDir, nil
	}
	if ss.eng.cfg.WorkDir != "" {
		return ss.eng.cfg.WorkDir, nil
	}
	return filepath.Abs(".")
}

// confine checks a resolved absolute path against the sandbox's rule,
// following symlinks as far as the path exists: a link inside the working
// directory that leads out is refused like the path it leads to. It
// returns the path with the folder it was found in (the working
// directory, or for a read a --sandbox-allow path) and where in it, so
// that the I/O goes through that folder (ToolPath) and a symlink swapped
// in after this check cannot lead it out.
//
// An allowed folder may hold what is hidden, and a folder the kernel
// writes in (its runtime dir, under an allowed /tmp): a read there also
// keeps the hidden paths, to check what it opened against them.
func (ss *Session) confine(abs, base string, access Access) (ToolPath, error) {
	tp := ToolPath{abs: abs}
	real, err := realPath(abs)
	if err != nil {
		return ToolPath{}, fmt.Errorf("path %s could not be checked against the sandbox (a folder of it may have changed meanwhile): %v", abs, err)
	}
	// A session restored from an unsandboxed run may have its cwd
	// anywhere: it is no root to write in.
	if _, err := ss.eng.kernelDir(ss.choice); err != nil {
		return ToolPath{}, err
	}
	in := func(dir string) bool {
		if !within(real, dir) {
			return false
		}
		rel, err := filepath.Rel(dir, real)
		if err != nil {
			return false
		}
		tp.root, tp.rel = dir, rel
		return true
	}
	if rb, err := filepath.EvalSymlinks(base); err == nil && in(rb) {
		return tp, nil
	}
	if access == ReadAccess {
		// What the kernels never see, the tools do not read either, even
		// under an allowed parent.
		for _, h := range ss.eng.hiddenPaths() {
			rh, err := filepath.EvalSymlinks(h)
			if err != nil {
				continue
			}
			tp.hidden = append(tp.hidden, rh)
			if within(real, rh) {
				return ToolPath{}, hiddenError(abs, rh)
			}
		}
		for _, a := range ss.eng.cfg.Sandbox.ReadOnly {
			if ra, err := filepath.EvalSymlinks(a); err == nil && in(ra) {
				return tp, nil
			}
		}
	}
	where := "the session's working directory " + base
	if access == ReadAccess && len(ss.eng.cfg.Sandbox.ReadOnly) > 0 {
		where += " or a --sandbox-allow path (" + strings.Join(ss.eng.cfg.Sandbox.ReadOnly, ", ") + ")"
	}
	if real != abs {
		return ToolPath{}, fmt.Errorf("path %s leads to %s, outside %s: under --sandbox files are read and written only there", abs, real, where)
	}
	return ToolPath{}, fmt.Errorf("path %s is outside %s: under --sandbox files are read and written only there", abs, where)
}

// hiddenError refuses to read path, which is in hidden.
func hiddenError(path, hidden string) error {
	return fmt.Errorf("path %s is in %s, which the sandbox hides (the server's state, its tokens file, or the kernels' runtime dirs): under --sandbox files are read only in the session's working directory or a --sandbox-allow path outside what is hidden", path, hidden)
}

// realPath resolves the symlinks of the longest existing prefix of p and
// appends the rest, which does not exist yet (a file about to be written).
func realPath(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether p is root or inside it (both clean and absolute).
func within(p, root string) bool {
	if p == root || root == "/" {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}
