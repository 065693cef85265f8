# %% [markdown]
# # Plots and tables
# Inline matplotlib figures and pandas tables, with fixed seeds so that both
# runs compute the same numbers.

# %%
%matplotlib inline
import numpy as np
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt
matplotlib.rcParams["figure.dpi"] = 50
rng = np.random.default_rng(12345)

# %%
xs = np.linspace(0, 2 * np.pi, 50)
plt.plot(xs, np.sin(xs))
plt.title("sine")
plt.show()

# %%
fig, axes = plt.subplots(1, 2, figsize=(4, 2))
axes[0].hist(rng.normal(size=200), bins=10)
axes[1].scatter(rng.uniform(size=20), rng.uniform(size=20))
fig.tight_layout()

# %%
for k in range(2):
    plt.figure(figsize=(2, 2))
    plt.plot([0, 1], [k, 1 - k])
    plt.show()
print("two figures shown")

# %%
fig2 = plt.figure(figsize=(2, 2))
plt.close(fig2)
"closed figures are not shown"

# %%
df = pd.DataFrame({"x": np.arange(6), "y": np.round(rng.normal(size=6), 3), "g": list("aabbcc")})
df

# %%
df.groupby("g")["y"].agg(["mean", "count"]).round(3)

# %%
print(df.describe().round(2).to_string())

# %%
ax = df.plot(x="x", y="y", kind="line", figsize=(3, 2))
ax

# %%
df.loc[:, "missing_column"]

# %%
import warnings
warnings.warn("this is a user warning")
"warned"

# %%
s = pd.Series([1.5, None, 3.0], name="with_nan")
display(s)
s.isna().sum()
