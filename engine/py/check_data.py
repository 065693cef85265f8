# check_data: what describe_data, plot_data and estimate_ols check before they run
# any code that the history keeps. Runs after prelude.py. args:
#   tool       the tool's name, for the messages
#   name       the variable that should hold a pandas DataFrame
#   columns    [{"role": "y", "column": "infl", "numeric": "number" | "plot" | "axis" | ""}]:
#              columns that must exist; "number" also wants a numeric dtype (bool
#              counts), "plot" one that pandas plots as values (bool does not), "axis"
#              anything that can mark an axis (text and dates, not bool)
#   numeric_default  true when the tool uses every numeric column (except the ones
#              named) if none is named: there must be one
#   group_by   a column whose distinct values become groups, at most max_groups
# Replies {"error": "..."} naming the closest names, or {"groups": [labels], "ngroups": n}
# ("groups" only with group_by).

import sys, difflib
pd = sys.modules.get("pandas")
tool = args["tool"]
name = args["name"]

def quoted(items, limit=30):
    items = list(items)
    s = ", ".join(repr(str(c)) for c in items[:limit])
    return s + (", ... (%d in all)" % len(items) if len(items) > limit else "")

def close(word, choices):
    # Case-insensitive twins first: "Infl" for "infl".
    same = [c for c in choices if c.lower() == word.lower() and c != word]
    return same + [c for c in difflib.get_close_matches(word, choices, n=3, cutoff=0.6) if c not in same]

def did_you_mean(word, choices):
    m = close(word, choices)
    if not m:
        return ""
    return "; did you mean %s?" % " or ".join(repr(c) for c in m)

def frames():
    if pd is None:
        return []
    return sorted(k for k, v in ns.items() if not k.startswith("_") and isinstance(v, pd.DataFrame))

def check():
    if name not in ns:
        dfs = frames()
        msg = "there is no variable %r in this session" % name
        msg += did_you_mean(name, dfs or [k for k in ns if not k.startswith("_")])
        if dfs:
            return msg + " (DataFrames: %s)" % quoted(dfs)
        return msg + "; no DataFrame is defined yet: load one with load_data or run_code"
    df = ns[name]
    if pd is None or not isinstance(df, pd.DataFrame):
        hint = ""
        if pd is not None and isinstance(df, pd.Series):
            hint = ": make it one with %s.to_frame()" % name
        return "%s is a %s, not a pandas DataFrame%s" % (name, typename(df), hint)
    cols = list(df.columns)
    strs = [c for c in cols if isinstance(c, str)]
    for use in args.get("columns", []):
        col, role = use["column"], use["role"]
        n = sum(1 for c in strs if c == col)
        if n == 0:
            other = [c for c in cols if str(c) == col]
            if other:
                return ("%s's column %r is the %s %r, not the string %r; %s names columns by strings: "
                        "rename them first, e.g. %s.columns = %s.columns.map(str)"
                        % (name, col, typename(other[0]), other[0], col, tool, name, name))
            msg = "%s has no column %r (%s)%s" % (name, col, role, did_you_mean(col, strs))
            return msg + ("" if msg.endswith("?") else ".") + " Its columns: " + quoted(cols)
        if n > 1:
            return "%s has %d columns named %r (%s); rename them so that each name is used once" % (name, n, col, role)
        dtype = df[col].dtype
        want = use.get("numeric", "")
        numeric = pd.api.types.is_numeric_dtype(dtype)
        boolean = pd.api.types.is_bool_dtype(dtype)
        if want == "number" and not numeric and not boolean:
            return ("column %r (%s) of %s holds %s values, not numbers; %s needs numeric columns: "
                    "convert it (pd.to_numeric) or encode it (pd.get_dummies) first" % (col, role, name, dtype, tool))
        if want == "plot" and (boolean or not numeric):
            how = "%s[%r].astype(int)" % (name, col) if boolean else "pd.to_numeric"
            return "column %r (%s) of %s holds %s values, not numbers; %s draws numeric columns: convert it first (%s)" % (col, role, name, dtype, tool, how)
        if want == "axis" and boolean:
            return "column %r (%s) of %s holds bool values, which %s cannot place on an axis: convert it first (%s[%r].astype(int))" % (col, role, name, tool, name, col)
    if args.get("numeric_default"):
        named = {u["column"] for u in args.get("columns", [])}
        if not any(pd.api.types.is_numeric_dtype(df[c].dtype) and not pd.api.types.is_bool_dtype(df[c].dtype)
                   for c in cols if c not in named):
            return "%s has no numeric column to plot (columns: %s); give y, or convert one first (pd.to_numeric)" % (name, quoted(cols))
    if args.get("group_by"):
        by = args["group_by"]
        values = df[by].dropna().unique()
        limit = args["max_groups"]
        if len(values) > limit:
            return ("x %r has %d distinct values; %s draws at most %d groups: choose a column with fewer values, "
                    "or bin it first (e.g. with pd.cut)" % (by, len(values), tool, limit))
        try:
            values = sorted(values)
        except TypeError:
            values = sorted(values, key=str)
        return {"groups": [str(v) for v in values], "ngroups": len(values)}
    return {}

got = check()
reply({"error": got} if isinstance(got, str) else got)
