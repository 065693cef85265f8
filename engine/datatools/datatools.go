// Package datatools holds what the data tools (get_value, list_variables,
// load_data, describe_data, plot_data, estimate_ols) know of Python and
// pandas: the names they accept, the code they run, and how the replies of
// the engine's helper code read. It runs nothing itself: the engine runs
// the code, and an adapter (MCP, the web view) renders the results.
//
//	read, err := datatools.Reader("prices.csv", "") // pd.read_csv("prices.csv")
//	code := datatools.LoadCode("df", read)
package datatools

import (
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var pyKeywords = []string{"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"}

// CheckName validates a variable name given to a data tool; what names the
// argument in the error.
func CheckName(what, name string) error {
	if !identRE.MatchString(name) || slices.Contains(pyKeywords, name) {
		return fmt.Errorf("%s %q is not a Python variable name: use letters, digits and _, not starting with a digit", what, name)
	}
	return nil
}

// NameOr is the DataFrame variable a tool works on: n, or df by default.
func NameOr(n string) string {
	if n == "" {
		return "df"
	}
	return n
}

// CursorOr is the cursor position in characters, the end of code by default.
func CursorOr(code string, pos *int) (int, error) {
	n := utf8.RuneCountInString(code)
	if pos == nil {
		return n, nil
	}
	if *pos < 0 || *pos > n {
		return 0, fmt.Errorf("cursor_pos %d is outside the code (0 to %d characters)", *pos, n)
	}
	return *pos, nil
}
