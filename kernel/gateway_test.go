//go:build unix

package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
)

func init() {
	afterTests = append(afterTests, func() {
		if err := gatewaytest.StopShared(); err != nil {
			fmt.Println("stopping the test gateways:", err)
		}
	})
}

// gatewayKinds are the servers every gateway test runs against.
var gatewayKinds = []string{gatewaytest.KernelGateway, gatewaytest.EnterpriseGateway}

// startGatewayKernel starts a python3 kernel on srv for t and closes
// (deletes) it when t ends.
func startGatewayKernel(t *testing.T, srv *gatewaytest.Server, opts Options) *Kernel {
	t.Helper()
	opts.Gateway = &Gateway{URL: srv.URL, Token: srv.Token}
	k, err := Start(testCtx(t, 90*time.Second), opts)
	if err != nil {
		t.Fatalf("Start on %s: %v\n%s", srv.Kind, err, srv.Log())
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// tinyPNG is a 1x1 PNG.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestGateway runs the notebook behaviours on a kernel that Jupyter Kernel
// Gateway and Enterprise Gateway run, over their WebSocket.
func TestGateway(t *testing.T) {
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := gatewaytest.Shared(t, kind)
			k := startGatewayKernel(t, srv, Options{Env: map[string]string{"KERNEL_KMCP_PROBE": "passed"}})
			if k.GatewayKernelID() == "" || k.Pid() != 0 || k.Attached() {
				t.Fatalf("id %q pid %d attached %v", k.GatewayKernelID(), k.Pid(), k.Attached())
			}
			if !usesV1(k) {
				t.Errorf("%s did not negotiate %s", kind, wsSubprotocolV1)
			}

			t.Run("StateAndDisplay", func(t *testing.T) {
				mustExecute(t, k, "x = 21")
				res := mustExecute(t, k, "print('hi')\nx * 2")
				wantOutputs(t, res, `stream stdout "hi\n"`, "execute_result 42")
			})
			t.Run("EnvPassed", func(t *testing.T) {
				// KERNEL_* reaches the kernel on both; KERNEL_USERNAME is
				// what Enterprise Gateway requires of a client run as root.
				res := mustExecute(t, k, "import os\nos.environ.get('KERNEL_KMCP_PROBE'), os.environ.get('KERNEL_USERNAME') is not None")
				wantOutputs(t, res, "execute_result ('passed', True)")
			})
			t.Run("Image", func(t *testing.T) {
				res := mustExecute(t, k, "from IPython.display import Image, display\nimport base64\ndisplay(Image(data=base64.b64decode('"+tinyPNG+"')))")
				if len(res.Outputs) != 1 || res.Outputs[0].Type != OutputDisplayData {
					t.Fatalf("outputs %q", describeAll(res.Outputs))
				}
				if png, ok := res.Outputs[0].String("image/png"); !ok || strings.TrimSpace(png) != tinyPNG {
					t.Fatalf("image/png = %q", png)
				}
			})
			t.Run("Error", func(t *testing.T) {
				res, err := k.Execute(testCtx(t, 60*time.Second), "print('before')\n1/0", ExecuteOptions{})
				wantExecError(t, err, "ZeroDivisionError")
				if res.Status != "error" || res.Outputs[0].Text != "before\n" {
					t.Fatalf("status %q outputs %q", res.Status, describeAll(res.Outputs))
				}
			})
			t.Run("TimeoutKeepsState", func(t *testing.T) {
				opts, started := startedSignal()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := executeAsync(ctx, k, "import time\nprint('started', flush=True)\ntime.sleep(60)", opts)
				await(t, started, "the code to start")
				cancel()
				r := await(t, done, "the interrupted execution")
				if !errors.Is(r.err, context.Canceled) || !r.res.Interrupted {
					t.Fatalf("err %v interrupted %v", r.err, r.res.Interrupted)
				}
				wantOutputs(t, mustExecute(t, k, "x"), "execute_result 21")
			})
			t.Run("LargeOutput", func(t *testing.T) {
				// Kernel Gateway's default iopub rate limit replaces most of
				// it with a notice; Enterprise Gateway has none. Either the
				// output arrives whole or the result says it was dropped.
				res := mustExecute(t, k, "print('a' * 5_000_000)")
				n := 0
				for _, o := range res.Outputs {
					if o.Name == "stdout" {
						n += len(o.Text)
					}
				}
				t.Logf("%s: %d bytes of stdout arrived, rate limited %v", kind, n, res.RateLimited)
				if n < 5_000_000 && !res.RateLimited {
					t.Fatalf("only %d of 5000001 bytes arrived and RateLimited is not set", n)
				}
			})
			t.Run("AttachByKernelID", func(t *testing.T) {
				gw := Gateway{URL: srv.URL, Token: srv.Token}
				a, err := AttachGateway(testCtx(t, 60*time.Second), gw, k.GatewayKernelID(), Options{DetachOnClose: true})
				if err != nil {
					t.Fatal(err)
				}
				if !a.Attached() {
					t.Error("Attached() = false")
				}
				wantOutputs(t, mustExecute(t, a, "y = x + 1\ny"), "execute_result 22")
				if err := a.Close(); err != nil {
					t.Fatal(err)
				}
				// Detaching left the kernel and its namespace alone.
				wantOutputs(t, mustExecute(t, k, "y"), "execute_result 22")
			})
			t.Run("Restart", func(t *testing.T) {
				id := k.GatewayKernelID()
				if err := k.Restart(testCtx(t, 90*time.Second)); err != nil {
					t.Fatal(err)
				}
				if k.GatewayKernelID() != id {
					t.Errorf("kernel id changed from %s to %s", id, k.GatewayKernelID())
				}
				_, err := k.Execute(testCtx(t, 60*time.Second), "x", ExecuteOptions{})
				wantExecError(t, err, "NameError")
			})
			t.Run("ExitIsDeathThenRestart", func(t *testing.T) {
				_, err := k.Execute(testCtx(t, 60*time.Second), "import os\nos._exit(1)", ExecuteOptions{})
				var de *DiedError
				if !errors.Is(err, ErrKernelDied) || !errors.As(err, &de) || de.Remote == "" {
					t.Fatalf("err = %v, want a DiedError from the gateway", err)
				}
				if st := k.State(); st != "dead" {
					t.Errorf("State() = %q", st)
				}
				// The gateway restarted the process; a restart gives this
				// client a working kernel again.
				if err := k.Restart(testCtx(t, 90*time.Second)); err != nil {
					t.Fatal(err)
				}
				wantOutputs(t, mustExecute(t, k, "1+1"), "execute_result 2")
			})
			t.Run("Delete", func(t *testing.T) {
				id := k.GatewayKernelID()
				if err := k.Close(); err != nil {
					t.Fatal(err)
				}
				gc, _ := (&Gateway{URL: srv.URL, Token: srv.Token}).client()
				defer gc.release()
				if _, err := gc.kernel(testCtx(t, 30*time.Second), id); !errors.Is(err, errNoSuchKernel) {
					t.Fatalf("after Close, GET kernel: %v, want 404\n%s", err, srv.Log())
				}
			})
		})
	}
}

