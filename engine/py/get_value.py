# get_value: the value of args["expression"], evaluated in the user's namespace, as
# JSON with its type. Runs after prelude.py. An error in evaluating the expression is
# replied as eval_error; one in converting the value is raised. At most
# args["max_cells"] elements are converted in all. DataFrames are converted in
# args["orient"]: "split" ({columns, index, data}, labels keeping their type) or
# "records" ({columns, index, records}). With args["head"], only the first n rows
# (of a DataFrame) or items (of a Series, list, array or dict) are converted, and the
# reply says how many there were.

import math, sys, datetime, decimal, fractions
budget = [args["max_cells"]]
orient = args.get("orient") or "split"

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
            index = [conv(i, depth + 1) for i in x.index.tolist()]
            if orient == "split":
                return {
                    "columns": [conv(c, depth + 1) for c in x.columns.tolist()],
                    "index": index,
                    "data": [[conv(v, depth + 1) for v in row] for row in x.itertuples(index=False, name=None)],
                }
            cols = [str(c) for c in x.columns]
            if len(set(cols)) != len(cols):
                raise ValueError("the DataFrame's column names repeat (as strings): %s; rename them, or use orient split" % sorted({c for c in cols if cols.count(c) > 1}))
            return {
                "columns": cols,
                "index": index,
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
    # Containers are copied (one C call, atomic under the GIL) once counted: read
    # on a subshell while the run appends to them, the copy is what is converted.
    if isinstance(x, dict):
        n = len(x)
        spend(n, "a dict")
        items = list(x.items())
        spend(len(items) - n, "a dict")
        return keyed(((k, conv(v, depth + 1)) for k, v in items), "dict")
    if isinstance(x, (list, tuple, set, frozenset, range)):
        what, n = typename(x), len(x)
        spend(n, "a " + what)
        unordered = isinstance(x, (set, frozenset))
        x = list(x)
        spend(len(x) - n, "a " + what)
        if unordered:
            try:
                x = sorted(x)
            except TypeError:
                pass
        return [conv(v, depth + 1) for v in x]
    raise TypeError("a value of type %s cannot be converted to JSON (get_value handles numbers, strings, lists, dicts, datetimes, numpy arrays and scalars, pandas DataFrames and Series)" % typename(x))

def preview(x, n):
    """The first n rows or items of x, how many there are, and what they are."""
    pd = sys.modules.get("pandas")
    np = sys.modules.get("numpy")
    if pd is not None and isinstance(x, pd.DataFrame):
        return x.head(n), len(x), "rows"
    if pd is not None and isinstance(x, pd.Series):
        return x.iloc[:n], len(x), "values"
    if pd is not None and isinstance(x, pd.Index):
        return x[:n], len(x), "values"
    if np is not None and isinstance(x, np.ndarray) and x.ndim > 0:
        return x[:n], len(x), "rows" if x.ndim > 1 else "items"
    if isinstance(x, dict):
        return dict(list(x.items())[:n]), len(x), "items"
    if isinstance(x, (set, frozenset)):
        try:
            items = sorted(x)
        except TypeError:
            items = list(x)
        return items[:n], len(x), "items"
    if isinstance(x, (list, tuple, range)):
        return x[:n], len(x), "items"
    return x, None, None

def shape(x):
    """A few words on the value's size, e.g. "203 rows x 4 columns"."""
    pd = sys.modules.get("pandas")
    np = sys.modules.get("numpy")
    if pd is not None and isinstance(x, pd.DataFrame):
        return "%d rows x %d columns" % x.shape
    if pd is not None and isinstance(x, (pd.Series, pd.Index)):
        return "%d values" % len(x)
    if np is not None and isinstance(x, np.ndarray):
        return "shape %s" % "x".join(str(n) for n in x.shape) if x.ndim else ""
    if isinstance(x, (dict, set, frozenset, list, tuple, range)):
        return "%d items" % len(x)
    return ""

try:
    value = eval(compile(args["expression"], "<get_value>", "eval"), ns)
except BaseException as e:
    if isinstance(e, (KeyboardInterrupt, SystemExit)):
        raise
    evalue = str(e)
    if isinstance(e, NameError) and getattr(e, "name", None):
        import difflib, builtins
        near = difflib.get_close_matches(e.name, [k for k in ns if not k.startswith("_")] + dir(builtins), n=3)
        if near:
            evalue += "; did you mean %s?" % " or ".join(repr(k) for k in near)
    reply({"eval_error": {"ename": type(e).__name__, "evalue": evalue}})
else:
    out = {"type": typename(value), "shape": shape(value)}
    if args.get("head") is not None:
        part, total, unit = preview(value, args["head"])
        if total is not None and total > args["head"]:
            value = part
            out.update(total=total, shown=min(args["head"], total), unit=unit)
    out["value"] = conv(value)
    reply(out)
