//go:build unix

package gatewaytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kinds of server Start knows.
const (
	KernelGateway     = "kernel_gateway"
	EnterpriseGateway = "enterprise_gateway"
)

// Server is one running gateway.
type Server struct {
	Kind  string
	URL   string // http://127.0.0.1:PORT
	Token string

	cmd  *exec.Cmd
	dir  string // runtime dir and log
	done chan struct{}
	err  error // the process's exit, once done is closed
}

// Venv is the virtualenv a kind of server runs from.
func Venv(kind string) string {
	env, sub := "KERNEL_MCP_TEST_KG_VENV", "venv-kg"
	if kind == EnterpriseGateway {
		env, sub = "KERNEL_MCP_TEST_EG_VENV", "venv-eg"
	}
	if v := os.Getenv(env); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kernel-mcp", sub)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs a gateway of the kind with extra command-line arguments and
// waits until its REST API answers. Stop ends it and every kernel it
// started.
func Start(ctx context.Context, kind string, args ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	return start(ctx, kind, port, hex.EncodeToString(tok), args)
}

// Restart starts a new server of s's kind on s's port with s's token, as
// an operator would after a crash: clients of s reach it at the same URL.
// s must have ended (Kill, then Stop to reap its kernels). The new server
// has none of s's kernels.
func (s *Server) Restart(ctx context.Context, args ...string) (*Server, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, err
	}
	return start(ctx, s.Kind, port, s.Token, args)
}

func start(ctx context.Context, kind string, port int, token string, args []string) (*Server, error) {
	venv := Venv(kind)
	exe := "jupyter-kernelgateway"
	app := "KernelGatewayApp"
	if kind == EnterpriseGateway {
		exe, app = "jupyter-enterprisegateway", "EnterpriseGatewayApp"
	}
	bin := filepath.Join(venv, "bin", exe)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no %s in the venv %s (.ci/run creates it): %w", exe, venv, err)
	}
	dir, err := os.MkdirTemp("", "kernel-mcp-gw-")
	if err != nil {
		return nil, err
	}
	s := &Server{Kind: kind, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: token, dir: dir, done: make(chan struct{})}
	// GET /api/kernels, so tests can check that no kernel is left.
	if kind == KernelGateway {
		args = append([]string{"--JupyterWebsocketPersonality.list_kernels=True"}, args...)
	} else {
		args = append([]string{"--EnterpriseGatewayApp.list_kernels=True"}, args...)
	}
	argv := append([]string{
		"--" + app + ".ip=127.0.0.1",
		"--" + app + ".port=" + strconv.Itoa(port),
		"--" + app + ".port_retries=0",
		"--" + app + ".auth_token=" + s.Token,
	}, args...)
	log, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, argv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	// Kernels and their files stay inside dir; the venv's own python
	// kernelspec comes first.
	cmd.Env = append(os.Environ(),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"JUPYTER_PATH="+filepath.Join(venv, "share", "jupyter"),
		"JUPYTER_PLATFORM_DIRS=1",
		"PATH="+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd = cmd
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		logText := s.Log()
		s.Stop()
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", exe, err, lastLines(logText, 20))
	}
	return s, nil
}

// waitReady polls GET /api/kernelspecs until it answers 200.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/kernelspecs", nil)
		req.Header.Set("Authorization", "token "+s.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("it exited: %v", s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Log is what the server wrote so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "gateway.log"))
	return string(b)
}

// Stop ends the server: SIGTERM (it shuts its kernels down), then SIGKILL
// to its whole process group after 10 s, so no kernel outlives it. It
// removes the server's directory.
func (s *Server) Stop() error {
	pgid := s.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
	// Kernels the server failed to stop go with their group.
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-s.done
	return os.RemoveAll(s.dir)
}

// Kill ends the server at once with SIGKILL, as a crash would, leaving
// its kernels to the group kill of Stop.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type shared struct {
	once sync.Once
	srv  *Server
	err  error
}

var (
	sharedMu sync.Mutex
	servers  = map[string]*shared{}
)

// Shared returns the process-wide server of the kind, starting it on first
// use; StopShared (from TestMain) stops them. When it cannot start, t is
// skipped, or failed when CI=true: a CI run that skipped every gateway
// test would pass while testing nothing.
func Shared(t testing.TB, kind string) *Server {
	t.Helper()
	sharedMu.Lock()
	sh := servers[kind]
	if sh == nil {
		sh = &shared{}
		servers[kind] = sh
	}
	sharedMu.Unlock()
	sh.once.Do(func() {
		sh.srv, sh.err = Start(context.Background(), kind)
	})
	if sh.err != nil {
		Unavailable(t, sh.err)
	}
	return sh.srv
}

// Unavailable skips t for a missing server, or fails it when CI=true.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and the gateway is unavailable: %v", err)
	}
	t.Skipf("gateway unavailable: %v", err)
}

// StopShared stops every server Shared started.
func StopShared() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var errs []error
	for _, sh := range servers {
		if sh.srv != nil {
			errs = append(errs, sh.srv.Stop())
		}
	}
	servers = map[string]*shared{}
	return errors.Join(errs...)
}
