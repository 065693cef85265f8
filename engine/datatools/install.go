package datatools

import (
	"fmt"
	"regexp"
)

// missingModuleREs find the missing package in an import error: Python's
// own message, and pandas' for its optional dependencies.
var missingModuleREs = []*regexp.Regexp{
	regexp.MustCompile(`No module named '([A-Za-z0-9_]+)`),
	regexp.MustCompile(`Missing optional dependency '([A-Za-z0-9_]+)'`),
	regexp.MustCompile("`Import ([A-Za-z0-9_]+)` failed"),
	regexp.MustCompile(`Unable to find a usable engine; tried using: '([A-Za-z0-9_]+)'`),
}

// pipNames maps modules the data tools import to their pip package.
var pipNames = map[string]string{"pandas": "pandas", "statsmodels": "statsmodels", "matplotlib": "matplotlib", "openpyxl": "openpyxl", "pyarrow": "pyarrow", "xlrd": "xlrd", "numpy": "numpy", "scipy": "scipy", "patsy": "patsy"}

// InstallHint is what to say of an exception (its evalue and traceback)
// raised because a package is missing: install it with install_package.
// It is "" for any other exception.
func InstallHint(evalue, traceback string) string {
	var m []string
	for _, re := range missingModuleREs {
		if m = re.FindStringSubmatch(evalue + "\n" + traceback); m != nil {
			break
		}
	}
	if m == nil {
		return ""
	}
	pkg, ok := pipNames[m[1]]
	if !ok {
		pkg = m[1]
	}
	return fmt.Sprintf("%s is not installed in this session's interpreter: install it with the install_package tool (package_name %q), then call this tool again.", m[1], pkg)
}
