"""The context a session costs the assistant: a fixed exploratory data analysis
run through the official MCP Python SDK against a kernel-mcp binary over stdio.

It measures what reaches the client: the tools/list (the JSON of the tools
array), and for every call the characters of its text content, of its images
(base64, counted apart: a client sends them to the model as images, not text)
and of its structured content (JSON). Every call has assertions on the
information its result must carry, read from whichever of content or
structured content carries it, so the same script checks that a leaner result
lost nothing.

    python context.py [--bin PATH] [--json OUT] [--compare BEFORE.json] [--charts]

The binary is --bin, else $KERNEL_MCP_BIN, else bin/kernel-mcp. The kernel's
Python is $PYTHON_MCP_INTERPRETER, else python3 on PATH (it needs ipykernel,
pandas, matplotlib and statsmodels; --charts, plotly and altair too). --charts
adds, after the analysis and reported apart from it, a Plotly Express
scatter, an Altair chart and a matplotlib plot. `make context` builds the binary, makes
the SDK's virtualenv and runs this; see docs/context.md.
"""

import argparse
import asyncio
import base64
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROWS = 300
SEED = 21
REGIONS = ["North", "South", "East", "West"]
PRODUCTS = ["A", "B", "C"]


# ---------------------------------------------------------------- the data


def make_data(path):
    """Writes the CSV and returns its columns as Python lists (None = missing)."""
    rng = random.Random(SEED)
    start = datetime.date(2024, 1, 1)
    cols = {"date": [], "region": [], "product": [], "units": [], "price": [], "revenue": []}
    for i in range(ROWS):
        units = rng.randint(1, 60)
        price = round(rng.uniform(2.0, 20.0), 2)
        revenue = round(units * price + rng.gauss(0, 15), 2)
        cols["date"].append((start + datetime.timedelta(days=i)).isoformat())
        cols["region"].append(rng.choice(REGIONS))
        cols["product"].append(rng.choice(PRODUCTS))
        cols["units"].append(units)
        cols["price"].append(price)
        cols["revenue"].append(revenue)
    # Missing values: 12 prices and 5 regions, at fixed rows.
    for i in rng.sample(range(ROWS), 12):
        cols["price"][i] = None
    for i in rng.sample(range(ROWS), 5):
        cols["region"][i] = None
    with open(path, "w") as f:
        f.write(",".join(cols) + "\n")
        for i in range(ROWS):
            f.write(",".join("" if cols[c][i] is None else str(cols[c][i]) for c in cols) + "\n")
    return cols


def ols(y, xs):
    """OLS of y on the columns xs plus a constant, by the normal equations."""
    rows = [[1.0] + [x[i] for x in xs] for i in range(len(y))]
    k = len(rows[0])
    a = [[sum(r[p] * r[q] for r in rows) for q in range(k)] for p in range(k)]
    b = [sum(r[p] * yy for r, yy in zip(rows, y)) for p in range(k)]
    for p in range(k):  # Gauss-Jordan
        piv = a[p][p]
        a[p] = [v / piv for v in a[p]]
        b[p] /= piv
        for q in range(k):
            if q != p:
                f = a[q][p]
                a[q] = [vq - f * vp for vq, vp in zip(a[q], a[p])]
                b[q] -= f * b[p]
    fitted = [sum(c * v for c, v in zip(b, r)) for r in rows]
    mean = sum(y) / len(y)
    ss_res = sum((yy - ff) ** 2 for yy, ff in zip(y, fitted))
    ss_tot = sum((yy - mean) ** 2 for yy in y)
    return b, 1 - ss_res / ss_tot


# ---------------------------------------------------------------- reading results


def texts(res):
    return [c.text for c in res.content if c.type == "text"]


def images(res):
    return [c for c in res.content if c.type == "image"]


def leaves(v):
    """Every scalar inside a JSON value."""
    if isinstance(v, dict):
        for x in v.values():
            yield from leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from leaves(x)
    else:
        yield v


