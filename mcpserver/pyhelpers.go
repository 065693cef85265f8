package mcpserver

// Python run silently in a session's kernel by get_value, list_variables
// and estimate_ols. Each runs as exec(compile(src), {...}) in a dict of its
// own, so it defines nothing in the user's namespace, and is not stored in
// IPython's history; it answers with one display_data of resultMIME.

const resultMIME = "application/vnd.kernel-mcp+json"

// pyPrelude is prepended to every helper: args, the user's namespace,
// typename(x), and reply(obj), which publishes obj as JSON, refusing more
// than the limit.
const pyPrelude = `
import json as _json
args = _json.loads(_km_args)
ns = _km_ns

def typename(x):
    t = type(x)
    m = t.__module__
    return t.__qualname__ if m == "builtins" else m + "." + t.__qualname__
def reply(obj):
    from IPython.display import publish_display_data
    s = _json.dumps(obj, allow_nan=False)
    if len(s) > args.get("limit", 1 << 60):
        raise ValueError("the value is %d bytes as JSON, more than the %d get_value returns; select a part of it (df.head(100), arr[:100])" % (len(s), args["limit"]))
    publish_display_data({"` + resultMIME + `": _json.loads(s)})
`

// pyGetValue converts the value of args["expression"] to JSON. An error in
// evaluating the expression is replied as eval_error; one in converting
// the value is raised.
const pyGetValue = pyPrelude + `
import math, sys, datetime, decimal, fractions
budget = [args["max_cells"]]

def spend(n, what):
    budget[0] -= n
    if budget[0] < 0:
        raise ValueError("the value has more than %d elements in all (at %s), more than get_value converts; select a part of it (df.head(100), a[:100])" % (args["max_cells"], what))

def keyed(pairs, what):
    out = {}
    for k, v in pairs:
        if not isinstance(k, str):
            if k is None or isinstance(k, (bool, int, float)):
                k = _json.dumps(k) if (k is None or isinstance(k, bool)) else str(k)
            else:
                raise TypeError("a %s key of type %s cannot be a JSON key" % (what, typename(k)))
        if k in out:
            raise ValueError("the %s has two keys that are both %r as JSON; rename one" % (what, k))
        out[k] = v
    return out

def conv(x, depth=0):
    if depth > 100:
        raise ValueError("the value is nested more than 100 levels deep")
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    np = sys.modules.get("numpy")
    pd = sys.modules.get("pandas")
    if pd is not None:
        if x is pd.NaT or (hasattr(pd, "NA") and x is pd.NA):
            return None
        if isinstance(x, pd.Timestamp):
            return x.isoformat()
        if isinstance(x, pd.Timedelta):
            return x.total_seconds()
        if isinstance(x, (pd.Period, pd.Interval)):
            return str(x)
        if isinstance(x, pd.DataFrame):
            spend(x.size + len(x.index), "a DataFrame")
            cols = [str(c) for c in x.columns]
            if len(set(cols)) != len(cols):
                raise ValueError("the DataFrame's column names repeat (as strings): %s; rename them" % sorted({c for c in cols if cols.count(c) > 1}))
            return {
                "columns": cols,
                "index": [conv(i, depth + 1) for i in x.index.tolist()],
                "records": [dict(zip(cols, (conv(v, depth + 1) for v in row))) for row in x.itertuples(index=False, name=None)],
            }
        if isinstance(x, pd.Series):
            spend(2 * x.size, "a Series")
            return {
                "name": conv(x.name, depth + 1),
                "index": [conv(i, depth + 1) for i in x.index.tolist()],
                "values": [conv(v, depth + 1) for v in x.tolist()],
            }
        if isinstance(x, (pd.Index, pd.api.extensions.ExtensionArray)):
            spend(len(x), "an index or array")
            return [conv(v, depth + 1) for v in x.tolist()]
    if np is not None:
        if isinstance(x, np.dtype):
            return str(x)
        if isinstance(x, np.ndarray):
            # Checked before tolist() builds it; the list's conversion counts it.
            if x.size > budget[0]:
                spend(x.size, "an array")
            if x.dtype.kind == "M":
                return conv(x.astype("datetime64[us]").tolist(), depth + 1)
            if x.dtype.kind == "m":
                return conv((x / np.timedelta64(1, "s")).tolist(), depth + 1)
            return conv(x.tolist(), depth + 1)
        if isinstance(x, np.generic):
            if isinstance(x, np.datetime64):
                return None if np.isnat(x) else str(x)
            if isinstance(x, np.timedelta64):
                return None if np.isnat(x) else float(x / np.timedelta64(1, "s"))
            if isinstance(x, np.floating):
                f = float(x)
                return f if math.isfinite(f) else None
            if isinstance(x, np.complexfloating):
                raise TypeError("a value of type %s (a complex number) cannot be converted to JSON; take .real and .imag" % typename(x))
            return conv(x.item(), depth + 1)
    if pd is not None and hasattr(pd.api.types, "is_extension_array_dtype") and pd.api.types.is_extension_array_dtype(x):
        return str(x)
    if isinstance(x, (datetime.datetime, datetime.date, datetime.time)):
        return x.isoformat()
    if isinstance(x, datetime.timedelta):
        return x.total_seconds()
    if isinstance(x, (decimal.Decimal, fractions.Fraction)):
        f = float(x)
        return f if math.isfinite(f) else None
    if isinstance(x, (bytes, bytearray)):
        try:
            return bytes(x).decode("utf-8")
        except UnicodeDecodeError:
            raise TypeError("bytes that are not UTF-8 text cannot be converted to JSON; decode them, or use base64")
    if isinstance(x, dict):
        spend(len(x), "a dict")
        return keyed(((k, conv(v, depth + 1)) for k, v in x.items()), "dict")
    if isinstance(x, (list, tuple, set, frozenset, range)):
        spend(len(x), "a " + typename(x))
        if isinstance(x, (set, frozenset)):
            try:
                x = sorted(x)
            except TypeError:
                x = list(x)
        return [conv(v, depth + 1) for v in x]
    raise TypeError("a value of type %s cannot be converted to JSON (get_value handles numbers, strings, lists, dicts, datetimes, numpy arrays and scalars, pandas DataFrames and Series)" % typename(x))

try:
    value = eval(compile(args["expression"], "<get_value>", "eval"), ns)
except BaseException as e:
    if isinstance(e, (KeyboardInterrupt, SystemExit)):
        raise
    reply({"eval_error": {"ename": type(e).__name__, "evalue": str(e)}})
else:
    reply({"type": typename(value), "value": conv(value)})
`

