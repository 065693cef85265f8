# %% [markdown]
# # Streams, clear_output and capturing
# Interleaved stdout and stderr, carriage-return progress, clear_output with
# and without wait, %%capture and capture_output, and shell escapes.

# %%
import sys
print("out 1", flush=True)
print("err 1", file=sys.stderr, flush=True)
print("out 2", flush=True)
sys.stdout.write("no newline")
sys.stdout.flush()
print(" ... then one")

# %%
for i in range(5):
    print(f"\rprogress {i * 25}%", end="", flush=True)
print()

# %%
from IPython.display import clear_output, display
for i in range(4):
    clear_output(wait=True)
    print(f"frame {i}")

# %%
print("this disappears")
clear_output()
print("this stays")

# %%
for i in range(3):
    clear_output(wait=True)
    display(f"display frame {i}")

# %%
%%capture captured
print("captured stdout")
print("captured stderr", file=sys.stderr)
display("captured display")
"captured result"

# %%
print(repr(captured.stdout))
print(repr(captured.stderr))
len(captured.outputs)

# %%
captured.show()

# %%
from IPython.utils.capture import capture_output
with capture_output() as c:
    print("inside")
print("outside; captured:", repr(c.stdout))

# %%
%%capture --no-stdout
print("shown despite capture")
print("hidden stderr", file=sys.stderr)

# %%
!echo from a shell escape

# %%
files = !printf 'a\nb\n'
files

# %%
%%writefile note.txt
written by a cell magic

# %%
print(open("note.txt").read())

# %%
%%bash
echo bash stdout

# %%
%%bash
echo bash stderr >&2

# %%
print("é ñ 中文 🙂")
