//go:build unix

package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// subshellExpr runs expr on sub as a silent execute with the value read
// through user_expressions, as the server's reads do.
func subshellExpr(ctx context.Context, k *Kernel, sub *Subshell, expr string) (string, error) {
	res, err := k.Execute(ctx, "", ExecuteOptions{Silent: true, Subshell: sub, UserExpressions: map[string]string{"v": expr}})
	if err != nil {
		return "", err
	}
	var v struct {
		Status string            `json:"status"`
		Data   map[string]string `json:"data"`
		EValue string            `json:"evalue"`
	}
	if err := json.Unmarshal(res.UserExpressions["v"], &v); err != nil {
		return "", err
	}
	if v.Status != "ok" {
		return "", fmt.Errorf("%s: %s", v.Status, v.EValue)
	}
	return v.Data["text/plain"], nil
}

// TestSubshellControl covers the control requests: create, list, delete,
// and a subshell dying with its kernel on restart.
func TestSubshellControl(t *testing.T) {
	k := startKernel(t, Options{})
	if !k.HasSubshells() {
		t.Fatalf("ipykernel 7 does not advertise %q", FeatureSubshells)
	}
	ctx := testCtx(t, 60*time.Second)
	info, err := k.KernelInfo(ctx)
	if err != nil || !slices.Contains(info.SupportedFeatures, FeatureSubshells) {
		t.Fatalf("KernelInfo: %+v, %v", info, err)
	}
	sub, err := k.CreateSubshell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := k.ListSubshells(ctx); err != nil || !slices.Equal(ids, []string{sub.ID()}) {
		t.Fatalf("ListSubshells = %q, %v; want [%s]", ids, err, sub.ID())
	}
	mustExecute(t, k, "x = 41")
	if v, err := subshellExpr(ctx, k, sub, "x + 1"); err != nil || v != "42" {
		t.Fatalf("on the subshell: %q, %v", v, err)
	}
	if err := k.DeleteSubshell(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if ids, err := k.ListSubshells(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("after delete: %q, %v", ids, err)
	}

	sub, err = k.CreateSubshell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !k.HasSubshells() {
		t.Fatal("the restarted kernel lost the feature")
	}
	if ids, err := k.ListSubshells(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("after restart: %q, %v", ids, err)
	}
	if _, err := k.Execute(ctx, "1", ExecuteOptions{Subshell: sub}); !errors.Is(err, ErrSubshellGone) {
		t.Fatalf("Execute on a subshell of the old process: %v, want ErrSubshellGone", err)
	}
	if _, err := k.Complete(ctx, "pri", -1, OnSubshell(sub)); !errors.Is(err, ErrSubshellGone) {
		t.Fatalf("Complete on a subshell of the old process: %v", err)
	}
	if err := k.DeleteSubshell(ctx, sub); err != nil {
		t.Fatalf("deleting a subshell that went with its kernel: %v", err)
	}
}

// TestSubshellDuringRun reads the namespace on a subshell while the main
// shell runs a loop: the reads answer before the run ends, the run's output
// stays the run's, and the subshell's its own.
func TestSubshellDuringRun(t *testing.T) {
	k := startKernel(t, Options{})
	ctx := testCtx(t, 90*time.Second)
	sub, err := k.CreateSubshell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExecute(t, k, "import time\ngo = True")
	opts, started := startedSignal()
	done := make(chan execReturn, 1)
	go func() {
		res, err := k.Execute(ctx, "losses = []\nprint('started', flush=True)\nwhile go:\n    losses.append(len(losses))\n    print(len(losses), flush=True)\n    time.sleep(0.01)\nprint('end')", opts)
		done <- execReturn{res: res, err: err}
	}()
	<-started
	var last int
	for i := range 5 {
		v, err := subshellExpr(ctx, k, sub, "len(losses)")
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		var n int
		fmt.Sscan(v, &n)
		if n < last {
			t.Fatalf("len(losses) went back from %d to %d", last, n)
		}
		last = n
	}
	if _, err := k.ListSubshells(ctx); err != nil {
		t.Fatal(err)
	}
	if st := k.State(); st != "busy" {
		t.Errorf("State() = %q during the main shell's run, after reads on a subshell and a control request", st)
	}
	// Output of the subshell's own code is its own.
	res, err := k.Execute(ctx, "print('from the subshell')", ExecuteOptions{Silent: true, Subshell: sub})
	if err != nil {
		t.Fatal(err)
	}
	wantOutputs(t, res, `stream stdout "from the subshell\n"`)
	if _, err := subshellExpr(ctx, k, sub, "globals().__setitem__('go', False)"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	var text string
	for _, o := range r.res.Outputs {
		text += o.Text
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != "started" || lines[len(lines)-1] != "end" {
		t.Fatalf("run output starts %q, ends %q", lines[0], lines[len(lines)-1])
	}
	for i, l := range lines[1 : len(lines)-1] {
		if l != fmt.Sprint(i+1) {
			t.Fatalf("run output line %d is %q, want %d (lost, repeated or foreign output)", i+2, l, i+1)
		}
	}
	if strings.Contains(text, "subshell") {
		t.Fatalf("the subshell's output reached the run:\n%s", text)
	}
}

// TestSubshellCancelNeverInterrupts: a subshell request whose context ends
// is abandoned, and the main shell's code runs on untouched.
func TestSubshellCancelNeverInterrupts(t *testing.T) {
	k := startKernel(t, Options{})
	ctx := testCtx(t, 90*time.Second)
	sub, err := k.CreateSubshell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts, started := startedSignal()
	done := make(chan execReturn, 1)
	go func() {
		res, err := k.Execute(ctx, "import time\nprint('started', flush=True)\nfor i in range(30):\n    time.sleep(0.1)\nprint('main done')", opts)
		done <- execReturn{res: res, err: err}
	}()
	<-started
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	res, err := k.Execute(cctx, "import time\ntime.sleep(1.5)", ExecuteOptions{Silent: true, Subshell: sub})
	cancel()
	if !errors.Is(err, ErrAbandoned) || !errors.Is(err, context.DeadlineExceeded) || res.Interrupted {
		t.Fatalf("cancelled subshell request: %v (interrupted %v)", err, res != nil && res.Interrupted)
	}
	r := <-done
	if r.err != nil || r.res.Status != "ok" {
		t.Fatalf("the main run was disturbed: %v, status %q", r.err, r.res.Status)
	}
	wantOutputs(t, r.res, `stream stdout "started\nmain done\n"`)
	// The abandoned request ran to its end; the subshell takes the next.
	if v, err := subshellExpr(ctx, k, sub, "1+1"); err != nil || v != "2" {
		t.Fatalf("after the abandoned request: %q, %v", v, err)
	}
}

// TestSubshellInput: a subshell's input_request is answered to the
// subshell (the input_reply carries its subshell_id).
func TestSubshellInput(t *testing.T) {
	k := startKernel(t, Options{})
	ctx := testCtx(t, 60*time.Second)
	sub, err := k.CreateSubshell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := k.Execute(ctx, "a = input('name? ')\nprint('got', a)", ExecuteOptions{Subshell: sub, OnInput: func(ctx context.Context, r InputRequest) (string, error) {
		return "ada", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantOutputs(t, res, `stream stdout "got ada\n"`)
}

// TestSubshellFeatureMissing: ipykernel 6 has no subshells, and nothing is
// sent to ask for one.
func TestSubshellFeatureMissing(t *testing.T) {
	py := ipytest.IPyKernel6(t)
	k := startKernel(t, Options{Python: py})
	if k.HasSubshells() {
		t.Fatal("ipykernel 6 advertises subshells")
	}
	ctx := testCtx(t, 30*time.Second)
	if _, err := k.CreateSubshell(ctx); !errors.Is(err, ErrNoSubshells) {
		t.Fatalf("CreateSubshell: %v, want ErrNoSubshells", err)
	}
	if _, err := k.ListSubshells(ctx); !errors.Is(err, ErrNoSubshells) {
		t.Fatalf("ListSubshells: %v, want ErrNoSubshells", err)
	}
}

// TestSubshellGateway: Jupyter Kernel Gateway passes the control requests
// and the header's subshell_id through to the kernel.
func TestSubshellGateway(t *testing.T) {
	srv := gatewaytest.Shared(t, gatewaytest.KernelGateway)
	k := startGatewayKernel(t, srv, Options{})
	if !k.HasSubshells() {
		t.Fatal("the gateway's ipykernel 7 does not advertise subshells")
	}
	ctx := testCtx(t, 60*time.Second)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	sub, err := k.CreateSubshell(sctx)
	cancel()
	if err != nil {
		t.Fatalf("CreateSubshell through the gateway: %v\n%s", err, srv.Log())
	}
	mustExecute(t, k, "import time\ngo = True")
	opts, started := startedSignal()
	done := make(chan execReturn, 1)
	go func() {
		res, err := k.Execute(ctx, "print('started', flush=True)\nwhile go:\n    time.sleep(0.01)", opts)
		done <- execReturn{res: res, err: err}
	}()
	<-started
	// Answered while the main shell runs: the header reached the kernel.
	if _, err := subshellExpr(ctx, k, sub, "globals().__setitem__('go', False)"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if ids, err := k.ListSubshells(ctx); err != nil || !slices.Equal(ids, []string{sub.ID()}) {
		t.Fatalf("ListSubshells = %q, %v", ids, err)
	}
}