// pyListVariables describes the user's names without ever repr-ing a
// whole object: frames and arrays by their shape, builtin containers by
// their length and a bounded repr of their first items, anything else by
// its type.
const pyListVariables = pyPrelude + `
import sys, types, reprlib
hidden = set()
try:
    hidden = set(get_ipython().user_ns_hidden)
except Exception:
    pass
np = sys.modules.get("numpy")
pd = sys.modules.get("pandas")
SCALARS = (type(None), bool, int, float, complex)
CONTAINERS = (str, list, tuple, dict, set, frozenset, range)

class Short(reprlib.Repr):
    # Only builtin types are shown; anything else, even inside a list,
    # is named by its type, never repr'd.
    def repr1(self, x, level):
        t = type(x)
        if t in SCALARS or t in CONTAINERS or t is bytes:
            return super().repr1(x, level)
        if np is not None and isinstance(x, np.generic):
            return repr(x)
        return "<%s>" % typename(x)
    def repr_bytes(self, x, level):
        return repr(x[:40]) + ("..." if len(x) > 40 else "")

r = Short()
r.maxstring = 60
r.maxother = 60
r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = 6
r.maxlevel = 2

def describe(name, x):
    d = {"name": name, "type": typename(x)}
    t = type(x)
    if pd is not None and isinstance(x, pd.DataFrame):
        d["shape"] = list(x.shape)
        cols = [str(c) for c in x.columns[:8]]
        d["repr"] = "DataFrame %d rows x %d columns: %s%s" % (x.shape[0], x.shape[1], ", ".join(cols), ", ..." if x.shape[1] > 8 else "")
    elif pd is not None and isinstance(x, (pd.Series, pd.Index)):
        d["shape"] = list(x.shape)
        d["dtype"] = str(x.dtype)
        d["repr"] = "%s of %d %s values" % (type(x).__name__, len(x), x.dtype)
    elif np is not None and isinstance(x, np.ndarray):
        d["shape"] = list(x.shape)
        d["dtype"] = str(x.dtype)
        d["repr"] = "array %s of %s" % ("x".join(str(n) for n in x.shape) or "()", x.dtype)
    elif t in SCALARS or t in CONTAINERS or t in (bytes, bytearray) or (np is not None and isinstance(x, np.generic)):
        if t in CONTAINERS or t in (bytes, bytearray):
            d["length"] = len(x)
        d["repr"] = r.repr(bytes(x) if t is bytearray else x)
    elif isinstance(x, (types.FunctionType, types.BuiltinFunctionType, type)):
        d["repr"] = "<%s %s>" % ("class" if isinstance(x, type) else "function", getattr(x, "__qualname__", name))
    else:
        d["repr"] = "<%s object>" % typename(x)
    return d

out = []
for name, x in list(ns.items()):
    if name.startswith("_") or name in hidden or isinstance(x, types.ModuleType):
        continue
    try:
        out.append(describe(name, x))
    except Exception as e:
        out.append({"name": name, "type": typename(x), "repr": "<could not describe: %s>" % type(e).__name__})
out.sort(key=lambda d: d["name"])
reply({"variables": out[:args["max"]], "total": len(out)})
`

// pyOLSStats reads the statistics of the OLS result estimate_ols fitted.
const pyOLSStats = pyPrelude + `
import math
from statsmodels.stats.stattools import durbin_watson, jarque_bera
from statsmodels.stats.diagnostic import acorr_breusch_godfrey
m = ns[args["model"]]
def f(v):
    v = float(v)
    return v if math.isfinite(v) else None
names = [str(n) for n in m.params.index]
coefs = [{"name": n, "coef": f(m.params[n]), "std_err": f(m.bse[n]), "t": f(m.tvalues[n]), "p": f(m.pvalues[n])} for n in names]
jb, jbp, skew, kurt = jarque_bera(m.resid)
lags = args["lags"]
bg = acorr_breusch_godfrey(m, nlags=lags)
reply({
    "nobs": int(m.nobs),
    "coefficients": coefs,
    "r2": f(m.rsquared),
    "adj_r2": f(m.rsquared_adj),
    "durbin_watson": f(durbin_watson(m.resid)),
    "jarque_bera": {"stat": f(jb), "p": f(jbp)},
    "breusch_godfrey": {"stat": f(bg[0]), "p": f(bg[1]), "lags": lags},
    "cov_type": str(m.cov_type),
    "summary": str(m.summary()),
})
`
