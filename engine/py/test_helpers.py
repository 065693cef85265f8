"""Unit tests of the Python kernel-mcp runs silently in kernels.

Each helper runs as the server runs it: prelude.py + the helper, compiled and
exec'd in a dict of its own holding _km_args (JSON) and _km_ns (the user's
namespace); reply() is caught where it publishes. Run with
`python3 -m unittest discover -s mcpserver/py` (TestPythonHelpers in the Go
tests does). Needs IPython; the pandas, numpy and statsmodels cases need those
packages and fail, rather than skip, when CI=true.
"""

import contextlib
import datetime
import io
import json
import math
import os
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT_MIME = "application/vnd.kernel-mcp+json"


def source(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def optional(module):
    """Imports module, or skips the test (fails it under CI=true)."""
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        raise unittest.SkipTest(module + " is not installed")


def run_helper(helper, ns, **args):
    """Runs prelude.py + helper against the namespace ns; returns the reply."""
    published = []
    src = source("prelude.py") + source(helper)
    with mock.patch("IPython.display.publish_display_data", published.append):
        exec(compile(src, "<kernel-mcp>", "exec"), {"_km_args": json.dumps(args), "_km_ns": ns})
    if len(published) != 1 or list(published[0]) != [RESULT_MIME]:
        raise AssertionError("want one reply of %s, got %r" % (RESULT_MIME, published))
    return published[0][RESULT_MIME]


def get_value(expression, ns=None, limit=5 << 20, max_cells=250000, **extra):
    got = run_helper("get_value.py", ns or {}, expression=expression, limit=limit, max_cells=max_cells, **extra)
    got.pop("shape", None)
    return got


class PreludeTest(unittest.TestCase):
    def test_reply_refuses_more_than_the_limit(self):
        with self.assertRaisesRegex(ValueError, "more than the 10 get_value returns"):
            get_value("'x' * 100", limit=10)

    def test_typename(self):
        self.assertEqual(get_value("1")["type"], "int")
        self.assertEqual(get_value("datetime.date(2024, 1, 2)", {"datetime": datetime})["type"], "datetime.date")


class GetValueTest(unittest.TestCase):
    def test_builtins(self):
        self.assertEqual(get_value("[1, 2.5, 'a', None, True]"), {"type": "list", "value": [1, 2.5, "a", None, True]})
        self.assertEqual(get_value("{'a': (1, 2), 3: {4}}")["value"], {"a": [1, 2], "3": [4]})
        self.assertEqual(get_value("float('nan')")["value"], None)
        self.assertEqual(get_value("float('inf')")["value"], None)
        self.assertEqual(get_value("datetime.date(2024, 1, 2)", {"datetime": datetime})["value"], "2024-01-02")
        self.assertEqual(get_value("b'abc'")["value"], "abc")

    def test_eval_error_is_replied(self):
        self.assertEqual(get_value("undefined_name"), {"eval_error": {"ename": "NameError", "evalue": "name 'undefined_name' is not defined"}})

    def test_name_error_names_the_closest(self):
        self.assertEqual(get_value("dff.head()", {"df": 1})["eval_error"]["evalue"], "name 'dff' is not defined; did you mean 'df'?")

    def test_unconvertible_names_its_type(self):
        with self.assertRaisesRegex(TypeError, "a value of type object cannot be converted"):
            get_value("object()")
        with self.assertRaisesRegex(TypeError, "not UTF-8"):
            get_value("b'\\xff'")

    def test_keys_that_collide_as_json(self):
        with self.assertRaisesRegex(ValueError, "two keys that are both '1'"):
            get_value("{1: 'a', '1': 'b'}")

    def test_element_budget(self):
        with self.assertRaisesRegex(ValueError, "more than 10 elements"):
            get_value("list(range(20))", max_cells=10)

    def test_reads_the_users_namespace_and_defines_nothing(self):
        ns = {"x": 41}
        self.assertEqual(get_value("x + 1", ns)["value"], 42)
        ns.pop("__builtins__", None)  # eval adds it; a kernel's namespace has it already
        self.assertEqual(ns, {"x": 41})

    def test_numpy(self):
        np = optional("numpy")
        ns = {"np": np}
        self.assertEqual(get_value("np.arange(3)", ns), {"type": "numpy.ndarray", "value": [0, 1, 2]})
        self.assertEqual(get_value("np.float32(1.5)", ns)["value"], 1.5)
        self.assertEqual(get_value("np.array([1.0, np.nan])", ns)["value"], [1.0, None])
        self.assertEqual(get_value("np.datetime64('NaT')", ns)["value"], None)
        with self.assertRaisesRegex(TypeError, "complex number"):
            get_value("np.complex128(1j)", ns)
        with self.assertRaisesRegex(ValueError, "more than 5 elements"):
            get_value("np.zeros(100)", ns, max_cells=5)

    def test_pandas(self):
        pd = optional("pandas")
        ns = {"pd": pd, "df": pd.DataFrame({"a": [1, 2], "b": [0.5, None]}, index=["r1", "r2"])}
        self.assertEqual(
            get_value("df", ns),
            {"type": "pandas.DataFrame", "value": {"columns": ["a", "b"], "index": ["r1", "r2"], "data": [[1, 0.5], [2, None]]}},
        )
        self.assertEqual(
            get_value("df", ns, orient="records")["value"],
            {"columns": ["a", "b"], "index": ["r1", "r2"], "records": [{"a": 1, "b": 0.5}, {"a": 2, "b": None}]},
        )
        # Column labels keep their type in split form.
        ns["num"] = pd.DataFrame([[1, 2]], columns=[2020, 2021])
        self.assertEqual(get_value("num", ns)["value"]["columns"], [2020, 2021])
        self.assertEqual(get_value("df['a']", ns)["value"], {"name": "a", "index": ["r1", "r2"], "values": [1, 2]})
        self.assertEqual(get_value("pd.Timestamp('2024-01-02 03:04')", ns)["value"], "2024-01-02T03:04:00")
        self.assertIsNone(get_value("pd.NaT", ns)["value"])
        ns["dup"] = pd.DataFrame([[1, 2]], columns=["x", "x"])
        with self.assertRaisesRegex(ValueError, "column names repeat"):
            get_value("dup", ns, orient="records")
        self.assertEqual(get_value("dup", ns)["value"]["columns"], ["x", "x"])

    def test_head(self):
        pd = optional("pandas")
        ns = {"df": pd.DataFrame({"a": range(203)}), "s": pd.Series(range(203), index=range(1000, 1203)), "big": pd.DataFrame({"a": range(300000)})}
        got = get_value("df", ns, head=20)
        self.assertEqual((got["total"], got["shown"], got["unit"]), (203, 20, "rows"))
        self.assertEqual(got["value"]["index"], list(range(20)))
        got = get_value("s", ns, head=3)
        self.assertEqual(got["value"], {"name": None, "index": [1000, 1001, 1002], "values": [0, 1, 2]})
        self.assertEqual((got["total"], got["shown"], got["unit"]), (203, 3, "values"))
        # A frame too big to convert whole can still be previewed.
        self.assertEqual(get_value("big", ns, head=2)["total"], 300000)
        self.assertEqual(get_value("list(range(10))", head=4), {"type": "list", "value": [0, 1, 2, 3], "total": 10, "shown": 4, "unit": "items"})
        self.assertEqual(get_value("{'a': 1, 'b': 2, 'c': 3}", head=2)["value"], {"a": 1, "b": 2})
        # Nothing is left out: no note.
        self.assertEqual(get_value("[1, 2]", head=5), {"type": "list", "value": [1, 2]})
        self.assertEqual(get_value("7", head=5), {"type": "int", "value": 7})


class ListVariablesTest(unittest.TestCase):
    def test_describes_without_repr(self):
        class Huge:
            def __repr__(self):
                raise AssertionError("repr'd a whole object")

        ns = {"n": 3, "s": "x" * 100, "items": list(range(100)), "obj": Huge(), "_hidden": 1, "json": json, "f": run_helper}
        got = run_helper("list_variables.py", ns, max=50)
        by_name = {v["name"]: v for v in got["variables"]}
        self.assertEqual(got["total"], 5)
        self.assertEqual(sorted(by_name), ["f", "items", "n", "obj", "s"])
        self.assertEqual(by_name["n"], {"name": "n", "type": "int", "repr": "3"})
        self.assertEqual(by_name["items"]["length"], 100)
        self.assertTrue(by_name["items"]["repr"].endswith("...]"), by_name["items"]["repr"])
        self.assertLessEqual(len(by_name["s"]["repr"]), 70)
        self.assertEqual(by_name["obj"]["repr"], "<%s object>" % by_name["obj"]["type"])
        self.assertEqual(by_name["f"]["repr"], "<function run_helper>")

    def test_max_bounds_the_list_not_the_total(self):
        got = run_helper("list_variables.py", {"a": 1, "b": 2, "c": 3}, max=2)
        self.assertEqual([v["name"] for v in got["variables"]], ["a", "b"])
        self.assertEqual(got["total"], 3)

    def test_frames_and_arrays_by_shape(self):
        np = optional("numpy")
        pd = optional("pandas")
        ns = {"df": pd.DataFrame({"a": range(4)}), "arr": np.zeros((2, 3), dtype="int8")}
        by_name = {v["name"]: v for v in run_helper("list_variables.py", ns, max=10)["variables"]}
        self.assertEqual(by_name["df"]["shape"], [4, 1])
        self.assertEqual(by_name["df"]["repr"], "DataFrame 4 rows x 1 columns: a")
        wide = {"wide": pd.DataFrame({"c%d" % i: [i] for i in range(60)})}
        got = run_helper("list_variables.py", wide, max=10, max_columns=50)["variables"][0]["repr"]
        self.assertEqual(got, "DataFrame 1 rows x 60 columns: " + ", ".join("c%d" % i for i in range(50)) + ", ... and 10 more")
        self.assertEqual(by_name["arr"], {"name": "arr", "type": "numpy.ndarray", "shape": [2, 3], "dtype": "int8", "repr": "array 2x3 of int8"})


class OLSStatsTest(unittest.TestCase):
    def test_statistics(self):
        np = optional("numpy")
        pd = optional("pandas")
        optional("statsmodels")
        import statsmodels.api as sm

        rng = np.random.default_rng(1)
        x = pd.Series(rng.normal(size=50), name="x1")
        y = 2 + 3 * x + rng.normal(scale=0.1, size=50)
        model = sm.OLS(y, sm.add_constant(x)).fit()  # as estimate_ols fits it: on a DataFrame
        got = run_helper("ols_stats.py", {"model": model}, model="model", lags=2)
        self.assertEqual(got["nobs"], 50)
        self.assertEqual([c["name"] for c in got["coefficients"]], ["const", "x1"])
        self.assertAlmostEqual(got["coefficients"][1]["coef"], model.params["x1"])
        self.assertEqual(got["coefficients"][1]["ci"], [float(v) for v in model.conf_int().loc["x1"]])
        self.assertGreater(got["r2"], 0.99)
        self.assertEqual(got["breusch_godfrey"]["lags"], 2)
        self.assertEqual(got["cov_type"], "nonrobust")
        self.assertIn("OLS Regression Results", got["summary"])
        for key in ("durbin_watson", "adj_r2"):
            self.assertTrue(math.isfinite(got[key]), key)
        self.assertEqual(got["maxlags"], 0)
        hac = sm.OLS(y, sm.add_constant(x)).fit(cov_type="HAC", cov_kwds={"maxlags": 3})
        got = run_helper("ols_stats.py", {"model": hac}, model="model", lags=2)
        self.assertEqual((got["cov_type"], got["maxlags"]), ("HAC", 3))
        self.assertAlmostEqual(got["coefficients"][1]["std_err"], hac.bse["x1"])


def check_data(ns, name="df", columns=(), tool="plot_data", **extra):
    cols = [{"role": r, "column": c, "numeric": n} for r, c, n in columns]
    return run_helper("check_data.py", ns, tool=tool, name=name, columns=cols, **extra)


class CheckDataTest(unittest.TestCase):
    def frame(self):
        pd = optional("pandas")
        return pd, pd.DataFrame({
            "tbilrate": [1.0, 2.0, 3.0, 4.0], "infl": [0.5, 1.5, None, 2.0], "decade": [1960, 1950, 1960, None],
            "label": ["a", "b", "c", "d"], "flag": [True, False, True, False],
        })

    def test_missing_column_names_the_closest(self):
        pd, df = self.frame()
        got = check_data({"df": df}, columns=[("x[0]", "tbilrat", "number")], tool="estimate_ols")["error"]
        self.assertIn("df has no column 'tbilrat' (x[0]); did you mean 'tbilrate'?", got)
        self.assertIn("did you mean 'tbilrate'? Its columns: 'tbilrate', 'infl'", got)
        got = check_data({"df": df}, columns=[("y", "Infl", "plot")])["error"]
        self.assertIn("did you mean 'infl'?", got)
        self.assertEqual(check_data({"df": df}, columns=[("y", "zzzz", "")])["error"],
                         "df has no column 'zzzz' (y). Its columns: 'tbilrate', 'infl', 'decade', 'label', 'flag'")

    def test_missing_frame_names_the_closest_and_the_frames(self):
        pd, df = self.frame()
        got = check_data({"macro": df, "other": 1}, name="macr")["error"]
        self.assertEqual(got, "there is no variable 'macr' in this session; did you mean 'macro'? (DataFrames: 'macro')")
        got = check_data({"x": 1}, name="df")["error"]
        self.assertIn("no DataFrame is defined yet: load one with load_data", got)
        self.assertEqual(check_data({"df": df["infl"]})["error"], "df is a pandas.Series, not a pandas DataFrame: make it one with df.to_frame()")
        self.assertEqual(check_data({"df": [1, 2]})["error"], "df is a list, not a pandas DataFrame")

    def test_dtypes(self):
        pd, df = self.frame()
        ns = {"df": df}
        # Text is of dtype object before pandas 3, str from it on.
        self.assertRegex(check_data(ns, columns=[("x[0]", "label", "number")], tool="estimate_ols")["error"], r"holds (object|str) values, not numbers; estimate_ols needs numeric columns")
        self.assertEqual(check_data(ns, columns=[("x[0]", "flag", "number")], tool="estimate_ols"), {})
        self.assertIn("df['flag'].astype(int)", check_data(ns, columns=[("y", "flag", "plot")])["error"])
        self.assertRegex(check_data(ns, columns=[("y", "label", "plot")])["error"], r"holds (object|str) values, not numbers; plot_data draws numeric columns")
        self.assertEqual(check_data(ns, columns=[("x", "label", "axis")]), {})
        self.assertIn("cannot place on an axis", check_data(ns, columns=[("x", "flag", "axis")])["error"])
        self.assertIn("no numeric column to plot", check_data({"df": df[["label", "flag"]]}, numeric_default=True)["error"])
        self.assertEqual(check_data({"df": df[["label", "infl"]]}, numeric_default=True), {})

    def test_column_names_that_are_not_strings(self):
        pd = optional("pandas")
        df = pd.DataFrame({1: [1.0], "b": [2.0]})
        got = check_data({"df": df}, columns=[("y", "1", "plot")])["error"]
        self.assertIn("df's column '1' is the int 1, not the string '1'", got)
        dup = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
        self.assertIn("2 columns named 'a'", check_data({"df": dup}, columns=[("y", "a", "plot")])["error"])

    def test_groups_sorted_and_bounded(self):
        pd, df = self.frame()
        got = check_data({"df": df}, columns=[("x", "decade", "")], group_by="decade", max_groups=5)
        self.assertEqual(got, {"groups": ["1950.0", "1960.0"], "ngroups": 2})
        got = check_data({"df": df}, group_by="label", max_groups=3)["error"]
        self.assertEqual(got, "x 'label' has 4 distinct values; plot_data draws at most 3 groups: choose a column with fewer values, or bin it first (e.g. with pd.cut)")

    def test_defines_nothing(self):
        pd, df = self.frame()
        ns = {"df": df}
        check_data(ns, columns=[("y", "infl", "plot")])
        ns.pop("__builtins__", None)
        self.assertEqual(list(ns), ["df"])


class SessionStatusTest(unittest.TestCase):
    def test_prints_one_json_line_and_leaves_nothing(self):
        ns = {}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source("session_status.py"), "<kernel-mcp>", "exec"), ns)
        got = json.loads(out.getvalue())
        self.assertEqual(sorted(got), ["cwd", "executable", "packages", "rss", "version"])
        self.assertEqual(got["cwd"], os.getcwd())
        self.assertIn("IPython", got["packages"])
        self.assertEqual([k for k in ns if k != "__builtins__"], [])