def haystack(res):
    """All the text a result carries: its text blocks, every string and
    number in its structured content, and that content as JSON (for keys)."""
    parts = texts(res)
    if res.structured_content is not None:
        parts += [str(x) for x in leaves(res.structured_content) if x is not None]
        parts.append(json.dumps(res.structured_content, ensure_ascii=False))
    return "\n".join(parts)


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def numbers(res):
    out = [float(m) for m in NUMBER.findall("\n".join(texts(res)))]
    if res.structured_content is not None:
        for x in leaves(res.structured_content):
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                out.append(float(x))
            elif isinstance(x, str):
                out += [float(m) for m in NUMBER.findall(x)]
    return out


def has_number(res, want, tol):
    return any(abs(x - want) <= tol for x in numbers(res))


def json_values(res):
    """The structured content, and any text block that is JSON."""
    if res.structured_content is not None:
        yield res.structured_content
    for t in texts(res):
        # The whole block, or what follows a heading line ("expr (type):").
        for start in {0, t.find("\n") + 1}:
            try:
                yield json.loads(t[start:])
            except ValueError:
                pass


def find_list(v, want):
    """Is the list `want` somewhere in v (as a value, or as a column of a
    table in records or split form)?"""
    if v == want:
        return True
    if isinstance(v, dict):
        if isinstance(v.get("columns"), list) and isinstance(v.get("data"), list):
            for j, _ in enumerate(v["columns"]):
                if [row[j] for row in v["data"] if isinstance(row, list) and len(row) > j] == want:
                    return True
        return any(find_list(x, want) for x in v.values())
    if isinstance(v, list):
        if v and all(isinstance(r, dict) for r in v):
            for key in v[0]:
                if [r.get(key) for r in v] == want:
                    return True
        return any(find_list(x, want) for x in v)
    return False


def carries_list(res, want):
    return any(find_list(v, want) for v in json_values(res))


def has_shape(res, rows, cols):
    """A shape as text ("300 rows x 6 columns", "(300, 6)") or as [300, 6]."""
    if re.search(rf"\b{rows}( rows)? ?[x×,] ?{cols}\b", haystack(res)):
        return True
    return any(find_list(v, [rows, cols]) for v in json_values(res))


def status_of(res):
    sc = res.structured_content
    return sc.get("status") if isinstance(sc, dict) else None


# ---------------------------------------------------------------- the script


class Run:
    def __init__(self, client, dump=None):
        self.client = client
        self.dump = dump
        self.rows = []
        self.failures = []

    async def call(self, label, tool, args, checks):
        res = await self.client.call_tool(tool, args, read_timeout_seconds=300)
        text = sum(len(t) for t in texts(res))
        img = sum(len(i.data) for i in images(res))
        img_bytes = sum(len(base64.b64decode(i.data)) for i in images(res))
        sc = 0
        if res.structured_content is not None:
            sc = len(json.dumps(res.structured_content, ensure_ascii=False, separators=(",", ":")))
        if self.dump:
            self.dump.write(json.dumps({"call": label, "args": args, "result": res.model_dump(
                mode="json", by_alias=True, exclude_unset=True)}, ensure_ascii=False) + "\n")
        # Anything else (a resource link) counts as text, as its JSON.
        other = [c for c in res.content if c.type not in ("text", "image")]
        text += sum(len(json.dumps(c.model_dump(mode="json", by_alias=True, exclude_unset=True),
                                   ensure_ascii=False, separators=(",", ":"))) for c in other)
        other = [c.type for c in other]
        failed = []
        try:
            for what, ok in checks(res):
                if not ok:
                    failed.append(what)
        except Exception as e:  # a result of an unexpected shape
            failed.append(f"the assertions raised {e!r}")
        self.rows.append({"call": label, "tool": tool, "text": text, "images": img, "image_bytes": img_bytes,
                          "structured": sc, "other": other, "is_error": bool(res.is_error), "failed": failed})
        for what in failed:
            self.failures.append(f"{label}: {what}")
        return res


