//go:build linux

package integration

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// socketService is a Unix socket on the host that answers every
// connection with its secret, as the socket of a database or a container
// runtime would answer with what it serves.
type socketService struct {
	path   string // the socket's path; for an abstract socket "\x00" + its name, as Python names it
	secret string

	mu       sync.Mutex
	accepted int
}

// startSocketService listens on a socket in a fresh folder under parent,
// made so that any user can connect (folder 0755, socket 0777): only the
// sandbox stands between a kernel and the secret. The folder and the
// listener go with the test. It returns nil when the test's user cannot
// make a folder there.
func startSocketService(t *testing.T, parent, secret string, owner sandboxLeg) *socketService {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "kernel-mcp-sock-")
	if err != nil {
		return nil
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &socketService{path: filepath.Join(dir, "service.sock"), secret: secret}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.path, 0o777); err != nil {
		t.Fatal(err)
	}
	owner.chown(t, dir)
	s.serve(t, ln)
	return s
}

// startAbstractService listens on an abstract Unix socket (one with no
// file, in the host's network namespace).
func startAbstractService(t *testing.T, name, secret string) *socketService {
	t.Helper()
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	s := &socketService{path: "\x00" + name, secret: secret}
	s.serve(t, ln)
	return s
}

func (s *socketService) serve(t *testing.T, ln net.Listener) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted++
			s.mu.Unlock()
			c.Write([]byte(s.secret))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}

func (s *socketService) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// ask connects from the test itself and returns the answer: the service
// works, so a refusal in the sandbox is the sandbox's doing.
func (s *socketService) ask(t *testing.T) string {
	t.Helper()
	addr := s.path
	if strings.HasPrefix(addr, "\x00") {
		addr = "@" + addr[1:]
	}
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatalf("the test's own service %q: %v", s.path, err)
	}
	defer c.Close()
	b := make([]byte, 100)
	n, _ := c.Read(b)
	return string(b[:n])
}

// A sandboxed kernel reaches no Unix socket of the host: neither one under
// /var/lib or /run (where the LXD, MySQL, kubelet and container runtime
// sockets live), /mnt or /srv, nor one in the server user's home or the
// temporary folder, nor an abstract one. A read-only mount does not stop
// connect(), so the folders must not be in the sandbox at all.
func TestSandboxReachesNoHostSocket(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		home := l.dir(t, "home")
		var services []*socketService
		for i, parent := range []string{"/var/lib", "/run", "/mnt", "/srv", home, os.TempDir()} {
			s := startSocketService(t, parent, fmt.Sprintf("SOCKET-SECRET-%d", i), l)
			if s == nil {
				if os.Getenv("CI") == "true" || os.Geteuid() == 0 {
					t.Fatalf("cannot make a folder in %s for the test's socket", parent)
				}
				t.Logf("not root: no socket in %s", parent)
				continue
			}
			services = append(services, s)
		}
		services = append(services, startAbstractService(t, fmt.Sprintf("kernel-mcp-test-%d-%s", os.Getpid(), l.name), "SOCKET-SECRET-abstract"))
		var paths []string
		for _, s := range services {
			if got := s.ask(t); got != s.secret {
				t.Fatalf("the test's service %q answers %q", s.path, got)
			}
			paths = append(paths, fmt.Sprintf("%q", s.path))
		}
		before := make([]int, len(services))
		for i, s := range services {
			before[i] = s.connections()
		}

		s := l.startServer(t, l.base, home, "--sandbox", "--state-dir", l.dir(t, "state"), "--pool-size", "0")
		code := `import socket
for p in [` + strings.Join(paths, ", ") + `]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(p)
        print('REACHED', repr(p), s.recv(100))
    except OSError as e:
        print('BLOCKED', repr(p), type(e).__name__, e.strerror)
    finally:
        s.close()`
		res, out := s.run("sock", code)
		if out.Status != "ok" {
			t.Fatalf("the probe did not run: %s", text(res))
		}
		t.Logf("%s", out.Stdout)
		if strings.Contains(out.Stdout, "REACHED") || strings.Contains(out.Stdout, "SOCKET-SECRET") || strings.Count(out.Stdout, "BLOCKED ") != len(services) {
			t.Errorf("the sandboxed kernel reached a host socket:\n%s", out.Stdout)
		}
		for i, s := range services {
			if n := s.connections() - before[i]; n != 0 {
				t.Errorf("the service at %q accepted %d connections from the sandbox", s.path, n)
			}
		}
	})
}

