package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// ToolPath is a path a tool was given, resolved and checked once
// (resolvePath). Under --sandbox its reads and writes go through root, the
// folder the check found it in, opened when the I/O happens: os.Root
// refuses a name or symlink that leads out of it, so code in the session
// that swaps a folder of the path for a symlink after the check cannot
// take the read or write outside. Without the sandbox root is "" and the
// I/O names abs, as any program would.
type ToolPath struct {
	abs  string // the path as the call named it, made absolute
	root string // the confining folder (real); "" without --sandbox
	rel  string // where the check found the path, relative to root
	// hidden are the real paths a read must not reach, when root is an
	// allowed folder: what is opened is checked against them again.
	hidden []string
	// server, when set, holds the file: it is in the user's server
	// (Config.UserServer), at rel from its root, and read and written
	// through its contents API (userserver.go).
	server *Engine
	// attached says the session's kernel is one it attached to by id,
	// which started wherever its starter chose, not at the server's root.
	attached bool
}

// String is the path as the call named it.
func (p ToolPath) String() string { return p.abs }

// Python is the path as a Python expression for code the session's kernel
// runs (load_data's). A file in the user's server is named from the
// folder the kernel started in, the server's root (kernels started there
// start at its root), so that a chdir in the session does not change which
// file is read. A kernel the session attached to by id started elsewhere
// (a notebook's kernel starts in the notebook's folder): its path is
// refused.
func (p ToolPath) Python() (string, error) {
	if p.server == nil {
		return PyString(p.abs), nil
	}
	if p.attached {
		return "", fmt.Errorf("cannot name %s for this session's kernel: it was attached by kernel_id and started in a folder of its own, not at your server's root; read the file from code in the session instead (e.g. pandas.read_csv with a path from its working directory)", p.rel)
	}
	return `__import__("os").path.join(get_ipython().starting_dir, ` + PyString(p.rel) + ")", nil
}

// escapes reports whether err is os.Root's refusal of a path or symlink
// that leads out of the root. The os package exports no sentinel for it.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// leadsOut is the error for a path that, at the time of the I/O, led out
// of its root: a folder of it was swapped for a symlink after the check.
func (p ToolPath) leadsOut() error {
	return fmt.Errorf("path %s leads outside %s (a folder of it is now a symlink that leads out): under --sandbox files are read and written only there", p.abs, p.root)
}

// notFolder reports whether err says a folder of the path is not one:
// os.Root walks the path without following symlinks it has not checked,
// so a folder swapped for a symlink while the I/O goes on fails so
// (ENOTDIR, ELOOP), as does a path through a regular file.
func notFolder(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)
}

// notFolder is the error for such a path.
func (p ToolPath) notFolder() error {
	return fmt.Errorf("path %s: a folder of it inside %s is not a folder (or was just swapped for a symlink): under --sandbox files are read and written only through folders there", p.abs, p.root)
}

// writeFile writes data to the path atomically, with missing folders, as
// history.WriteFile does; under the sandbox every step goes through root.
func (p ToolPath) WriteFile(data []byte, perm os.FileMode) error {
	if p.server != nil {
		return p.server.writeServerFile(p.rel, data)
	}
	if p.root == "" {
		return history.WriteFile(p.abs, data, perm)
	}
	r, err := os.OpenRoot(p.root)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", p.abs, err)
	}
	defer r.Close()
	if err := history.WriteFileIn(r, p.rel, data, perm); err != nil {
		if escapes(err) {
			return p.leadsOut()
		}
		if notFolder(err) {
			return p.notFolder()
		}
		// Worded as history.WriteFile's errors, with the path as named.
		return fmt.Errorf("history: write %s: %w", p.abs, errors.Unwrap(err))
	}
	return nil
}

