# %% [markdown]
# # Rich display
# The display system: MIME bundles, custom _repr_*_ methods, display ids
# and their updates, and what the last expression shows.

# %%
from IPython.display import HTML, JSON, Markdown, Latex, SVG, display, update_display
display(HTML("<b>bold</b> text"))
display(Markdown("## A heading"))
display(Latex(r"$\alpha + \beta$"))

# %%
JSON({"a": [1, 2, 3], "b": {"c": None}})

# %%
class Ball:
    """An object with several representations; the frontend picks one."""

    def __init__(self, colour):
        self.colour = colour

    def _repr_html_(self):
        return f"<div style='color:{self.colour}'>&#9679;</div>"

    def _repr_markdown_(self):
        return f"**{self.colour} ball**"

    def _repr_svg_(self):
        return f"<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><circle cx='5' cy='5' r='4' fill='{self.colour}'/></svg>"

    def __repr__(self):
        return f"Ball({self.colour!r})"

Ball("red")

# %%
display(Ball("blue"), Ball("green"))
print("after two balls")

# %%
class Pretty:
    def _repr_pretty_(self, p, cycle):
        p.text("Pretty<" + ("..." if cycle else "ok") + ">")

[Pretty(), Pretty()]

# %%
class OnlyJSON:
    def _repr_json_(self):
        return {"kind": "only json"}

display(OnlyJSON())

# %%
class Broken:
    def _repr_html_(self):
        raise ValueError("no html today")

    def __repr__(self):
        return "Broken()"

Broken()

# %%
handle = display(Markdown("step 0"), display_id=True)
for step in range(1, 4):
    handle.update(Markdown(f"step {step}"))
print("updated in place")

# %%
counter = display("count: none yet", display_id=True)
for i in range(3):
    print(f"line {i}")
    counter.update(f"count: {i}")

# %%
display("first", display_id="named")
display("second", display_id="other")
update_display("first, updated", display_id="named")

# %%
display(SVG("<svg xmlns='http://www.w3.org/2000/svg' width='4' height='4'><rect width='4' height='4'/></svg>"))
display({"text/plain": "raw plain", "text/html": "<i>raw html</i>"}, raw=True)

# %%
x = 6 * 7
x

# %%
x;

# %%
_ + 1 if isinstance(_, int) else "no previous result"

# %%
None

# %%
print("a", end="")
print("b")
"string result"
