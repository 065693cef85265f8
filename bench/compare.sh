#!/usr/bin/env bash
# Runs the Go kernel-client benchmarks, the MCP tool-call benchmark and
# Python's jupyter_client on the same kernel, back to back, and prints the
# medians side by side. Usage: bash bench/compare.sh [rounds]   (default 3)
# Each round runs every measurement once; the table shows the median of the
# rounds' medians, so one noisy run does not decide a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for r in $(seq "$rounds"); do
  go test -run '^$' -bench 'RoundTrip' -benchtime 300x ./kernel/ >>"$out/go.txt"
  go test -run '^$' -bench 'Stdout10MB|KernelStart' -benchtime 5x ./kernel/ >>"$out/go.txt"
  go test -run '^$' -bench 'RunCodeStdio' -benchtime 300x ./integration/ >>"$out/go.txt"
  python3 bench/jupyter_client_bench.py --json --n 300 --n-big 5 2>/dev/null >>"$out/py.jsonl"
done

python3 - "$out/go.txt" "$out/py.jsonl" <<'PY'
import json, re, statistics, sys
go = {}
for line in open(sys.argv[1]):
    m = re.match(r"(Benchmark\S+?)-\d+\s.*?([\d.]+) ms/median", line)
    if m:
        go.setdefault(m.group(1), []).append(float(m.group(2)))
py = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
def med(xs): return statistics.median(xs)
pyv = {k: med([p[k]["median"] for p in py]) for k in ("roundtrip_ms", "stdout10mb_ms", "start_ms")}
rows = [
    ("`1+1` round trip, kernel package, stock ipykernel", "BenchmarkExecuteRoundTripStock", "roundtrip_ms"),
    ("`1+1` round trip, kernel package, as kernel-mcp starts ipykernel", "BenchmarkExecuteRoundTrip", "roundtrip_ms"),
    ("`1+1` round trip, zmq4's unbuffered tcp, stock ipykernel", "BenchmarkExecuteRoundTripUnbuffered", "roundtrip_ms"),
    ("`run_code \"1+1\"` MCP tool call over stdio", "BenchmarkRunCodeStdio", "roundtrip_ms"),
    ("10 MB of stdout (10,240 prints of 1 KiB)", "BenchmarkStdout10MB", "stdout10mb_ms"),
    ("10 MB of stdout, unbuffered tcp", "BenchmarkStdout10MBUnbuffered", "stdout10mb_ms"),
    ("kernel start to first reply", "BenchmarkKernelStart", "start_ms"),
]
p0 = py[0]
print(f"python {p0['python']}, jupyter_client {p0['jupyter_client']}, ipykernel {p0['ipykernel']}; {len(py)} rounds\n")
print("| measurement | kernel-mcp (Go) median | jupyter_client median | ratio |")
print("|---|---|---|---|")
for label, bench, key in rows:
    if bench not in go:
        continue
    g = med(go[bench]); p = pyv[key]
    print(f"| {label} | {g:.2f} ms | {p:.2f} ms | {g/p:.2f}× |")
PY
