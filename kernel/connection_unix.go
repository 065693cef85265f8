//go:build unix

package kernel

import "syscall"

// localTransport is the transport of the kernels this package starts here:
// ipc, Unix sockets in each kernel's private 0700 runtime directory. A
// ZeroMQ socket accepts every peer that can reach it, and the key only
// signs messages: a PUB socket on 127.0.0.1 would give any local user a
// kernel's iopub, its code and its output included. A socket in a 0700
// directory can be reached by its owner alone (and root). Benchmarks switch
// it to "tcp" to compare the two.
var localTransport = "ipc"

// maxSocketPath is the longest path a Unix socket can be bound at here:
// sun_path less its closing NUL (107 bytes on Linux, 103 on macOS and the
// BSDs).
const maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1