async def script(client, work, cols, python, dump):
    r = Run(client, dump)
    csv = os.path.join(work, "sales.csv")
    present = [i for i, p in enumerate(cols["price"]) if p is not None]

    await r.call("load_data", "load_data", {"path": csv}, lambda res: [
        ("not an error", not res.is_error),
        ("shape (300, 6)", has_shape(res, 300, 6)),
        ("every column name", all(c in haystack(res) for c in cols)),
        ("first row's revenue", str(cols["revenue"][0]) in haystack(res)),
    ])

    await r.call("describe_data", "describe_data", {}, lambda res: [
        ("not an error", not res.is_error),
        ("12 prices missing", re.search(r"price\W+12\b", haystack(res)) is not None),
        ("5 regions missing", re.search(r"region\W+5\b", haystack(res)) is not None),
        ("288 prices counted", "288" in haystack(res)),
        ("mean units", has_number(res, sum(cols["units"]) / ROWS, 1e-4)),
        ("max units", has_number(res, max(cols["units"]), 0)),
    ])

    months = {}
    for d, u in zip(cols["date"], cols["units"]):
        months.setdefault(d[:7], []).append(u)
    await r.call("run_code: dates, monthly mean", "run_code", {"code": (
        'import pandas as pd\n'
        'df["date"] = pd.to_datetime(df["date"])\n'
        'df.groupby(df["date"].dt.to_period("M"))["units"].mean().round(2)')}, lambda res: [
        ("not an error", not res.is_error),
        ("every month", all(m in haystack(res) for m in months)),
        ("March's mean", has_number(res, round(sum(months["2024-03"]) / len(months["2024-03"]), 2), 0.006)),
    ])

    by_region = {}
    for g, u in zip(cols["region"], cols["units"]):
        if g is not None:
            n, s = by_region.get(g, (0, 0))
            by_region[g] = (n + 1, s + u)
    await r.call("run_code: groupby", "run_code", {"code": (
        'df.groupby("region").agg(n=("units", "size"), units=("units", "sum"))')}, lambda res: [
        ("not an error", not res.is_error),
        ("every region", all(g in haystack(res) for g in REGIONS)),
        ("counts and sums", all(re.search(rf"{g}\s+{n}\s+{s}\b", haystack(res)) for g, (n, s) in by_region.items())),
    ])

    await r.call("run_code: plot", "run_code", {"code": (
        'import matplotlib.pyplot as plt\n'
        'ax = df.plot(x="date", y="revenue", figsize=(6, 3), title="revenue")\nplt.show()')}, lambda res: [
        ("not an error", not res.is_error),
        ("a PNG image", any(i.mime_type == "image/png" and len(i.data) > 1000 for i in images(res))),
    ])

    await r.call("run_code: error", "run_code", {"code": 'total = df["revenu"].sum()'}, lambda res: [
        ("is an error", res.is_error),
        ("KeyError named", "KeyError" in haystack(res)),
        ("the wrong key", "revenu" in haystack(res)),
        ("a traceback", "Traceback" in haystack(res) or "---->" in haystack(res) or "Cell In[" in haystack(res)),
    ])

    await r.call("run_code: print loop", "run_code", {"code": (
        'for p in ["A", "B", "C"]:\n'
        '    part = df[df["product"] == p]\n'
        '    print(f"product {p}: {len(part)} rows, {part[\'units\'].sum()} units")')}, lambda res: [
        ("not an error", not res.is_error),
        ("every line printed", all(
            f"product {p}: {sum(1 for q in cols['product'] if q == p)} rows, "
            f"{sum(u for q, u in zip(cols['product'], cols['units']) if q == p)} units" in haystack(res)
            for p in PRODUCTS)),
    ])

    await r.call("get_value: Series", "get_value", {"expression": 'df["price"].head(60)'}, lambda res: [
        ("not an error", not res.is_error),
        ("the 60 values, missing as null", carries_list(res, cols["price"][:60])),
    ])

    await r.call("get_value: DataFrame", "get_value", {"expression": 'df[["region", "units", "price"]].head(20)'},
                 lambda res: [
        ("not an error", not res.is_error),
        ("units column", carries_list(res, cols["units"][:20])),
        ("region column", carries_list(res, cols["region"][:20])),
        ("column names", all(c in haystack(res) for c in ("region", "units", "price"))),
    ])

    await r.call("list_variables", "list_variables", {}, lambda res: [
        ("not an error", not res.is_error),
        ("df, a DataFrame", re.search(r"\bdf\b", haystack(res)) and "DataFrame" in haystack(res)),
        ("df's shape", has_shape(res, 300, 6)),
        ("ax, the plot's axes", re.search(r"\bax\b", haystack(res)) is not None),
    ])

    y = [cols["revenue"][i] for i in present]
    coef, r2 = ols(y, [[cols["units"][i] for i in present], [cols["price"][i] for i in present]])
    await r.call("estimate_ols", "estimate_ols", {"y": "revenue", "x": ["units", "price"]}, lambda res: [
        ("not an error", not res.is_error),
        ("coefficient of units", has_number(res, coef[1], 5e-4)),
        ("coefficient of price", has_number(res, coef[2], 5e-4)),
        ("constant", has_number(res, coef[0], 5e-4)),
        ("R-squared", has_number(res, r2, 5e-4)),
        ("288 observations", "288" in haystack(res)),
    ])

    await r.call("plot_data: hist", "plot_data", {"kind": "hist", "y": "units"}, lambda res: [
        ("not an error", not res.is_error),
        ("a PNG image", any(i.mime_type == "image/png" and len(i.data) > 1000 for i in images(res))),
    ])

    hist = await r.call("get_history", "get_history", {}, lambda res: [
        ("not an error", not res.is_error),
        ("the groupby's code", 'df.groupby("region")' in haystack(res)),
        ("the failed block's error", "KeyError" in haystack(res)),
        ("the printed lines", "product A:" in haystack(res)),
    ])
    # The failed block's number in the transcript ([1] is the first block).
    m = re.search(r"^\[(\d+)\] total = df\[\"revenu\"\]", "\n".join(texts(hist) + [haystack(hist)]), re.M)
    failed_block = int(m.group(1)) if m else None
    if failed_block is None:
        r.failures.append("get_history: the failed block's number not found")
        failed_block = 6

    await r.call("delete_history: the failed block", "delete_history", {"start": failed_block - 1}, lambda res: [
        ("not an error", not res.is_error),
        ("one block removed", re.search(r"\b1 block|\"blocks\": 1\b", haystack(res)) is not None
         or 'df["revenu"]' in haystack(res)),
    ])

    await r.call("rerun_code", "rerun_code", {}, lambda res: [
        ("not an error", not res.is_error),
        ("ran to the end", status_of(res) in (None, "ok")),
        ("the 8 blocks named", re.search(r"\b8 (of 8|block)", haystack(res)) is not None),
    ])

    nb = os.path.join(work, "eda.ipynb")
    await r.call("save_notebook", "save_notebook", {"path": "eda.ipynb"}, lambda res: [
        ("not an error", not res.is_error),
        ("the path", nb in haystack(res)),
        ("the file, nbformat 4, no KeyError", notebook_ok(nb)),
    ])

    await r.call("session_status", "session_status", {}, lambda res: [
        ("not an error", not res.is_error),
        ("the interpreter", python_version(python) in haystack(res)),
        ("pandas's version", "pandas" in haystack(res)),
        ("the pid", re.search(r"\bpid\W+\d+", haystack(res) + json.dumps(res.structured_content), re.I) is not None),
    ])

    asked = await r.call("run_code: input()", "run_code", {"code": (
        'name = input("Analyst name: ")\nprint(f"report signed by {name}")')}, lambda res: [
        ("waits for input", "input_requested" in haystack(res) or "waits for input" in haystack(res)),
        ("the prompt", "Analyst name:" in haystack(res)),
    ])
    run_id = (asked.structured_content or {}).get("run_id")
    answered = await r.call("send_input", "send_input", {"text": "Ada", **({"run_id": run_id} if run_id else {})},
                            lambda res: [("not an error", not res.is_error)])
    if "report signed by Ada" not in haystack(answered):
        # A send_input that does not wait for the run's end needs one more call.
        await r.call("wait_run", "wait_run", {}, lambda res: [
            ("not an error", not res.is_error),
            ("the answer reached the code", "report signed by Ada" in haystack(res)),
        ])
    return r


