# session_status's probe: runs silently in the user's namespace (a function it
# deletes again) and prints one JSON line: interpreter, Python version, working
# directory, resident memory in bytes, and the versions of key packages. It imports
# nothing heavy: package versions come from metadata.
def _kmcp_status():
    import sys, os, json
    from importlib import metadata
    pk = {}
    for n in ("numpy", "pandas", "matplotlib", "scipy", "scikit-learn", "statsmodels", "polars", "ipykernel", "IPython"):
        try:
            pk[n] = metadata.version(n)
        except Exception:
            pass
    rss = 0
    try:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except Exception:
        try:
            import resource
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        except Exception:
            pass
    print(json.dumps({"executable": sys.executable, "version": sys.version.split()[0], "cwd": os.getcwd(), "rss": rss, "packages": pk}))
try:
    _kmcp_status()
finally:
    del _kmcp_status
