"""Times drawing the same charts as PNG three ways on this machine, for
docs/performance.md ("Chart images"):

  server  the server's renderer (chartimage, through bench/charts/render):
          cold = a new renderer's first image, browser start included;
          warm = an image on the running browser.
  kaleido fig.to_image("png") in the kernel's Python (kaleido 1.x, which
          drives a Chrome it finds): cold = the first call in a fresh
          Python (kaleido's import and its browser start included); warm =
          later calls in that Python, as plotly makes them by default, and
          with kaleido.start_sync_server() keeping one browser.
  vl-convert  vl_convert.vegalite_to_png for the Vega-Lite chart: cold =
          import and first call in a fresh Python; warm = later calls.

The charts: a Plotly Express scatter of 3 series of 50 points, a Plotly
Express scatter of 100,000 points (which Plotly Express draws with
scattergl, WebGL) and an Altair bar chart (Vega-Lite). Medians of --runs
runs. Needs plotly, kaleido, altair, vl-convert-python, pandas and numpy
for the Python it runs under, and go.

    python3 bench/charts/charts.py [--runs 7] [--json out.json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def make_specs(d):
    import altair as alt
    import numpy as np
    import pandas as pd
    import plotly.express as px

    rng = np.random.default_rng(29)
    df = pd.DataFrame({"x": rng.normal(size=150), "y": rng.normal(size=150),
                       "series": np.repeat(["a", "b", "c"], 50)})
    small = px.scatter(df, x="x", y="y", color="series", title="3 series of 50 points")
    big = px.scatter(x=rng.normal(size=100_000), y=rng.normal(size=100_000), title="100,000 points")
    bars = alt.Chart(pd.DataFrame({"category": list("ABCDEFGH"), "value": rng.integers(1, 100, 8)})).mark_bar(
    ).encode(x="category:N", y="value:Q").properties(title="Altair bar chart")
    specs = {"plotly_scatter_3x50": ("plotly", small.to_json()),
             "altair_bar": ("vega-lite", bars.to_json()),
             "plotly_scatter_100k": ("plotly", big.to_json())}
    paths = {}
    for name, (kind, text) in specs.items():
        p = os.path.join(d, name + ".json")
        with open(p, "w") as f:
            f.write(text)
        paths[name] = (kind, p)
    return paths


def tree_memory(pid):
    """Processes, VmRSS and Pss (MB) of pid's descendants."""
    parent = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                s = f.read()
        except OSError:
            continue
        parent[int(e)] = int(s[s.rindex(")") + 2:].split()[1])
    tree = []
    for p in parent:
        q = parent[p]
        while q > 1:
            if q == pid:
                tree.append(p)
                break
            q = parent.get(q, 0)

    def kb(path, field):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(field):
                        return float(line.split()[1])
        except OSError:
            pass
        return 0.0
    rss = sum(kb(f"/proc/{p}/status", "VmRSS:") for p in tree) / 1024
    pss = sum(kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in tree) / 1024
    return len(tree), rss, pss


# Run in a fresh Python: argv = mode, kind, path, runs. Prints JSON.
CHILD = r'''
import json, sys, time
mode, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from charts import tree_memory
spec = open(path).read()
out = {"ms": []}
if mode.startswith("kaleido"):
    import plotly.io as pio
    fig = pio.from_json(spec)
    if mode == "kaleido-server":
        import kaleido
        kaleido.start_sync_server()
    n = 1 if mode == "kaleido-cold" else runs + 1
    for i in range(n):
        t = time.perf_counter()
        png = fig.to_image(format="png")
        out["ms"].append((time.perf_counter() - t) * 1000)
    out["png_bytes"] = len(png)
    if mode == "kaleido-server":
        import os
        out["processes"], out["rss_mb"], out["pss_mb"] = tree_memory(os.getpid())
        kaleido.stop_sync_server()
else:
    t = time.perf_counter()
    import vl_convert as vlc
    n = 1 if mode == "vl-cold" else runs + 1
    for i in range(n):
        png = vlc.vegalite_to_png(spec)
        out["ms"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
    out["png_bytes"] = len(png)
if n > 1:
    out["ms"] = out["ms"][1:]  # warm: the first call is not counted
print(json.dumps(out))
'''


def child(mode, path, runs):
    r = subprocess.run([sys.executable, "-c", CHILD, mode, path, str(runs), HERE],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def med(xs):
    return round(statistics.median(xs), 1) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="kmcharts-")
    specs = make_specs(d)
    res = {"runs": a.runs, "charts": {}}

    # The server's renderer.
    binary = os.path.join(d, "render")
    subprocess.run(["go", "build", "-o", binary, "./bench/charts/render"], cwd=ROOT, check=True)
    srv = json.loads(subprocess.run([binary, "-runs", str(a.runs)] + [f"{k}:{p}" for k, p in specs.values()],
                                    capture_output=True, text=True, check=True).stdout)
    res["server_memory"] = srv["browser_memory"]
    for c in srv["charts"]:
        res["charts"][c["name"]] = {"spec_bytes": c["spec_bytes"], "server": {
            "cold": med(c["cold_ms"]), "warm": med(c["warm_ms"]), "png_bytes": c["png_bytes"],
            "error": c.get("error"), "cold_ms": c["cold_ms"], "warm_ms": c["warm_ms"]}}

    for name, (kind, path) in specs.items():
        row = res["charts"][name]
        if kind == "plotly":
            cold = [child("kaleido-cold", path, 1) for _ in range(a.runs)]
            warm = child("kaleido-warm", path, a.runs)
            server = child("kaleido-server", path, a.runs)
            row["kaleido"] = {"cold": med([c["ms"][0] for c in cold if "ms" in c]), "warm": med(warm.get("ms", [])),
                              "warm_sync_server": med(server.get("ms", [])), "png_bytes": warm.get("png_bytes"),
                              "error": next((c["error"] for c in cold + [warm, server] if "error" in c), None)}
            if "rss_mb" in server:
                res.setdefault("kaleido_memory", {})[name] = {k: server[k] for k in ("processes", "rss_mb", "pss_mb")}
        else:
            cold = [child("vl-cold", path, 1) for _ in range(a.runs)]
            warm = child("vl-warm", path, a.runs)
            row["vl_convert"] = {"cold": med([c["ms"][0] for c in cold if "ms" in c]), "warm": med(warm.get("ms", [])),
                                 "png_bytes": warm.get("png_bytes"),
                                 "error": next((c["error"] for c in cold + [warm] if "error" in c), None)}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
