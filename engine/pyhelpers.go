package engine

import _ "embed" // the helpers' Python source

// Python run silently in a session's kernel by get_value, list_variables,
// estimate_ols, the checks the data tools make before they run code, and
// session_status. The source lives in py/*.py, real Python files that are
// linted and unit-tested on their own (py/test_helpers.py, run by
// TestPythonHelpers), and is embedded here as it is.
//
// The data helpers run as exec(compile(src), {...}) in a dict of their own,
// so they define nothing in the user's namespace, and are not stored in
// IPython's history; each answers with one display_data of resultMIME.

var (
	// pyPrelude starts every data helper: args, the user's namespace,
	// typename(x), and reply(obj), which publishes obj as JSON, refusing
	// more than the limit.
	//go:embed py/prelude.py
	pyPrelude string

	//go:embed py/get_value.py
	getValueSrc string
	//go:embed py/list_variables.py
	listVariablesSrc string
	//go:embed py/ols_stats.py
	olsStatsSrc string
	//go:embed py/check_data.py
	checkDataSrc string

	// subshellGuard is the code of every read on a subshell: it keeps
	// IPython's pre/post_execute hooks (matplotlib's figure flushing) off
	// the reading thread.
	//go:embed py/subshell_guard.py
	subshellGuard string

	// subshellParent keeps a read on a subshell from taking the kernel-wide
	// parent of output and input from the run; sent before a run.
	//go:embed py/subshell_parent.py
	subshellParent string

	// StatusProbe gathers what session_status reports from inside the
	// kernel, printing it as one JSON line.
	//go:embed py/session_status.py
	StatusProbe string
)

var (
	// PyGetValue converts the value of args["expression"] to JSON. An
	// error in evaluating the expression is replied as eval_error; one in
	// converting the value is raised.
	PyGetValue = pyPrelude + getValueSrc
	// PyListVariables describes the user's names without ever repr-ing a
	// whole object.
	PyListVariables = pyPrelude + listVariablesSrc
	// PyOLSStats reads the statistics of the OLS result estimate_ols fitted.
	PyOLSStats = pyPrelude + olsStatsSrc
	// pyCheckData checks the DataFrame and the columns a data tool names
	// before it runs code that the history keeps.
	pyCheckData = pyPrelude + checkDataSrc
)
