# The start of every helper that kernel-mcp runs silently in a kernel (get_value,
# list_variables, estimate_ols's statistics; see mcpserver/pyhelpers.go). The server
# runs prelude + helper as exec(compile(src), {"_km_args": JSON, "_km_ns": globals()}),
# so nothing is defined in the user's namespace. It defines:
#   args         the tool's arguments, decoded from _km_args
#   ns           the user's namespace
#   typename(x)  "int", "pandas.core.frame.DataFrame": builtins without their module
#   reply(obj)   publishes obj as JSON in one display_data of the MIME type the server
#                reads (resultMIME in pyhelpers.go), refusing more than args["limit"] bytes

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
    publish_display_data({"application/vnd.kernel-mcp+json": _json.loads(s)})
