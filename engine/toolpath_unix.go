//go:build !windows

package engine

import "syscall"

// openNonblock keeps an open from waiting on a fifo for a writer.
const openNonblock = syscall.O_NONBLOCK
