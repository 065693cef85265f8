package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mkdirBeneath creates rel below root one folder at a time, each made and
// then opened relative to its parent's fd without following a symlink, and
// returns the real path of what it reached. A component that is (or has
// just become) a symlink is an error, never followed.
func mkdirBeneath(root, rel string) (string, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer func() { unix.Close(fd) }()
	cur := root
	for _, name := range strings.Split(filepath.ToSlash(rel), "/") {
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			return "", fmt.Errorf("%s goes up a folder", rel)
		}
		cur = filepath.Join(cur, name)
		if err := unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return "", &os.PathError{Op: "mkdir", Path: cur, Err: err}
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("%s is not a folder (a symlink is not followed here): %v", cur, err)
		}
		unix.Close(fd)
		fd = next
	}
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
}

// openedPath is where an open file is, as the kernel tells it
// (/proc/self/fd): what was reached, whatever the name went through.
func openedPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}
