package ipytest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ChildKernels lists the command lines of the ipykernel processes whose
// parent is this process, from /proc. Every kernel the server starts is
// its direct child (in a process group of its own), so one listed here
// after the tests was never shut down; a zombie one was never reaped.
func ChildKernels() []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := os.Getpid()
	var left []string
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses,
		// so the fields after it start at the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		dir := filepath.Dir(stat)
		cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		switch {
		case f[0] == "Z":
			left = append(left, filepath.Base(dir)+" (zombie, never reaped)")
		case strings.Contains(line, "ipykernel"):
			left = append(left, filepath.Base(dir)+": "+line)
		}
	}
	return left
}
