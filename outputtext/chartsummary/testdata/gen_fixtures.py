"""Regenerates the chart fixtures in this directory.

python3 -m venv /tmp/v && /tmp/v/bin/pip install plotly altair pandas
/tmp/v/bin/python gen_fixtures.py
"""
import json

import altair as alt
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots


def plotly_bundle(name, fig):
    # The kernel's Plotly MIME bundle is the figure as plotly.io serializes it
    # (numpy arrays become typed arrays with base64 "bdata" since plotly 6).
    with open(name + ".plotly.json", "w") as f:
        f.write(pio.to_json(fig, validate=False, pretty=True))
        f.write("\n")


def vegalite_bundle(name, chart):
    with open(name + ".vl.json", "w") as f:
        json.dump(chart.to_dict(), f, indent=1, sort_keys=True)
        f.write("\n")


iris = px.data.iris()
plotly_bundle("px_scatter_iris", px.scatter(iris, x="sepal_width", y="sepal_length", color="species", title="Iris"))

sub = make_subplots(rows=1, cols=2, subplot_titles=("Counts", "Trend"))
sub.add_trace(go.Bar(x=["a", "b", "c", "d"], y=[3, 1, 4, 1], name="counts"), row=1, col=1)
sub.add_trace(go.Scatter(x=[1, 2, 3, 4, 5], y=[2.5, 3.5, 1.0, 4.0, 6.5], name="trend"), row=1, col=2)
sub.update_layout(title_text="Subplots")
sub.update_xaxes(title_text="letter", row=1, col=1)
sub.update_yaxes(title_text="count", row=1, col=1)
plotly_bundle("make_subplots_bar_scatter", sub)

stocks = pd.DataFrame({
    "day": list(range(1, 11)) * 2,
    "price": [10, 11, 12, 11, 13, 14, 15, 14, 16, 17, 20, 19, 18, 18, 17, 16, 17, 15, 14, 13],
    "ticker": ["AAA"] * 10 + ["BBB"] * 10,
})
plotly_bundle("px_line", px.line(stocks, x="day", y="price", color="ticker", title="Prices"))

plotly_bundle("px_histogram", px.histogram(iris, x="petal_length", nbins=20, title="Petal length"))

plotly_bundle("px_facet_col", px.scatter(iris, x="petal_width", y="petal_length", facet_col="species"))

alt.data_transformers.disable_max_rows()
small = pd.DataFrame({
    "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "y": [2.0, 4.5, 3.0, 8.0, 7.5, 9.0],
    "group": ["a", "a", "b", "b", "c", "c"],
})
vegalite_bundle("alt_point_color", alt.Chart(small).mark_point().encode(x="x", y="y", color="group").properties(title="Points"))

base = alt.Chart(stocks).encode(x=alt.X("day", title="Day"), y=alt.Y("price", title="Price"), color="ticker")
vegalite_bundle("alt_layer_line_points", (base.mark_line() + base.mark_point()).properties(title="Layered"))

vegalite_bundle("alt_facet_column", alt.Chart(iris).mark_point().encode(x="sepal_width", y="sepal_length").facet(column="species"))

fruit = pd.DataFrame({"fruit": ["apple", "banana", "cherry", "date"], "count": [5, 3, 8, 2]})
vegalite_bundle("alt_bar", alt.Chart(fruit).mark_bar().encode(x="fruit", y="count"))

left = alt.Chart(small).mark_point().encode(x="x", y="y")
right = alt.Chart(fruit).mark_bar().encode(x="fruit:N", y="count:Q")
vegalite_bundle("alt_hconcat", alt.hconcat(left, right))

days = pd.DataFrame({
    "date": pd.date_range("2024-01-01", periods=6, freq="D"),
    "visits": [120, 98, 143, 160, 151, 170],
})
plotly_bundle("px_line_dates", px.line(days, x="date", y="visits", title="Visits"))

plotly_bundle("px_bar_horizontal", px.bar(fruit, x="count", y="fruit", orientation="h"))

heat = pd.DataFrame([[1, 2, 3], [4, 5, 6]], index=["r1", "r2"], columns=["c1", "c2", "c3"])
plotly_bundle("px_imshow", px.imshow(heat, title="Heat"))

vegalite_bundle("alt_pie", alt.Chart(fruit).mark_arc().encode(theta="count:Q", color="fruit:N"))

vegalite_bundle("alt_repeat", alt.Chart(iris).mark_point().encode(
    x=alt.X(alt.repeat("column"), type="quantitative"), y="sepal_length:Q", color="species:N",
).repeat(column=["sepal_width", "petal_length"]))

vegalite_bundle("alt_line_dates", alt.Chart(days).mark_line().encode(x="date:T", y="visits:Q"))