# The chart calls (--charts), run after the fixed analysis on the same
# session: what a chart costs in text and structured content besides its
# image, a Plotly and an Altair chart (drawn by the server) against a
# matplotlib figure (the kernel's own PNG).
CHART_CALLS = [
    ("run_code: Plotly Express scatter", (
        'import plotly.express as px\n'
        'px.scatter(df, x="units", y="revenue", color="region", title="Revenue by units")'),
     ["Revenue by units", "units", "revenue"]),
    ("run_code: Altair bar chart", (
        'import altair as alt\n'
        'alt.Chart(df).mark_bar().encode(x="region:N", y="sum(revenue):Q").properties(title="Revenue by region")'),
     ["Revenue by region", "region", "revenue"]),
    ("run_code: matplotlib scatter", (
        'import matplotlib.pyplot as plt\n'
        'ax = df.plot.scatter(x="units", y="revenue", figsize=(6, 4), title="Revenue by units (matplotlib)")\n'
        'plt.show()'),
     []),
]


async def chart_script(client, dump):
    r = Run(client, dump)
    for label, code, words in CHART_CALLS:
        await r.call(label, "run_code", {"code": code}, lambda res, words=words: [
            ("not an error", not res.is_error),
            ("a PNG image", any(i.mime_type == "image/png" and len(i.data) > 1000 for i in images(res))),
        ] + [(f"the chart's {w!r}", w in haystack(res)) for w in words])
    return r


