//go:build unix

package chartimage

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || !strings.Contains(string(b), ") Z ")
}