// What hides the host's sockets leaves the kernel what it needs: a pool,
// a manager and a lock with each start method of multiprocessing (the
// forkserver and the manager speak over Unix sockets in the private /tmp,
// the lock is a semaphore in the private /dev/shm), joblib with its
// process workers and memory-mapped arrays, and pip: into a virtualenv
// made in the working directory, and by install_package into the session's
// own interpreter (from a local wheel, so no index is needed).
func TestSandboxedKernelMultiprocessingAndPip(t *testing.T) {
	requirePython(t, "ipykernel", "numpy", "joblib")
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		state := l.dir(t, "state")
		l.dir(t, "state/work")
		wheels := l.dir(t, "state/work/wheels")
		wheel := writeProbeWheel(t, wheels, "kmcp_probe", "PROBE-INSTALLED")
		l.chown(t, wheel)
		cmd := l.command(l.base, l.dir(t, "home"), "--sandbox", "--sandbox-network", "--state-dir", state, "--pool-size", "0")
		// install_package runs pip with the index of the server's
		// environment, which the kernel inherits: here the wheels folder.
		cmd.Env = append(cmd.Env, "PIP_NO_INDEX=1", "PIP_FIND_LINKS="+wheels)
		s := connectCmd(t, cmd, mcp.NewClient(&mcp.Implementation{Name: "sandbox-mp-test", Version: "1"}, nil))

		_, out := s.run("mp", `import multiprocessing as mp, importlib
open('mpwork.py', 'w').write('def sq(x):\n    return x * x\n')
importlib.invalidate_caches()
import mpwork
for m in ('fork', 'spawn', 'forkserver'):
    ctx = mp.get_context(m)
    with ctx.Pool(2) as pool:
        r = pool.map(mpwork.sq, range(5))
    with ctx.Manager() as man:
        d = man.dict()
        d['m'] = m
        got = dict(d)
    lock = ctx.Lock()
    with lock:
        pass
    print(m, r, got)`)
		for _, m := range []string{"fork", "spawn", "forkserver"} {
			if !strings.Contains(out.Stdout, fmt.Sprintf("%s [0, 1, 4, 9, 16] {'m': '%s'}", m, m)) {
				t.Errorf("multiprocessing with %s in the sandbox: %+v", m, out)
			}
		}

		_, out = s.run("mp", `from joblib import Parallel, delayed
import numpy as np
def cube(x):
    return x ** 3
print('joblib', Parallel(n_jobs=2)(delayed(cube)(i) for i in range(5)))
print('memmap', [float(v) for v in Parallel(n_jobs=2, max_nbytes='1K')(delayed(np.sum)(a) for a in [np.ones(10000), np.ones(20000)])])`)
		if !strings.Contains(out.Stdout, "joblib [0, 1, 8, 27, 64]") || !strings.Contains(out.Stdout, "memmap [10000.0, 20000.0]") {
			t.Errorf("joblib in the sandbox: %+v", out)
		}

		_, out = s.run("mp", fmt.Sprintf(`import subprocess, sys
def run(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    print(argv[-1], r.returncode, r.stdout[-300:], r.stderr[-600:])
run(sys.executable, '-m', 'venv', 'venv')
run('venv/bin/python', '-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', %q)
run('venv/bin/python', '-c', 'import kmcp_probe; print(kmcp_probe.SECRET)')`, "wheels/"+filepath.Base(wheel)))
		if !strings.Contains(out.Stdout, "PROBE-INSTALLED") {
			t.Errorf("pip into a virtualenv in the working directory: %+v", out)
		}

		res := s.call("install_package", map[string]any{"session_id": "mp", "package_name": "kmcp_probe"})
		if res.IsError {
			t.Fatalf("install_package: %s", text(res))
		}
		if _, out := s.run("mp", "import kmcp_probe\nkmcp_probe.SECRET"); out.Result != "'PROBE-INSTALLED'" {
			t.Errorf("after install_package the session imports: %+v\n%s", out, text(res))
		}
	})
}

// writeProbeWheel writes a pure-Python wheel of one module whose SECRET is
// secret into dir, and returns its path.
func writeProbeWheel(t *testing.T, dir, name, secret string) string {
	t.Helper()
	path := filepath.Join(dir, name+"-1.0-py3-none-any.whl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	info := name + "-1.0.dist-info/"
	files := []struct{ name, body string }{
		{name + "/__init__.py", fmt.Sprintf("SECRET = %q\n", secret)},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: kernel-mcp-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, file := range files {
		w, err := zw.Create(file.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(file.body))
		sum := sha256.Sum256([]byte(file.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", file.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(file.body))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}
