package ipytest

// FrameBomb is Python that, run in an ipykernel on Linux, writes a ZMTP
// frame header announcing a 2^50-byte frame onto the kernel's end of the
// connections the client dialled, between two messages, then sleeps: over
// TCP onto the iopub connection; over ipc, where the kernel's end of a
// connection is not listed at all inside a sandbox's network namespace
// (it belongs to the client's), onto every socket of the process (the
// listening ones refuse the write, asyncio's wake-up pair ignores it). A
// client that allocates what a frame announces dies of it. The sleep
// first lets the busy status and execute_input go out, so the header
// lands on a frame boundary. It prints how many connections it wrote to.
const FrameBomb = `
import os, struct, time
from ipykernel.kernelapp import IPKernelApp
_app = IPKernelApp.instance()
def _iopub_inodes():
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if int(f[1].rsplit(":", 1)[1], 16) == _app.iopub_port and f[3] == "01":
                found.add(f[9])
    return found
_want = _iopub_inodes() if _app.transport == "tcp" else None
time.sleep(0.5)
_bomb = bytes([0x02]) + struct.pack(">Q", 1 << 50)
_hit = 0
for _fd in os.listdir("/proc/self/fd"):
    try:
        _link = os.readlink("/proc/self/fd/" + _fd)
    except OSError:
        continue
    if _link.startswith("socket:[") and (_want is None or _link[8:-1] in _want):
        try:
            os.write(int(_fd), _bomb)
            _hit += 1
        except OSError:
            pass
print("bombed", _hit)
time.sleep(60)
`
