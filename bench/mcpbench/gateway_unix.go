//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/kernel-mcp/kernel-mcp/internal/gatewaytest"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// benchGateways measures kernels behind real gateways, started from the
// venvs .ci/run makes (see internal/gatewaytest): the kernel package over
// Kernel Gateway and Enterprise Gateway, the same without TCP_QUICKACK (to
// show what it saves), and a Python WebSocket client of Kernel Gateway.
// Kernel Gateway runs with its iopub rate limit off, so that 10 MB can
// arrive at all.
func benchGateways() []*result {
	var all []*result
	kg, err := gatewaytest.Start(context.Background(), gatewaytest.KernelGateway,
		"--ZMQChannelsWebsocketConnection.iopub_data_rate_limit=0", "--ZMQChannelsWebsocketConnection.iopub_msg_rate_limit=0")
	if err != nil {
		return []*result{{Name: "kernel package over Kernel Gateway", Skipped: err.Error()}}
	}
	defer kg.Stop()
	all = append(all,
		benchGatewayKernel("kernel package over Kernel Gateway (WebSocket)", kg, nil, *flagN),
		benchGatewayKernel("same, without TCP_QUICKACK", kg, &http.Client{}, max(*flagN/6, 20)),
		benchGatewayPython(kg))
	eg, err := gatewaytest.Start(context.Background(), gatewaytest.EnterpriseGateway)
	if err != nil {
		return append(all, &result{Name: "kernel package over Enterprise Gateway", Skipped: err.Error()})
	}
	defer eg.Stop()
	return append(all, benchGatewayKernel("kernel package over Enterprise Gateway (WebSocket)", eg, nil, *flagN))
}

func benchGatewayKernel(name string, srv *gatewaytest.Server, hc *http.Client, n int) *result {
	r := &result{Name: name}
	gw := &kernel.Gateway{URL: srv.URL, Token: srv.Token, HTTPClient: hc}
	ctx := context.Background()
	var k *kernel.Kernel
	r.StartCold = timeN(*flagNStart, func() error {
		if k != nil {
			k.Close()
		}
		var err error
		k, err = kernel.Start(ctx, kernel.Options{Gateway: gw})
		return err
	})
	if k == nil {
		r.Skipped = "no kernel started"
		return r
	}
	defer k.Close()
	run := func(code string) error {
		res, err := k.Execute(ctx, code, kernel.ExecuteOptions{})
		if err != nil {
			return err
		}
		if res.RateLimited {
			return fmt.Errorf("the server's iopub rate limit dropped output")
		}
		return nil
	}
	for range warmup {
		if err := run(codeRoundTrip); err != nil {
			r.Skipped = err.Error()
			return r
		}
	}
	r.RoundTrip = timeN(n, func() error { return run(codeRoundTrip) })
	if hc == nil {
		r.Stdout10MB = timeN(*flagNBig, func() error { return run(codeStdout) })
	}
	return r
}

// benchGatewayPython runs bench/gateway_client_bench.py with the Kernel
// Gateway venv's python.
func benchGatewayPython(srv *gatewaytest.Server) *result {
	r := &result{Name: "Python WebSocket client (tornado) over Kernel Gateway"}
	py := filepath.Join(gatewaytest.Venv(gatewaytest.KernelGateway), "bin", "python")
	cmd := exec.Command(py, "bench/gateway_client_bench.py", "--url", srv.URL, "--token", srv.Token,
		"--n", strconv.Itoa(*flagN), "--n-big", strconv.Itoa(*flagNBig))
	var v struct {
		Tornado   string `json:"tornado"`
		RoundTrip pyStat `json:"roundtrip_ms"`
		Stdout    pyStat `json:"stdout10mb_ms"`
	}
	if err := pyJSON(cmd, &v); err != nil {
		r.Skipped = err.Error()
		return r
	}
	r.RoundTrip, r.Stdout10MB = v.RoundTrip.stat(), v.Stdout.stat()
	return r
}
