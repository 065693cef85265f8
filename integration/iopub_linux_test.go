//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// subscribeEnv names the endpoint the test binary, run with it set,
// subscribes to as a plain ZeroMQ client (see zmtpSubscribe) instead of
// running the tests.
const subscribeEnv = "KERNEL_MCP_TEST_ZMTP_SUBSCRIBE"

// zmtpSubscribe is what another local user can do with a kernel's iopub
// endpoint: dial it with a ZeroMQ SUB socket, subscribe to everything and
// print the first message that carries the secret (or why it could not).
// It needs no key: the key signs messages but keeps no reader out.
func zmtpSubscribe(endpoint string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub := zmq4.NewSub(ctx, zmq4.WithDialerMaxRetries(0))
	defer sub.Close()
	if err := sub.Dial(endpoint); err != nil {
		fmt.Printf("dial: %v\n", err)
		return
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		fmt.Printf("subscribe: %v\n", err)
		return
	}
	for {
		msg, err := sub.Recv()
		if err != nil {
			fmt.Printf("recv: %v\n", err)
			return
		}
		for _, f := range msg.Frames {
			if bytes.Contains(f, []byte("DB_PASSWORD=")) {
				fmt.Printf("read: %s\n", f)
				return
			}
		}
	}
}

// init makes the test binary the subscriber when subscribeEnv is set,
// before TestMain builds the server: the test runs it as another user.
func init() {
	if endpoint := os.Getenv(subscribeEnv); endpoint != "" {
		zmtpSubscribe(endpoint)
		os.Exit(0)
	}
}

// Another local user cannot read a kernel's output: without --sandbox the
// kernel's iopub is a Unix socket in its 0700 runtime dir, not a port on
// 127.0.0.1 that any local user's SUB socket can join. The server runs as
// root (the other user is nobody) and as nobody (the other user is uid
// 65533); the other user dials the endpoint the connection file names
// while the session prints a secret. Over TCP it read the secret.
func TestKernelOutputClosedToOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and the test is not root: it cannot run a program as another user")
		}
		t.Skip("not root: cannot run a program as another user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary, where any user can run it (go test's build dir is
	// private).
	binDir, err := os.MkdirTemp("", "kernel-mcp-subscriber-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	subscriber := filepath.Join(binDir, "subscriber")
	if err := copyFile(self, subscriber); err != nil {
		t.Fatal(err)
	}
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		other := 65534
		if l.uid == other {
			other = 65533
		}
		s := l.startServer(t, l.base, l.dir(t, "home"), "--state-dir", l.dir(t, "state"), "--pool-size", "0")
		file := strings.TrimSpace(s.mustRun("s", "from ipykernel import get_connection_file\nprint(get_connection_file())").Stdout)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ci struct {
			Transport string `json:"transport"`
			IP        string `json:"ip"`
			IOPub     int    `json:"iopub_port"`
		}
		if err := json.Unmarshal(b, &ci); err != nil {
			t.Fatal(err)
		}
		endpoint := "tcp://" + net.JoinHostPort(ci.IP, strconv.Itoa(ci.IOPub))
		if ci.Transport == "ipc" {
			endpoint = "ipc://" + ci.IP + "-" + strconv.Itoa(ci.IOPub)
		}
		t.Logf("the kernel's iopub: %s", endpoint)
		if ci.Transport != "ipc" {
			t.Errorf("transport %q, want ipc", ci.Transport)
		}
		dir := filepath.Dir(file)
		switch st, err := os.Stat(dir); {
		case err != nil:
			t.Error(err)
		case st.Mode().Perm() != 0o700:
			t.Errorf("runtime dir %s: mode %v, want 0700", dir, st.Mode())
		case filepath.Dir(ci.IP) != dir:
			t.Errorf("sockets at %s, want them in the runtime dir %s", ci.IP, dir)
		}

		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(other), "--regid="+strconv.Itoa(other), "--clear-groups", subscriber)
		cmd.Env = []string{subscribeEnv + "=" + endpoint}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		// The session prints its secret until the other user's program
		// has read it or given up: a SUB socket gets only what is
		// published after it joined.
		var werr error
	publish:
		for i := 0; ; i++ {
			select {
			case werr = <-exited:
				exited <- werr
				break publish
			default:
			}
			if i == 300 {
				t.Fatalf("uid %d's subscriber neither failed nor read in 300 runs", other)
			}
			s.mustRun("s", "print('DB_PASSWORD=hunter2')")
		}
		got := out.String()
		t.Logf("uid %d's subscriber: %s", other, strings.TrimSpace(got))
		if werr != nil || strings.Contains(got, "hunter2") || !strings.HasPrefix(got, "dial: ") || !strings.Contains(got, "permission denied") {
			t.Errorf("uid %d's subscriber (%v): %s; want its dial refused with permission denied", other, werr, got)
		}
	})
}
