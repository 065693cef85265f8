# list_variables: the user's names with type, shape or length, dtype and a short repr,
# without ever repr-ing a whole object: frames and arrays by their shape, builtin
# containers by their length and a bounded repr of their first items, anything else
# by its type; a DataFrame's columns are named up to args["max_columns"]. Runs after
# prelude.py; replies {variables: [...args["max"]], total}.

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
        n = args.get("max_columns", 50)
        cols = [str(c) for c in x.columns[:n]]
        more = ", ... and %d more" % (x.shape[1] - n) if x.shape[1] > n else ""
        d["repr"] = "DataFrame %d rows x %d columns: %s%s" % (x.shape[0], x.shape[1], ", ".join(cols), more)
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
