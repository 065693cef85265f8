# estimate_ols's statistics: reads the statsmodels OLS result ns[args["model"]] and
# replies its coefficients, fit statistics and residual tests (Durbin-Watson,
# Jarque-Bera, Breusch-Godfrey with args["lags"] lags). Runs after prelude.py.

import math
from statsmodels.stats.stattools import durbin_watson, jarque_bera
from statsmodels.stats.diagnostic import acorr_breusch_godfrey
m = ns[args["model"]]
def f(v):
    v = float(v)
    return v if math.isfinite(v) else None
names = [str(n) for n in m.params.index]
ci = m.conf_int()  # 95%, as the summary shows
coefs = [{"name": n, "coef": f(m.params[n]), "std_err": f(m.bse[n]), "t": f(m.tvalues[n]), "p": f(m.pvalues[n]),
          "ci": [f(ci.loc[n, 0]), f(ci.loc[n, 1])]} for n in names]
jb, jbp, skew, kurt = jarque_bera(m.resid)
lags = args["lags"]
bg = acorr_breusch_godfrey(m, nlags=lags)
reply({
    "nobs": int(m.nobs),
    "coefficients": coefs,
    "r2": f(m.rsquared),
    "adj_r2": f(m.rsquared_adj),
    "durbin_watson": f(durbin_watson(m.resid)),
    "jarque_bera": {"stat": f(jb), "p": f(jbp)},
    "breusch_godfrey": {"stat": f(bg[0]), "p": f(bg[1]), "lags": lags},
    "cov_type": str(m.cov_type),
    "maxlags": int(m.cov_kwds.get("maxlags", 0)) if m.cov_type == "HAC" else 0,
    "summary": str(m.summary()),
})
