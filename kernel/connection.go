package kernel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConnectionInfo is the content of a Jupyter connection file: where the
// kernel's five sockets listen and how messages are signed.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// NewConnectionInfo picks five free ports on 127.0.0.1 and a random 256-bit
// key, for a kernel that listens on loopback TCP. Kernels that Start
// launches never listen beyond loopback, and outside Windows they listen on
// Unix sockets in a private directory instead (see localTransport): any
// local user can connect to a port on 127.0.0.1.
func NewConnectionInfo() (ConnectionInfo, error) { return newConnectionInfo(true) }

// newConnectionInfo is NewConnectionInfo; without pickPorts every port is 0,
// for a kernel that binds its own.
func newConnectionInfo(pickPorts bool) (ConnectionInfo, error) {
	ports := make([]int, 5)
	if pickPorts {
		var err error
		if ports, err = freePorts(5); err != nil {
			return ConnectionInfo{}, err
		}
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: random key: %w", err)
	}
	return ConnectionInfo{
		Transport:       "tcp",
		IP:              "127.0.0.1",
		ShellPort:       ports[0],
		IOPubPort:       ports[1],
		StdinPort:       ports[2],
		ControlPort:     ports[3],
		HBPort:          ports[4],
		Key:             hex.EncodeToString(key),
		SignatureScheme: "hmac-sha256",
	}, nil
}

// ipcBaseName is the prefix of the kernel's ipc socket files in its runtime
// directory: a kernel binds "<ip>-<port>" for transport ipc.
const ipcBaseName = "kernel-ipc"

// ipcConnectionInfo is a connection over ipc sockets named
// <dir>/kernel-ipc-1 ... -5 and a random key. The "ports" are only
// suffixes: no other process can take them, since no other process can
// write in the fresh 0700 runtime dir. A dir whose socket paths would be
// longer than the system allows is refused with an error that says so:
// the kernel's bind would otherwise fail with a bare ENAMETOOLONG.
func ipcConnectionInfo(dir string) (ConnectionInfo, error) {
	ip := filepath.Join(dir, ipcBaseName)
	if n := len(ip) + len("-5"); n > maxSocketPath {
		return ConnectionInfo{}, fmt.Errorf("kernel: the runtime dir %s is too long for the kernel's Unix sockets: %s-5 is %d bytes, and a socket path here takes at most %d; set KERNEL_MCP_RUNTIME_DIR (or TMPDIR) to a shorter folder", dir, ip, n, maxSocketPath)
	}
	ci, err := newConnectionInfo(false)
	if err != nil {
		return ConnectionInfo{}, err
	}
	ci.Transport = "ipc"
	ci.IP = ip
	ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort = 1, 2, 3, 4, 5
	return ci, nil
}

// freePorts asks the OS for n distinct free loopback ports. The listeners are
// held open until all n are chosen so that no port is handed out twice, and
// a port handed out recently is not handed out again by this process: the
// OS may offer a port we just released to the next caller before the first
// kernel has bound it.
func freePorts(n int) ([]int, error) {
	recentPorts.mu.Lock()
	defer recentPorts.mu.Unlock()
	now := time.Now()
	for p, at := range recentPorts.at {
		if now.Sub(at) > recentPortTTL {
			delete(recentPorts.at, p)
		}
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10*n {
			return nil, fmt.Errorf("kernel: find a free port: every port offered was handed out in the last %v", recentPortTTL)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kernel: find a free port: %w", err)
		}
		defer l.Close()
		p := l.Addr().(*net.TCPAddr).Port
		if _, recent := recentPorts.at[p]; recent {
			continue
		}
		ports = append(ports, p)
	}
	if recentPorts.at == nil {
		recentPorts.at = map[int]time.Time{}
	}
	for _, p := range ports {
		recentPorts.at[p] = now
	}
	return ports, nil
}

// recentPortTTL is how long a port handed out stays reserved: far longer
// than a kernel takes to bind it.
const recentPortTTL = time.Minute

var recentPorts struct {
	mu sync.Mutex
	at map[int]time.Time
}

// boundPorts reads back the connection file a kernel was given without
// ports. ok is false until the kernel has rewritten it with all five ports
// and the same key (it truncates and rewrites in place, so a read may see
// an empty or partial file).
func boundPorts(path string, want ConnectionInfo) (ci ConnectionInfo, ok bool) {
	b, err := readConnectionFile(path)
	if err != nil || json.Unmarshal(b, &ci) != nil {
		return ConnectionInfo{}, false
	}
	if ci.Key != want.Key || ci.IP != want.IP ||
		ci.ShellPort <= 0 || ci.IOPubPort <= 0 || ci.StdinPort <= 0 || ci.ControlPort <= 0 || ci.HBPort <= 0 ||
		ci.ShellPort > 65535 || ci.IOPubPort > 65535 || ci.StdinPort > 65535 || ci.ControlPort > 65535 || ci.HBPort > 65535 {
		return ConnectionInfo{}, false
	}
	out := want
	out.ShellPort, out.IOPubPort, out.StdinPort, out.ControlPort, out.HBPort = ci.ShellPort, ci.IOPubPort, ci.StdinPort, ci.ControlPort, ci.HBPort
	return out, true
}

