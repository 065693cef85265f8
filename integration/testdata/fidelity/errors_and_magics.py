# %% [markdown]
# # Errors and magics
# Exceptions in each %xmode, magics that fail, tracebacks shown by cells
# that still succeed, and timing magics (whose numbers are normalised).

# %%
def inner(v):
    return 10 / v

def outer(v):
    return inner(v) + 1

outer(0)

# %%
%xmode Plain
outer(0)

# %%
%xmode Minimal
outer(0)

# %%
%xmode Context
print("back to the default mode")

# %%
undefined_name + 1

# %%
def broken(:
    pass

# %%
try:
    outer(0)
except ZeroDivisionError:
    get_ipython().showtraceback()
print("handled and went on")

# %%
with open("bad_script.py", "w") as f:
    f.write("print('script starts')\nraise RuntimeError('script failed')\n")
%run bad_script.py
after_run = 41
after_run + 1

# %%
%run no_such_script.py

# %%
%load_ext no_such_extension

# %%
%cd /no/such/directory

# %%
%no_such_magic

# %%
%%no_such_cell_magic
body

# %%
import sys
print("to stderr", file=sys.stderr)
raise KeyError("missing")

# %%
raise SystemExit("exit from a cell")

# %%
%time total = sum(range(1000))

# %%
%timeit -n 3 -r 2 sum(range(100))

# %%
%xmode Minimal
try:
    1/0
except Exception:
    get_ipython().showtraceback()
raise ValueError("second traceback")

# %%
%xmode Context
assert after_run == 41, "state must survive errors"
print("state kept")
