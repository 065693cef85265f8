package kernel

// localTransport is the transport of the kernels this package starts here:
// tcp on 127.0.0.1. ipykernel's ZeroMQ has no ipc transport on Windows, so
// any local user can connect to a kernel's ports there (docs/security.md).
var localTransport = "tcp"

// maxSocketPath is the longest Unix socket path: Windows' sun_path less its
// closing NUL. Only an ipc connection (a sandbox, which Windows lacks) uses it.
const maxSocketPath = 107