// readFile reads the file for a tool, refusing a missing file, a folder,
// anything but a regular file, and one larger than limit bytes (0: any
// size) with an error that says which (verb: what the tool would do).
func (p ToolPath) ReadFile(verb string, limit int64) ([]byte, error) {
	if p.server != nil {
		return p.server.readServerFile(p.rel, verb, limit)
	}
	if p.root == "" {
		return readInputFile(p.abs, verb, limit)
	}
	var b []byte
	err := p.OpenChecked(verb, limit, func(f *os.File) error {
		var err error
		if b, err = io.ReadAll(f); err != nil {
			return fmt.Errorf("cannot read %s: %v", p.abs, errors.Unwrap(err))
		}
		if limit > 0 && int64(len(b)) > limit {
			return fmt.Errorf("cannot %s %s: %d bytes is more than the %d MiB a file may have", verb, p.abs, len(b), limit>>20)
		}
		return nil
	})
	return b, err
}

// checkFile is readFile's checks without the read.
func (p ToolPath) CheckFile(verb string, limit int64) error {
	if p.server != nil {
		return p.server.checkServerFile(p.rel, verb, limit)
	}
	if p.root == "" {
		return checkInputFile(p.abs, verb, limit)
	}
	return p.OpenChecked(verb, limit, func(*os.File) error { return nil })
}

// openChecked opens the file through root, checks what it opened (not
// what the name pointed to a moment before), and hands it to use.
func (p ToolPath) OpenChecked(verb string, limit int64, use func(*os.File) error) error {
	if p.server != nil {
		return p.server.serverFileRefusal(verb)
	}
	r, err := os.OpenRoot(p.root)
	if err != nil {
		return fmt.Errorf("cannot %s %s: %v", verb, p.abs, err)
	}
	defer r.Close()
	check := func(st os.FileInfo) error {
		if st.IsDir() {
			return fmt.Errorf("cannot %s %s: it is a directory", verb, p.abs)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("cannot %s %s: it is not a regular file", verb, p.abs)
		}
		if limit > 0 && st.Size() > limit {
			return fmt.Errorf("cannot %s %s: %d bytes is more than the %d MiB a file may have", verb, p.abs, st.Size(), limit>>20)
		}
		return nil
	}
	// Stat first, so that a fifo is refused rather than opened; the open
	// does not block either if one is swapped in meanwhile.
	st, err := r.Stat(p.rel)
	if escapes(err) {
		return p.leadsOut()
	}
	if notFolder(err) {
		return p.notFolder()
	}
	if err != nil {
		return fmt.Errorf("cannot %s %s: %v", verb, p.abs, errors.Unwrap(err))
	}
	if err := check(st); err != nil {
		return err
	}
	f, err := r.OpenFile(p.rel, os.O_RDONLY|openNonblock, 0)
	if escapes(err) {
		return p.leadsOut()
	}
	if notFolder(err) {
		return p.notFolder()
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", p.abs, errors.Unwrap(err))
	}
	defer f.Close()
	if len(p.hidden) > 0 {
		opened, ok := openedPath(f)
		if !ok {
			return fmt.Errorf("cannot %s %s: cannot tell where the file opened is, to keep what the sandbox hides hidden", verb, p.abs)
		}
		for _, h := range p.hidden {
			if within(opened, h) {
				return hiddenError(p.abs, h)
			}
		}
	}
	if st, err = f.Stat(); err != nil {
		return fmt.Errorf("cannot read %s: %v", p.abs, errors.Unwrap(err))
	}
	if err := check(st); err != nil {
		return err
	}
	return use(f)
}

// readInputFile reads a file a tool was given, refusing a missing file, a
// folder and one larger than limit bytes with an error that says which
// (verb: what the tool would do with it).
func readInputFile(path, verb string, limit int64) ([]byte, error) {
	if err := checkInputFile(path, verb, limit); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	return b, nil
}

// checkInputFile is readInputFile's check without the read: the file
// exists, is a regular file (or a link to one), is readable, and is at
// most limit bytes (0: any size).
func checkInputFile(path, verb string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot %s %s: %v", verb, path, errors.Unwrap(err))
	}
	if st.IsDir() {
		return fmt.Errorf("cannot %s %s: it is a directory", verb, path)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("cannot %s %s: it is not a regular file", verb, path)
	}
	if limit > 0 && st.Size() > limit {
		return fmt.Errorf("cannot %s %s: %d bytes is more than the %d MiB a file may have", verb, path, st.Size(), limit>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	return f.Close()
}
