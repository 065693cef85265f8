package mcpserver

// Python run silently in a session's kernel by get_value, list_variables
// and estimate_ols. Each runs as exec(compile(src), {...}) in a dict of its
// own, so it defines nothing in the user's namespace, and is not stored in
// IPython's history; it answers with one display_data of resultMIME.

const resultMIME = "application/vnd.kernel-mcp+json"

// pyPrelude is prepended to every helper: args, the user's namespace, and
// reply(obj), which publishes obj as JSON, refusing more than the limit.
const pyPrelude = `
import json as _json
args = _json.loads(_km_args)
ns = _km_ns
def reply(obj):
    from IPython.display import publish_display_data
    s = _json.dumps(obj, allow_nan=False)
    if len(s) > args.get("limit", 1 << 60):
        raise ValueError("the value is %d bytes as JSON, more than the %d get_value returns; select a part of it (df.head(100), arr[:100])" % (len(s), args["limit"]))
    publish_display_data({"` + resultMIME + `": _json.loads(s)})
`

// pyGetValue converts the value of args["expression"] to JSON.
const pyGetValue = pyPrelude + `
import math, sys, datetime, decimal, fractions
MAX_CELLS = args["max_cells"]

def typename(x):
    t = type(x)
    m = t.__module__
    return t.__qualname__ if m == "builtins" else m + "." + t.__qualname__

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
        if isinstance(x, pd.DataFrame):
            if x.size > MAX_CELLS:
                raise ValueError("the DataFrame has %d cells, more than the %d get_value converts; select a part of it (df.head(100), df[cols])" % (x.size, MAX_CELLS))
            cols = [str(c) for c in x.columns]
            return {
                "columns": cols,
                "index": [conv(i, depth + 1) for i in x.index.tolist()],
                "records": [{c: conv(v, depth + 1) for c, v in zip(cols, row)} for row in x.itertuples(index=False, name=None)],
            }
        if isinstance(x, pd.Series):
            if x.size > MAX_CELLS:
                raise ValueError("the Series has %d values, more than the %d get_value converts; select a part of it (s.head(100))" % (x.size, MAX_CELLS))
            return {
                "name": conv(x.name, depth + 1),
                "index": [conv(i, depth + 1) for i in x.index.tolist()],
                "values": [conv(v, depth + 1) for v in x.tolist()],
            }
        if isinstance(x, pd.Index):
            return [conv(v, depth + 1) for v in x.tolist()]
    if np is not None:
        if isinstance(x, np.ndarray):
            if x.size > MAX_CELLS:
                raise ValueError("the array has %d elements, more than the %d get_value converts; select a part of it (a[:100])" % (x.size, MAX_CELLS))
            if x.dtype.kind == "M":
                return conv(x.astype("datetime64[us]").tolist(), depth + 1)
            return conv(x.tolist(), depth + 1)
        if isinstance(x, np.generic):
            if isinstance(x, np.datetime64):
                return None if np.isnat(x) else str(x)
            return conv(x.item(), depth + 1)
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
        out = {}
        for k, v in x.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise TypeError("a dict key of type %s cannot be a JSON key" % typename(k))
            key = k if isinstance(k, str) else _json.dumps(k) if (k is None or isinstance(k, bool)) else str(k)
            out[key] = conv(v, depth + 1)
        return out
    if isinstance(x, (list, tuple, set, frozenset, range)):
        if isinstance(x, (set, frozenset)):
            try:
                x = sorted(x)
            except TypeError:
                x = list(x)
        if len(x) > MAX_CELLS:
            raise ValueError("the %s has %d items, more than the %d get_value converts" % (typename(x), len(x), MAX_CELLS))
        return [conv(v, depth + 1) for v in x]
    raise TypeError("a value of type %s cannot be converted to JSON (get_value handles numbers, strings, lists, dicts, datetimes, numpy arrays and scalars, pandas DataFrames and Series)" % typename(x))

value = eval(compile(args["expression"], "<get_value>", "eval"), ns)
reply({"type": typename(value), "value": conv(value)})
`

// pyListVariables describes the user's names without ever repr-ing a
// whole object: containers and frames by their size, other objects by a
// repr only for types whose repr is known to be short and cheap.
const pyListVariables = pyPrelude + `
import sys, types, reprlib
hidden = set()
try:
    hidden = set(get_ipython().user_ns_hidden)
except Exception:
    pass
np = sys.modules.get("numpy")
pd = sys.modules.get("pandas")
r = reprlib.Repr()
r.maxstring = 60
r.maxother = 60
r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = 6
r.maxlevel = 2
CHEAP = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, range)

def typename(x):
    t = type(x)
    m = t.__module__
    return t.__qualname__ if m == "builtins" else m + "." + t.__qualname__

def describe(name, x):
    d = {"name": name, "type": typename(x)}
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
    elif isinstance(x, CHEAP) or (np is not None and isinstance(x, np.generic)):
        if isinstance(x, (str, bytes, list, tuple, dict, set, frozenset, range)):
            d["length"] = len(x)
        d["repr"] = r.repr(x)
    elif isinstance(x, (types.FunctionType, types.BuiltinFunctionType, type)):
        d["repr"] = "<%s %s>" % ("class" if isinstance(x, type) else "function", getattr(x, "__qualname__", name))
    else:
        try:
            d["length"] = len(x)
        except Exception:
            pass
        d["repr"] = "<%s object>" % typename(x)
    return d

out = []
for name, x in list(ns.items()):
    if name.startswith("_") or name in hidden or isinstance(x, types.ModuleType):
        continue
    if getattr(type(x), "__module__", "") == "IPython.core.autocall":
        continue
    try:
        out.append(describe(name, x))
    except Exception as e:
        out.append({"name": name, "type": typename(x), "repr": "<could not describe: %s>" % type(e).__name__})
out.sort(key=lambda d: d["name"])
total = len(out)
reply({"variables": out[:args["max"]], "total": total})
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