class SubshellReplyTest(unittest.TestCase):
    """Reads on a subshell return the reply through user_expressions."""

    def test_reply_left_in_the_dict(self):
        published = []
        d = {"_km_args": json.dumps({"expression": "len(xs)", "limit": 1000, "max_cells": 100}), "_km_ns": {"xs": [1, 2]}, "_km_reply": None}
        with mock.patch("IPython.display.publish_display_data", published.append):
            exec(compile(source("prelude.py") + source("get_value.py"), "<kernel-mcp>", "exec"), d)
        self.assertEqual(published, [])
        self.assertEqual(d["_km_reply"]._repr_mimebundle_(), {RESULT_MIME: {"type": "int", "shape": "", "value": 2}})
        self.assertEqual(repr(d["_km_reply"]), "<kernel-mcp reply>")

    def test_list_growing_while_read_stays_bounded(self):
        # A list that grows while get_value reads it (the run appends on the
        # main thread) is converted from one copy, counted against max_cells.
        class Growing(list):
            def __iter__(self):
                self.extend(range(10))
                return super().__iter__()
        self.assertEqual(get_value("xs", {"xs": Growing([1, 2])}, max_cells=20)["value"], [1, 2] + list(range(10)))
        with self.assertRaisesRegex(ValueError, "more than 5 elements"):
            get_value("xs", {"xs": Growing([1, 2])}, max_cells=5)


if __name__ == "__main__":
    unittest.main()
