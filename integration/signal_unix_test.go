//go:build unix

package integration

import "syscall"

var interruptSignal = syscall.SIGTERM
