"""Executes py:percent scripts with nbclient, as `jupyter nbconvert --execute` would.

Usage: python3 nbclient_run.py OUTDIR SCRIPT...

Each SCRIPT is split into cells at lines starting with "# %%" ("# %% [markdown]"
starts a markdown cell, whose lines lose their leading "# "), run with nbclient in
a working directory of its own (OUTDIR/<name>.work), and written to
OUTDIR/<name>.ipynb. Each code cell's execute_reply status goes into its
metadata as "reply_status": a notebook records outputs, not whether the reply
was ok, and the fidelity test compares that too; so does its execution_count,
as "reply_execution_count". The same cells are what the
Go test sends to kernel-mcp, so both sides run exactly the same code.
"""

import os
import sys

import nbformat
from nbclient import NotebookClient


def split_percent(text):
    """Returns the notebook cells of a py:percent script."""
    cells = []
    kind, lines = None, []

    def close():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in body.split("\n"))
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cells.append(nbformat.v4.new_code_cell(body))

    for line in text.split("\n"):
        if line.startswith("# %%"):
            close()
            kind = "markdown" if "[markdown]" in line else "code"
            lines = []
        elif kind is not None:
            lines.append(line)
    close()
    return cells


def main():
    outdir, scripts = sys.argv[1], sys.argv[2:]
    for path in scripts:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            nb = nbformat.v4.new_notebook(cells=split_percent(f.read()))
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        work = os.path.join(outdir, name + ".work")
        os.makedirs(work, exist_ok=True)

        def record(cell, cell_index, execute_reply):
            cell.metadata["reply_status"] = execute_reply["content"]["status"]
            # nbclient numbers cells itself; the kernel's own count is
            # what kernel-mcp reports.
            cell.metadata["reply_execution_count"] = execute_reply["content"].get("execution_count")

        client = NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": work}},
            on_cell_executed=record,
        )
        client.execute()
        nbformat.validate(nb)
        nbformat.write(nb, os.path.join(outdir, name + ".ipynb"))


if __name__ == "__main__":
    main()
