// The baselines without MCP: the kernel package directly and Python's
// jupyter_client (bench/jupyter_client_bench.py).

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// benchKernel measures the kernel package without MCP.
func benchKernel(py string, stock bool) *result {
	r := &result{Name: "kernel package (Go), ipykernel as kernel-mcp starts it"}
	if stock {
		r.Name = "kernel package (Go), stock ipykernel"
	}
	ctx := context.Background()
	k, err := kernel.Start(ctx, kernel.Options{Python: py, StockIPyKernel: stock})
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	defer k.Close()
	run := func(code string) error {
		res, err := k.Execute(ctx, code, kernel.ExecuteOptions{})
		if err != nil {
			return err
		}
		if res.Status != "ok" {
			return fmt.Errorf("status %s", res.Status)
		}
		return nil
	}
	for range warmup {
		if err := run(codeRoundTrip); err != nil {
			r.Skipped = err.Error()
			return r
		}
	}
	r.RoundTrip = timeN(*flagN, func() error { return run(codeRoundTrip) })
	r.Stdout10MB = timeN(*flagNBig, func() error { return run(codeStdout) })
	r.Lines100k = timeN(*flagNBig, func() error { return run(codeLines) })
	return r
}

// pyJSON runs a Python benchmark script and decodes the JSON it prints into
// v; a failure carries the script's last line on stderr.
func pyJSON(cmd *exec.Cmd, v any) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(stderr.String()))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("bad output: %v", err)
	}
	return nil
}

// benchJupyterClient runs bench/jupyter_client_bench.py.
func benchJupyterClient(py string) *result {
	r := &result{Name: "jupyter_client (Python), stock ipykernel"}
	cmd := exec.Command(py, "bench/jupyter_client_bench.py", "--json", "--python", py,
		"--n", strconv.Itoa(*flagN), "--n-big", strconv.Itoa(*flagNBig), "--n-start", strconv.Itoa(*flagNStart))
	var v struct {
		JupyterClient string `json:"jupyter_client"`
		IPyKernel     string `json:"ipykernel"`
		RoundTrip     pyStat `json:"roundtrip_ms"`
		Stdout        pyStat `json:"stdout10mb_ms"`
		Lines         pyStat `json:"lines100k_ms"`
		Start         pyStat `json:"start_ms"`
	}
	if err := pyJSON(cmd, &v); err != nil {
		r.Skipped = err.Error()
		return r
	}
	r.Version = "jupyter_client " + v.JupyterClient + ", ipykernel " + v.IPyKernel
	r.RoundTrip, r.Stdout10MB, r.Lines100k, r.StartCold = v.RoundTrip.stat(), v.Stdout.stat(), v.Lines.stat(), v.Start.stat()
	return r
}

type pyStat struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
}

func (p pyStat) stat() stat { return stat(p) }
