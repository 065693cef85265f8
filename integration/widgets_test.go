//go:build unix

package integration

import (
	"regexp"
	"strings"
	"testing"
)

// Widgets reach the model by their state at the end of the run, not by
// their repr: a slider's value and range, a tqdm bar's last line, what an
// Output widget captured, interact's output for the initial values.
func TestWidgetsReachTheModelByTheirState(t *testing.T) {
	t.Parallel()
	requirePython(t, "ipywidgets", "tqdm")
	s := startServer(t)
	s.run("w", "import ipywidgets as w")
	cases := []struct {
		name, code string
		want       []*regexp.Regexp
		notWant    []string
	}{
		{"slider", `w.IntSlider(value=3, max=10, description="n")`,
			[]*regexp.Regexp{regexp.MustCompile(`IntSlider "n": 3 \(0–10, step 1\)`)}, []string{"IntSlider(value=3"}},
		{"tqdm", "from tqdm.auto import tqdm\nfor i in tqdm(range(5)):\n    pass",
			[]*regexp.Regexp{regexp.MustCompile(`100%\|██████████\| 5/5 \[`)}, []string{"| 0/5"}},
		{"output widget", "out = w.Output()\nwith out:\n    print('captured line')\nout",
			[]*regexp.Regexp{regexp.MustCompile(`captured line`)}, []string{"Output()"}},
		{"interact", "def f(x):\n    print('x is', x)\n    return x * 2\nw.interact(f, x=5);",
			[]*regexp.Regexp{regexp.MustCompile(`IntSlider "x": 5 \(-5–15, step 1\)`), regexp.MustCompile(`x is 5`), regexp.MustCompile(`\b10\b`)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, out := s.run("w", c.code)
			txt := text(res)
			if out.Status != "ok" {
				t.Fatalf("status %q:\n%s", out.Status, txt)
			}
			for _, re := range c.want {
				if !re.MatchString(txt) {
					t.Errorf("text does not match %s:\n%s", re, txt)
				}
			}
			for _, nw := range c.notWant {
				if strings.Contains(txt, nw) {
					t.Errorf("text has %q:\n%s", nw, txt)
				}
			}
			var fromWidget bool
			for _, d := range out.Displays {
				fromWidget = fromWidget || d.TextFrom == "application/vnd.jupyter.widget-view+json"
			}
			if !fromWidget && out.ResultFrom != "application/vnd.jupyter.widget-view+json" {
				t.Errorf("no structured entry says its text is the widget's state: result_from %q, displays %+v", out.ResultFrom, out.Displays)
			}
		})
	}
}