// ReadConnectionFile parses a connection file written by a kernel or by
// another Jupyter client.
func ReadConnectionFile(path string) (ConnectionInfo, error) {
	b, err := readConnectionFile(path)
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: read connection file: %w", err)
	}
	var ci ConnectionInfo
	if err := json.Unmarshal(b, &ci); err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: parse connection file %s: %w", path, err)
	}
	if ci.Transport == "" {
		ci.Transport = "tcp"
	}
	if ci.Transport != "tcp" && ci.Transport != "ipc" {
		return ConnectionInfo{}, fmt.Errorf("kernel: connection file %s: transport %q is not supported (only tcp and ipc)", path, ci.Transport)
	}
	if ci.IP == "" || ci.ShellPort == 0 || ci.IOPubPort == 0 || ci.StdinPort == 0 || ci.ControlPort == 0 || ci.HBPort == 0 {
		return ConnectionInfo{}, fmt.Errorf("kernel: connection file %s lacks an ip or a port", path)
	}
	return ci, nil
}

// endpointScheme is the zmq4 transport the sockets dial: the buffered one
// (see transport.go). Benchmarks switch it to plain "tcp" to measure the gain.
var endpointScheme = bufferedTCP

// endpoint returns the zmq4 address of one port. For transport ipc the IP
// is a path prefix and the port a suffix, as ipykernel binds them.
func (ci ConnectionInfo) endpoint(port int) string {
	if ci.Transport == "ipc" {
		return "ipc://" + ci.IP + "-" + strconv.Itoa(port)
	}
	return endpointScheme + "://" + net.JoinHostPort(ci.IP, strconv.Itoa(port))
}

// runtimeDir is a private 0700 directory holding one kernel's connection file.
// Remove deletes it and everything the kernel left in it.
type runtimeDir struct {
	path string
}

func newRuntimeDir() (*runtimeDir, error) { return newRuntimeDirIn("") }

// newRuntimeDirIn is newRuntimeDir in base; "" means KERNEL_MCP_RUNTIME_DIR,
// else the temporary directory.
func newRuntimeDirIn(base string) (*runtimeDir, error) {
	if base == "" {
		base = os.Getenv("KERNEL_MCP_RUNTIME_DIR")
	}
	if base != "" {
		// Absolute: the connection file and a sandbox's bind name it, and
		// the kernel (and bwrap) do not start where the server did.
		abs, err := filepath.Abs(base)
		if err != nil {
			return nil, fmt.Errorf("kernel: runtime dir: %w", err)
		}
		base = abs
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, fmt.Errorf("kernel: runtime dir: %w", err)
		}
	}
	sweepStaleRuntimeDirs(base)
	// The pid in the name lets a later process find dirs whose owner was
	// killed before it could remove them.
	dir, err := os.MkdirTemp(base, runtimeDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("kernel: runtime dir: %w", err)
	}
	// MkdirTemp already uses 0700; say so explicitly in case a umask or
	// platform default differs.
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("kernel: runtime dir: %w", err)
	}
	return &runtimeDir{path: dir}, nil
}

const runtimeDirPrefix = "kernel-mcp-"

var swept sync.Map // base dir -> struct{}: swept once per process

// sweepStaleRuntimeDirs removes, once per process and base dir, the runtime
// dirs of processes that no longer exist: a server killed with SIGKILL takes
// its kernels with it (Pdeathsig) but cannot remove its own files.
func sweepStaleRuntimeDirs(base string) {
	if base == "" {
		base = os.TempDir()
	}
	if _, done := swept.LoadOrStore(base, struct{}{}); done {
		return
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), runtimeDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processExists(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}

// writeConnectionFile writes ci as a 0600 file in the runtime dir and returns
// its path.
func (d *runtimeDir) writeConnectionFile(ci ConnectionInfo) (string, error) {
	b, err := json.MarshalIndent(ci, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.path, "kernel.json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("kernel: write connection file: %w", err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("kernel: write connection file: %w", err)
	}
	return path, nil
}

func (d *runtimeDir) Remove() error {
	if d == nil {
		return nil
	}
	return os.RemoveAll(d.path)
}

// maxConnectionFile bounds what is read of a connection file: a real one
// is a few hundred bytes.
const maxConnectionFile = 64 << 10

// readConnectionFile reads a connection file, refusing anything but a
// regular file (a FIFO would block the read for ever, a device never end
// it) and one over maxConnectionFile bytes.
func readConnectionFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConnectionFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConnectionFile {
		return nil, fmt.Errorf("%s is over %d bytes, too large for a connection file", path, maxConnectionFile)
	}
	return b, nil
}