def notebook_ok(path):
    try:
        with open(path) as f:
            nb = json.load(f)
    except (OSError, ValueError):
        return False
    return nb.get("nbformat") == 4 and "KeyError" not in json.dumps(nb) and "product A:" in json.dumps(nb)


def python_version(python):
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


# ---------------------------------------------------------------- main


def server(binary, python, work, *flags):
    return StdioServerParameters(
        command=binary,
        args=["--state-dir", "none", "--pool-size", "0", "--workdir", work, "--log-level", "warn", *flags],
        env={"PYTHON_MCP_INTERPRETER": python},
        cwd=work)


def tools_chars(listed):
    """The characters of the tools array as the client received it (compact JSON)."""
    tools = [t.model_dump(mode="json", by_alias=True, exclude_unset=True) for t in listed.tools]
    return len(tools), len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))


async def measure(binary, python, dump=None, charts=False):
    work = os.path.realpath(tempfile.mkdtemp(prefix="kmctx-"))
    try:
        cols = make_data(os.path.join(work, "sales.csv"))
        async with Client(server(binary, python, work, "--tools", "minimal")) as client:
            n_min, minimal = tools_chars(await client.list_tools())
        async with Client(server(binary, python, work)) as client:
            n, chars = tools_chars(await client.list_tools())
            instructions = len(client.instructions or "")
            r = await script(client, work, cols, python, dump)
            m = {"binary": binary, "tools": n, "tools_list": chars, "tools_minimal": n_min,
                 "tools_list_minimal": minimal, "instructions": instructions,
                 "calls": r.rows, "failures": r.failures}
            if charts:
                c = await chart_script(client, dump)
                m["chart_calls"] = c.rows
                m["failures"] += c.failures
        return m
    finally:
        shutil.rmtree(work, ignore_errors=True)


