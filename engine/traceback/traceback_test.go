package traceback

import (
	"strings"
	"testing"
)

func TestShortTraceback(t *testing.T) {
	sp := "File ~/.venv/lib/python3.11/site-packages/"
	tb := []string{
		strings.Repeat("-", 75),
		"KeyError                   Traceback (most recent call last)",
		sp + "pandas/core/indexes/base.py:3816, in Index.get_loc(self, key)\n-> 3816 return x\n",
		"File pandas/_libs/index.pyx:172, in pandas._libs.index.IndexEngine.get_loc()\n",
		"KeyError: 'nope'",
		"\nThe above exception was the direct cause of the following exception:\n",
		"KeyError      Traceback (most recent call last)",
		"Cell In[2], line 2\n----> 2 helper(df)\n",
		"File /work/proj/helpers.py:5, in helper(d)\n----> 5 return d['nope']\n",
		sp + "pandas/core/frame.py:4330, in DataFrame.__getitem__(self, key)\n   4329 if x:\n-> 4330 indexer = ...\n   4331 pass\n",
		sp + "pandas/core/indexes/base.py:3823, in Index.get_loc(self, key)\n-> 3823 raise KeyError(key)\n",
		sp + "numpy/core/x.py:1, in f()\n",
		"File /usr/lib/python3.11/json/__init__.py:346, in loads(s)\n",
		"KeyError: 'nope'",
	}
	got := strings.Join(Short(tb), "\n")
	for _, want := range []string{
		"Cell In[2], line 2", "File /work/proj/helpers.py:5", "pandas/core/frame.py:4330",
		"(2 frames inside pandas omitted)", "(3 frames inside pandas and numpy and the standard library omitted)",
		"The above exception was the direct cause", "KeyError: 'nope'", "(2 frames inside pandas omitted)\nKeyError: 'nope'\n\nThe above", "KeyError Traceback (most recent call last)\nCell In[2]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("short traceback lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "\nFile …/site-packages/pandas/core/frame.py:4330, in DataFrame.__getitem__(self, key)\n-> 4330 indexer = ...\n") {
		t.Errorf("the first library frame should keep its file and its -> line only:\n%s", got)
	}
	for _, gone := range []string{"index.pyx", "base.py:3816", "base.py:3823", "json/__init__", "4329", "4331", "-----"} {
		if strings.Contains(got, gone) {
			t.Errorf("short traceback keeps %q:\n%s", gone, got)
		}
	}
	if n := strings.Count(got, "KeyError: 'nope'"); n != 2 {
		t.Errorf("exception lines: %d, want 2:\n%s", n, got)
	}
	user := []string{"Cell In[3], line 5\n----> 5 g(1)\n", "Cell In[3], line 4, in g(x)\n----> 4 return f(x)\n", "Cell In[3], line 2, in f(x)\n----> 2 return 1/0\n", "ZeroDivisionError: division by zero"}
	if got := Short(user); strings.Join(got, "|") != strings.Join(user, "|") {
		t.Errorf("user frames changed: %q", got)
	}
}

func TestErrorLine(t *testing.T) {
	tests := []struct {
		ename, tb string
		want      int
	}{
		{"NameError", "----> 2 x = y\nCell In[3], line 2\n", 2},
		{"NameError", "Cell In [3], line 7\n", 7},
		{"ZeroDivisionError", "Cell In[1], line 5\n----> 5 f()\nCell In[1], line 2, in f()\n", 2},
		{"SyntaxError", "  Cell In[4], line 3\n    def (\n        ^\nSyntaxError: invalid syntax\n", 3},
		{"SyntaxError", "  File \"<unknown>\", line 9\n", 9},
		{"ValueError", "File /usr/lib/python3/foo.py:10, in bar()\n", 0},
	}
	for _, tt := range tests {
		if got := ErrorLine(tt.ename, tt.tb); got != tt.want {
			t.Errorf("ErrorLine(%s, %q) = %d, want %d", tt.ename, tt.tb, got, tt.want)
		}
	}
}
