#!/usr/bin/env python3
"""Baseline benchmark: Python's jupyter_client against a local IPython kernel.

Measures the same operations as the Go benchmarks in kernel-mcp
(`go test -run '^$' -bench . ./kernel/`), so both clients can be compared on
the same machine:

  roundtrip   <-> BenchmarkExecuteRoundTrip
      Execute `1+1` and wait until BOTH the shell execute_reply arrived AND
      iopub `status: idle` for that msg_id was seen, collecting outputs on the
      way. Done by hand (send execute_request, read iopub until idle for the
      parent, then read the shell reply) rather than via execute_interactive,
      so no extra helper overhead is counted. 20 warm-up runs, then --n timed.
  stdout10mb  <-> BenchmarkStdout10MB
      Execute STDOUT_CODE (10 MiB printed as 10240 lines of 1 KiB), collect
      ALL stream text and assert its length is exactly 10 MiB. --n-big runs.
  lines100k
      Execute LINES_CODE (100,000 short lines, one print each), collect all
      stream text and check it has 100,000 lines. --n-big runs.
  start       <-> BenchmarkKernelStart
      KernelManager.start_kernel() until the first kernel_info_reply
      (client.wait_for_ready()). --n-start runs, each kernel shut down again.

Kernel: kernelspec `python3` (--kernel-name) or, with --python PATH, a custom
KernelSpec running `PATH -m ipykernel_launcher -f {connection_file}`.
Every kernel is shut down in a finally block (graceful, then forced).

With --serve, it starts one kernel, prints "ready", then reads one workload
name a line on stdin (roundtrip, stdout10mb) and answers each with the
milliseconds one run took, until stdin closes: mcpbench alternates it with
the Go client and the MCP server run by run, so that all three are measured
under the same machine load.

Usage: python3 bench/jupyter_client_bench.py [--json] [--n 300] [--n-big 5]
       [--only roundtrip,stdout10mb,lines100k,start] [--python /path/to/python]
       python3 bench/jupyter_client_bench.py --serve [--python /path/to/python]
"""
import argparse
import json
import math
import statistics
import sys
import time

import ipykernel
import jupyter_client
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpec

ROUNDTRIP_CODE = "1+1"
STDOUT_CODE = "for _ in range(10240): print('x'*1023)"  # 10240 * 1024 bytes
STDOUT_BYTES = 10 * 1024 * 1024
LINES_CODE = "for i in range(100000): print(i)"
LINES = 100000
TIMEOUT = 120.0  # seconds, per message wait
WARMUP = 20


def make_manager(args):
    km = KernelManager(kernel_name=args.kernel_name)
    if args.python:
        km._kernel_spec = KernelSpec(
            argv=[args.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="bench-python", language="python",
        )
    return km


def start_kernel(args):
    """Start a kernel and a ready client; returns (km, kc)."""
    km = make_manager(args)
    km.start_kernel()
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT)
    except BaseException:
        shutdown(km, None)
        raise
    return km, kc


def shutdown(km, kc):
    if kc is not None:
        kc.stop_channels()
    try:
        km.shutdown_kernel(now=False)
    except Exception:
        km.shutdown_kernel(now=True)
    if km.has_kernel and km.is_alive():
        km.shutdown_kernel(now=True)


def execute(kc, code):
    """Send execute_request; return (reply, outputs) once reply AND idle seen."""
    msg_id = kc.execute(code)
    outputs = []
    while True:  # iopub until status idle for our request
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        mtype, content = msg["msg_type"], msg["content"]
        if mtype == "status":
            if content["execution_state"] == "idle":
                break
        elif mtype in ("stream", "execute_result", "display_data", "error"):
            outputs.append((mtype, content))
    while True:  # shell reply for our request
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"execute failed: {reply['content']}")
    return reply, outputs


def elapsed_ms(t0):
    return (time.perf_counter_ns() - t0) / 1e6


def summarize(samples):
    s = sorted(samples)
    p95 = s[max(0, math.ceil(0.95 * len(s)) - 1)]  # nearest-rank
    return {"median": round(statistics.median(s), 3), "p95": round(p95, 3),
            "mean": round(statistics.fmean(s), 3), "min": round(s[0], 3),
            "n": len(s)}


