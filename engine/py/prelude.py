# The start of every helper that kernel-mcp runs silently in a kernel (get_value,
# list_variables, estimate_ols's statistics; see mcpserver/pyhelpers.go). The server
# runs prelude + helper as exec(compile(src), {"_km_args": JSON, "_km_ns": globals()}),
# so nothing is defined in the user's namespace. It defines:
#   args         the tool's arguments, decoded from _km_args
#   ns           the user's namespace
#   typename(x)  "int", "pandas.core.frame.DataFrame": builtins without their module
#   reply(obj)   publishes obj as JSON in one display_data of the MIME type the server
#                reads (resultMIME in pyhelpers.go), refusing more than args["limit"] bytes;
#                with _km_reply in the dict (a read on a subshell), it leaves the reply
#                there for the user_expression that ran the helper to return

import json as _json
args = _json.loads(_km_args)
ns = _km_ns

def typename(x):
    t = type(x)
    m = t.__module__
    return t.__qualname__ if m == "builtins" else m + "." + t.__qualname__
class _Reply:
    # A reply read through user_expressions (a read on a subshell during a run):
    # IPython formats it as this bundle, and nothing is published.
    def __init__(self, obj):
        self.obj = obj
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/vnd.kernel-mcp+json": self.obj}
    def __repr__(self):
        return "<kernel-mcp reply>"

def reply(obj):
    s = _json.dumps(obj, allow_nan=False)
    if len(s) > args.get("limit", 1 << 60):
        raise ValueError("the value is %d bytes as JSON, more than the %d get_value returns; select a part of it (df.head(100), arr[:100])" % (len(s), args["limit"]))
    if "_km_reply" in globals():
        globals()["_km_reply"] = _Reply(_json.loads(s))
        return
    from IPython.display import publish_display_data
    publish_display_data({"application/vnd.kernel-mcp+json": _json.loads(s)})