def totals(m):
    t = {k: sum(c[k] for c in m["calls"]) for k in ("text", "images", "structured")}
    t["calls"] = t["text"] + t["structured"]
    # What one client pays: one that gives the model the text content, and one
    # that gives it structuredContent in place of the text when a result has it.
    t["as_text"] = t["text"]
    t["as_structured"] = sum(c["structured"] if c["structured"] else c["text"] for c in m["calls"])
    t["session"] = m["tools_list"] + m["instructions"] + t["calls"]
    return t


def fmt(n):
    return f"{n:,}"


def change(before, after):
    if before == 0:
        return "—" if after == 0 else "new"
    pct = round(100 * (after - before) / before)
    return f"{pct:+d}%" if pct else "0%"


def report(m, before=None):
    """The Markdown tables: one run, or a run against an earlier one."""
    t = totals(m)
    out = []
    if before is None:
        out.append(f"`{m['binary']}`: {m['tools']} tools, {len(m['calls'])} calls. Characters; images are "
                   f"base64 characters, counted apart.\n")
        out.append("| | text | structured | text + structured | images |")
        out.append("|---|---:|---:|---:|---:|")
        out.append(f"| tools/list, `--tools all` ({m['tools']} tools) | | | {fmt(m['tools_list'])} | |")
        out.append(f"| tools/list, `--tools minimal` ({m['tools_minimal']} tools, not in the totals) | | | "
                   f"{fmt(m['tools_list_minimal'])} | |")
        out.append(f"| instructions (initialize) | | | {fmt(m['instructions'])} | |")
        for i, c in enumerate(m["calls"], 1):
            out.append(f"| {i}. {c['call']} | {fmt(c['text'])} | {fmt(c['structured'])} | "
                       f"{fmt(c['text'] + c['structured'])} | {fmt(c['images']) if c['images'] else ''} |")
        out.append(f"| **the {len(m['calls'])} calls** | **{fmt(t['text'])}** | **{fmt(t['structured'])}** | "
                   f"**{fmt(t['calls'])}** | **{fmt(t['images'])}** |")
        out.append(f"| **the session** (tools/list + instructions + calls) | | | **{fmt(t['session'])}** | |")
        out.append(f"| the calls, to a client that passes the text | | | {fmt(t['as_text'])} | |")
        out.append(f"| the calls, to a client that passes structuredContent in place of the text | | | "
                   f"{fmt(t['as_structured'])} | |")
    else:
        bt = totals(before)
        out.append(f"before: `{before['binary']}`, {len(before['calls'])} calls; after: `{m['binary']}`, "
                   f"{len(m['calls'])} calls. Characters; images are base64 characters, counted apart.\n")
        out.append("| | text before | text after | structured before | structured after "
                   "| text + structured before | after | change |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")

        def row(label, b, a, bt_=None, at=None, bs=None, as_=None):
            cells = [label, bt_, at, bs, as_, b, a, change(b, a)]
            return "| " + " | ".join("" if v is None else (fmt(v) if isinstance(v, int) else v) for v in cells) + " |"

        out.append(row("tools/list, `--tools all`", before["tools_list"], m["tools_list"]))
        out.append(row("tools/list, `--tools minimal`", before["tools_list_minimal"], m["tools_list_minimal"]))
        out.append(row("instructions (initialize)", before["instructions"], m["instructions"]))
        bmap = {c["call"]: c for c in before["calls"]}
        amap = {c["call"]: c for c in m["calls"]}
        labels = [c["call"] for c in before["calls"]] + [c["call"] for c in m["calls"] if c["call"] not in bmap]
        zero = {"text": 0, "structured": 0}
        for i, label in enumerate(labels, 1):
            b, a = bmap.get(label, zero), amap.get(label, zero)
            if label not in amap:
                label += " (not needed)"
            out.append(row(f"{i}. {label}", b["text"] + b["structured"], a["text"] + a["structured"],
                           b["text"], a["text"], b["structured"], a["structured"]))
        out.append(row("**the calls**", bt["calls"], t["calls"], bt["text"], t["text"], bt["structured"],
                       t["structured"]))
        out.append(row("**the session** (tools/list + instructions + calls)", bt["session"], t["session"]))
        out.append(row("the calls, to a client that passes the text", bt["as_text"], t["as_text"]))
        out.append(row("the calls, to a client that passes structuredContent in place of the text",
                       bt["as_structured"], t["as_structured"]))
        out.append(row("images (base64, apart)", bt["images"], t["images"]))
        out.append("")
        out.append(f"- tools/list ≤ 20,000 characters: {fmt(m['tools_list'])}, "
                   f"{'met' if m['tools_list'] <= 20000 else 'not met'}.")
        out.append(f"- `--tools minimal` ≤ 6,000 characters: {fmt(m['tools_list_minimal'])}, "
                   f"{'met' if m['tools_list_minimal'] <= 6000 else 'not met'}.")
        out.append(f"- the calls' total ≥ 40% below before: {change(bt['calls'], t['calls'])}, "
                   f"{'met' if t['calls'] <= 0.6 * bt['calls'] else 'not met'}; the whole session's: "
                   f"{change(bt['session'], t['session'])}, {'met' if t['session'] <= 0.6 * bt['session'] else 'not met'}.")
    out.append("")
    if m["failures"]:
        out.append(f"**{len(m['failures'])} assertion(s) failed:**")
        out += [f"- {f}" for f in m["failures"]]
    else:
        out.append(f"Every assertion held ({len(m['calls'])} calls).")
    other = [c["call"] for c in m["calls"] if c["other"]]
    if other:
        out.append("Calls with other content blocks (resource links; counted as text, as JSON): " + ", ".join(other))
    return "\n".join(out)