// TestGatewayBadInput checks that each way of pointing at the wrong thing
// gives one clear error.
func TestGatewayBadInput(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	cases := []struct {
		name string
		gw   Gateway
		spec string
		id   string
		want string
	}{
		{"unreachable", Gateway{URL: closed}, "", "", "gateway " + closed + " is unreachable"},
		{"wrong token", Gateway{URL: srv.URL, Token: "wrong"}, "", "", "refused the token"},
		// The gateway offers whatever kernelspecs the machine has (IRkernel's
		// "ir" among them when R is installed): the error lists the ones
		// it offers, as it reports them.
		{"unknown kernelspec", Gateway{URL: srv.URL, Token: srv.Token}, "nosuchspec", "", `has no kernelspec "nosuchspec"; it offers: `},
		{"unknown kernel id", Gateway{URL: srv.URL, Token: srv.Token}, "", "00000000-0000-0000-0000-000000000000", `has no kernel with id "00000000-0000-0000-0000-000000000000"`},
		{"not a URL", Gateway{URL: "ftp://x"}, "", "", "must be http:// or https://"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.id != "" {
				_, err = AttachGateway(testCtx(t, 30*time.Second), tc.gw, tc.id, Options{})
			} else {
				opts := Options{Gateway: &tc.gw}
				opts.Spec.Name = tc.spec
				var k *Kernel
				k, err = Start(testCtx(t, 30*time.Second), opts)
				if k != nil {
					k.Close()
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if tc.spec == "nosuchspec" && !regexp.MustCompile(`it offers: (.*, )?python3(,|$)`).MatchString(err.Error()) {
				// Every test gateway runs python3's kernelspec.
				t.Fatalf("err = %v\nwant it to list python3 among the kernelspecs offered", err)
			}
			if tc.spec == "nosuchspec" {
				specs, _, serr := tc.gw.KernelSpecs(testCtx(t, 30*time.Second))
				if serr != nil || len(specs) == 0 {
					t.Fatalf("the gateway's kernelspecs: %v %v", specs, serr)
				}
				names := make([]string, len(specs))
				for i, s := range specs {
					names[i] = s.Name
				}
				if want := "it offers: " + strings.Join(names, ", "); !strings.HasSuffix(err.Error(), want) {
					t.Fatalf("err = %v\nwant it to end %q: every kernelspec the gateway offers", err, want)
				}
			}
		})
	}
}

// TestGatewayReconnect drops the WebSocket in the middle of a run: the
// client redials with the same session_id and the run's output arrives
// whole.
func TestGatewayReconnect(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	k := startGatewayKernel(t, srv, Options{})
	opts, started := startedSignal()
	done := executeAsync(testCtx(t, 60*time.Second), k, "import time\nprint('started', flush=True)\ntime.sleep(0.5)\nfor i in range(3): print('after', i)", opts)
	await(t, started, "the code to start")
	g, _ := k.current()
	ws := g.conn.(*wsConn)
	sock, _, _ := ws.current()
	sock.CloseNow()
	r := await(t, done, "the execution")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantOutputs(t, r.res, `stream stdout "started\nafter 0\nafter 1\nafter 2\n"`)
	if n := ws.reconnects.Load(); n != 1 {
		t.Errorf("reconnects = %d, want 1", n)
	}
}

// TestGatewayDiesMidRun kills the gateway under a running execution: the
// call ends with an error that names the gateway, once the reconnect
// window is over.
func TestGatewayDiesMidRun(t *testing.T) {
	r, srv := killGatewayMidRun(t, func(g *Gateway) { g.ReconnectWindow = 500 * time.Millisecond })
	if !errors.Is(r.err, ErrKernelDied) || !strings.Contains(r.err.Error(), "lost the connection to gateway "+srv.URL) {
		t.Fatalf("err = %v", r.err)
	}
	if r.res == nil || len(r.res.Outputs) == 0 || r.res.Outputs[0].Text != "started\n" {
		t.Errorf("the output before the loss is gone: %+v", r.res)
	}
}

// TestGatewayStoppedServer: when the server under a running execution
// stops and Gateway.Stopped says so, the call ends at once with its
// reason (the reconnect window, an hour here, is not waited out).
func TestGatewayStoppedServer(t *testing.T) {
	var killed atomic.Bool
	r, _ := killGatewayMidRun(t, func(g *Gateway) {
		g.ReconnectWindow = time.Hour
		g.Stopped = func(context.Context) string {
			if killed.Load() {
				return "the hub stopped your server"
			}
			return ""
		}
	}, &killed)
	if !errors.Is(r.err, ErrKernelDied) || !strings.Contains(r.err.Error(), "the hub stopped your server") {
		t.Fatalf("err = %v", r.err)
	}
}

// killGatewayMidRun starts a gateway of the test's own, a kernel on it
// with the Gateway settings set makes, and kills the gateway while code
// runs (setting each flag in killed first); it returns what the execution
// ended with.
func killGatewayMidRun(t *testing.T, set func(*Gateway), killed ...*atomic.Bool) (execReturn, *gatewaytest.Server) {
	t.Helper()
	srv, err := gatewaytest.Start(context.Background(), gatewaytest.KernelGateway)
	if err != nil {
		gatewaytest.Unavailable(t, err)
	}
	t.Cleanup(func() { srv.Stop() })
	g := &Gateway{URL: srv.URL, Token: srv.Token}
	set(g)
	k, err := Start(testCtx(t, 60*time.Second), Options{Gateway: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	opts, started := startedSignal()
	done := executeAsync(testCtx(t, 60*time.Second), k, "import time\nprint('started', flush=True)\ntime.sleep(60)", opts)
	await(t, started, "the code to start")
	for _, f := range killed {
		f.Store(true)
	}
	srv.Kill()
	return await(t, done, "the execution"), srv
}

// TestGatewayTokenNow: with TokenNow, every request and every redial
// carries the token it gives now, not the one the kernel started with (a
// hub token renewed by a new sign-in while the kernel is open).
func TestGatewayTokenNow(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	var asked atomic.Int32
	k, err := Start(testCtx(t, 90*time.Second), Options{Gateway: &Gateway{URL: srv.URL, Token: "stale-token", TokenNow: func() string {
		asked.Add(1)
		return srv.Token
	}}})
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, srv.Log())
	}
	defer k.Close()
	wantOutputs(t, mustExecute(t, k, "x = 6\nx * 7"), "execute_result 42")
	g, _ := k.current()
	ws := g.conn.(*wsConn)
	sock, _, _ := ws.current()
	before := asked.Load()
	sock.CloseNow()
	wantOutputs(t, mustExecute(t, k, "x * 7"), "execute_result 42")
	if n := ws.reconnects.Load(); n != 1 {
		t.Errorf("reconnects = %d, want 1", n)
	}
	if asked.Load() == before {
		t.Error("the redial did not ask for the token")
	}
}

// TestGatewayJupyterServerGetsNoEnv: a start request to a Jupyter Server
// (a hub user's server) carries none of this machine's variables, not even
// the KERNEL_USERNAME a gateway needs.
func TestGatewayJupyterServerGetsNoEnv(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	k, err := Start(testCtx(t, 90*time.Second), Options{Env: map[string]string{"KERNEL_KMCP_PROBE": "sent"}, Gateway: &Gateway{URL: srv.URL, Token: srv.Token, JupyterServer: true}})
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, srv.Log())
	}
	defer k.Close()
	res := mustExecute(t, k, "import os\nos.environ.get('KERNEL_KMCP_PROBE'), os.environ.get('KERNEL_USERNAME')")
	wantOutputs(t, res, "execute_result (None, None)")
}

