#!/usr/bin/env python3
"""Baseline: a Python client of a Jupyter gateway, as jupyter_server's own
GatewayClient talks to one: REST to start the kernel, then the kernel
WebSocket with legacy JSON framing (tornado's websocket client).

  roundtrip   execute `1+1`, wait for execute_reply AND iopub idle for it.
  stdout10mb  10 MiB of stdout, collected whole (the server's iopub rate
              limit must be off, or the output is replaced by a notice).

Usage: python bench/gateway_client_bench.py --url URL --token T [--n 300] [--n-big 5]
Prints one JSON object. Run it with the gateway venv's python (tornado).
"""
import argparse
import asyncio
import json
import math
import time
import urllib.request
import uuid

import tornado
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

STDOUT_CODE = "for _ in range(10240): print('x'*1023)"
STDOUT_BYTES = 10 * 1024 * 1024
WARMUP = 20


def stat(d):
    s = sorted(d)
    n = len(s)
    if n == 0:
        return {"n": 0, "median": 0, "p95": 0}
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"n": n, "median": med, "p95": s[max(0, math.ceil(0.95 * n) - 1)]}


def rest(url, token, method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "token " + token)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as r:
        data = r.read()
        return json.loads(data) if data else None


async def execute(ws, session, code):
    msg_id = uuid.uuid4().hex
    await ws.write_message(json.dumps({
        "channel": "shell",
        "header": {"msg_id": msg_id, "session": session, "username": "bench", "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))
    replied = idle = False
    out = 0
    while not (replied and idle):
        m = json.loads(await ws.read_message())
        if m.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        t = m["header"]["msg_type"]
        if t == "execute_reply":
            replied = True
        elif t == "status" and m["content"]["execution_state"] == "idle":
            idle = True
        elif t == "stream":
            out += len(m["content"]["text"])
    return out


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--n-big", type=int, default=5)
    a = ap.parse_args()
    k = rest(a.url, a.token, "POST", "/api/kernels", {"name": "python3"})
    try:
        session = uuid.uuid4().hex
        req = HTTPRequest(
            a.url.replace("http", "ws", 1) + "/api/kernels/" + k["id"] + "/channels?session_id=" + session,
            headers={"Authorization": "token " + a.token})
        ws = await websocket_connect(req, max_message_size=1 << 30)
        for _ in range(WARMUP):
            await execute(ws, session, "1+1")
        rt = []
        for _ in range(a.n):
            t0 = time.perf_counter()
            await execute(ws, session, "1+1")
            rt.append((time.perf_counter() - t0) * 1000)
        big = []
        for _ in range(a.n_big):
            t0 = time.perf_counter()
            n = await execute(ws, session, STDOUT_CODE)
            if n != STDOUT_BYTES:
                raise SystemExit(f"10 MB: got {n} bytes (is the server's iopub rate limit on?)")
            big.append((time.perf_counter() - t0) * 1000)
        ws.close()
        print(json.dumps({"tornado": tornado.version, "roundtrip_ms": stat(rt), "stdout10mb_ms": stat(big)}))
    finally:
        rest(a.url, a.token, "DELETE", "/api/kernels/" + k["id"])


if __name__ == "__main__":
    asyncio.run(main())