def bench_roundtrip(kc, n):
    for _ in range(WARMUP):
        execute(kc, ROUNDTRIP_CODE)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        _, outputs = execute(kc, ROUNDTRIP_CODE)
        samples.append(elapsed_ms(t0))
        assert outputs and outputs[-1][1]["data"]["text/plain"] == "2", outputs
    return summarize(samples)


def bench_stdout(kc, n):
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        _, outputs = execute(kc, STDOUT_CODE)
        total = sum(len(c["text"]) for t, c in outputs if t == "stream")
        samples.append(elapsed_ms(t0))
        assert total == STDOUT_BYTES, f"got {total} stream chars, want {STDOUT_BYTES}"
    return summarize(samples)


def bench_lines(kc, n):
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        _, outputs = execute(kc, LINES_CODE)
        text = "".join(c["text"] for t, c in outputs if t == "stream")
        samples.append(elapsed_ms(t0))
        assert text.count("\n") == LINES, f"got {text.count(chr(10))} lines, want {LINES}"
    return summarize(samples)


def bench_start(args, n):
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        km, kc = start_kernel(args)
        samples.append(elapsed_ms(t0))
        shutdown(km, kc)
    return summarize(samples)


def serve(args):
    """Runs one workload per stdin line, answering each with its time in ms."""
    km, kc = start_kernel(args)
    try:
        for _ in range(WARMUP):
            execute(kc, ROUNDTRIP_CODE)
        print("ready", flush=True)
        for line in sys.stdin:
            name = line.strip()
            if name == "roundtrip":
                t0 = time.perf_counter_ns()
                execute(kc, ROUNDTRIP_CODE)
                ms = elapsed_ms(t0)
            elif name == "stdout10mb":
                t0 = time.perf_counter_ns()
                _, outputs = execute(kc, STDOUT_CODE)
                total = sum(len(c["text"]) for t, c in outputs if t == "stream")
                ms = elapsed_ms(t0)
                assert total == STDOUT_BYTES, f"got {total} stream chars, want {STDOUT_BYTES}"
            else:
                raise SystemExit(f"unknown workload {name!r}")
            print(f"{ms:.3f}", flush=True)
    finally:
        shutdown(km, kc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="roundtrip iterations")
    ap.add_argument("--n-big", type=int, default=5, help="stdout10mb iterations")
    ap.add_argument("--n-start", type=int, default=5, help="start iterations")
    ap.add_argument("--only", default="roundtrip,stdout10mb,lines100k,start")
    ap.add_argument("--kernel-name", default="python3")
    ap.add_argument("--python", help="launch PATH -m ipykernel_launcher instead")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true", help="run workloads named on stdin, one a line")
    args = ap.parse_args()
    if args.serve:
        serve(args)
        return
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {"roundtrip", "stdout10mb", "lines100k", "start"}
    if unknown:
        ap.error(f"unknown --only entries: {sorted(unknown)}")

    result = {"python": sys.version.split()[0], "jupyter_client": jupyter_client.__version__,
              "ipykernel": ipykernel.__version__, "kernel": args.python or args.kernel_name,
              "stdout_code": STDOUT_CODE}
    if only & {"roundtrip", "stdout10mb", "lines100k"}:
        km, kc = start_kernel(args)
        try:
            if "roundtrip" in only:
                result["roundtrip_ms"] = bench_roundtrip(kc, args.n)
            if "stdout10mb" in only:
                result["stdout10mb_ms"] = bench_stdout(kc, args.n_big)
            if "lines100k" in only:
                result["lines100k_ms"] = bench_lines(kc, args.n_big)
        finally:
            shutdown(km, kc)
    if "start" in only:
        result["start_ms"] = bench_start(args, args.n_start)

    if args.json:
        print(json.dumps(result))
        return
    print(f"python {result['python']}  jupyter_client {result['jupyter_client']}  "
          f"ipykernel {result['ipykernel']}  kernel {result['kernel']}")
    print(f"STDOUT_CODE: {STDOUT_CODE}")
    print(f"{'benchmark':<12} {'n':>5} {'median ms':>11} {'p95 ms':>11} {'mean ms':>11} {'min ms':>11}")
    for name in ("roundtrip", "stdout10mb", "lines100k", "start"):
        r = result.get(f"{name}_ms")
        if r:
            print(f"{name:<12} {r['n']:>5} {r['median']:>11.3f} {r['p95']:>11.3f} "
                  f"{r['mean']:>11.3f} {r['min']:>11.3f}")


if __name__ == "__main__":
    main()