def chart_report(m):
    """The chart calls' table (--charts), apart from the fixed analysis."""
    out = ["", "Charts, after the analysis on the same session (not in the totals above). Characters; "
           "images as base64 characters and as the PNG's bytes.\n",
           "| | text | structured | text + structured | image (base64) | image (bytes) |",
           "|---|---:|---:|---:|---:|---:|"]
    for c in m["chart_calls"]:
        out.append(f"| {c['call']} | {fmt(c['text'])} | {fmt(c['structured'])} | "
                   f"{fmt(c['text'] + c['structured'])} | {fmt(c['images'])} | {fmt(c['image_bytes'])} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("KERNEL_MCP_BIN") or "bin/kernel-mcp")
    ap.add_argument("--python", default=os.environ.get("PYTHON_MCP_INTERPRETER") or shutil.which("python3"))
    ap.add_argument("--label", help="what the report calls the binary (default: its path and --version)")
    ap.add_argument("--json", help="write the measurement to this file")
    ap.add_argument("--dump", help="write every call and its whole result to this file (JSON lines)")
    ap.add_argument("--compare", help="a --json file of an earlier run: report before and after")
    ap.add_argument("--charts", action="store_true",
                    help="after the analysis, run a Plotly, an Altair and a matplotlib chart and report them apart")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    if not os.access(binary, os.X_OK):
        sys.exit(f"no kernel-mcp binary at {binary} (--bin or KERNEL_MCP_BIN)")
    if not a.python:
        sys.exit("no python3 for the kernel (--python or PYTHON_MCP_INTERPRETER)")
    # The interpreter itself, not a shim or a venv's link that names another.
    python = subprocess.run([a.python, "-c", "import sys; print(sys.executable)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    label = a.label or "{} ({})".format(a.bin, subprocess.run(
        [binary, "--version"], capture_output=True, text=True).stdout.strip())
    dump = open(a.dump, "w") if a.dump else None
    try:
        m = asyncio.run(measure(binary, python, dump, a.charts))
        m["binary"] = label
    finally:
        if dump:
            dump.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(m, f, indent=1)
            f.write("\n")
    before = None
    if a.compare:
        with open(a.compare) as f:
            before = json.load(f)
    print(report(m, before))
    if "chart_calls" in m:
        print(chart_report(m))
    sys.exit(1 if m["failures"] else 0)


if __name__ == "__main__":
    main()