// TestAttachDetachOnClose attaches to a local kernel by its connection
// file, shares its namespace, and detaches without stopping it.
func TestAttachDetachOnClose(t *testing.T) {
	t.Parallel()
	owner := startKernel(t, Options{})
	a, err := Attach(testCtx(t, 60*time.Second), owner.ConnectionFile(), Options{DetachOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Attached() || owner.Attached() {
		t.Errorf("Attached: attachment %v, owner %v", a.Attached(), owner.Attached())
	}
	mustExecute(t, a, "shared = 7")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	wantOutputs(t, mustExecute(t, owner, "shared"), "execute_result 7")
}

func usesV1(k *Kernel) bool {
	g, _ := k.current()
	_, v1, _ := g.conn.(*wsConn).current()
	return v1
}

// TestGatewayLegacyFraming drives a Kernel Gateway kernel with the legacy
// JSON framing (the servers here offer v1, so it is declined on purpose):
// text frames both ways, an image, an error and a reconnect.
func TestGatewayLegacyFraming(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	k, err := Start(testCtx(t, 90*time.Second), Options{Gateway: &Gateway{URL: srv.URL, Token: srv.Token, legacyFraming: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if usesV1(k) {
		t.Fatal("v1 was negotiated although not offered")
	}
	mustExecute(t, k, "x = 21")
	res := mustExecute(t, k, "from IPython.display import Image, display\nimport base64\ndisplay(Image(data=base64.b64decode('"+tinyPNG+"')))\nprint('é')\nx * 2")
	if len(res.Outputs) != 3 || res.Outputs[0].Type != OutputDisplayData || res.Outputs[1].Text != "é\n" {
		t.Fatalf("outputs %q", describeAll(res.Outputs))
	}
	_, err = k.Execute(testCtx(t, 60*time.Second), "1/0", ExecuteOptions{})
	wantExecError(t, err, "ZeroDivisionError")
	g, _ := k.current()
	sock, _, _ := g.conn.(*wsConn).current()
	sock.CloseNow()
	wantOutputs(t, mustExecute(t, k, "x"), "execute_result 21")
}

// TestGatewayDeletedByAnotherClient deletes a kernel through a second
// client: the socket stays open after a DELETE, so the first client must
// learn of it from the stream, and a call on it must fail, not hang.
func TestGatewayDeletedByAnotherClient(t *testing.T) {
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := gatewaytest.Shared(t, kind)
			k := startGatewayKernel(t, srv, Options{})
			other, err := AttachGateway(testCtx(t, 60*time.Second), Gateway{URL: srv.URL, Token: srv.Token}, k.GatewayKernelID(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := other.Close(); err != nil { // not DetachOnClose: a DELETE
				t.Fatal(err)
			}
			dead, why := k.Dead()
			await(t, dead, "the first client to see the kernel gone")
			t.Logf("%s: %v", kind, why())
			if err := why(); !errors.Is(err, ErrKernelDied) {
				t.Fatalf("death: %v", err)
			}
			if _, err := k.Execute(testCtx(t, 60*time.Second), "1", ExecuteOptions{}); !errors.Is(err, ErrKernelDied) {
				t.Fatalf("Execute on a deleted kernel: %v", err)
			}
		})
	}
}

// TestGatewayRestartEndsCallsAsDeath: on a gateway too, a call in flight
// when Restart restarts the kernel returns ErrKernelDied.
func TestGatewayRestartEndsCallsAsDeath(t *testing.T) {
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			restartUnderRun(t, startGatewayKernel(t, gatewaytest.Shared(t, kind), Options{}))
		})
	}
}
