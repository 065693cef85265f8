//go:build unix

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fidelityScripts are the py:percent scripts in testdata/fidelity (see
// SOURCES there) that TestNotebookFidelity runs both ways.
var fidelityScripts = []string{"rich_display", "plots", "errors_and_magics", "streams_capture"}

// TestNotebookFidelity runs the same notebooks with nbclient (what
// `jupyter nbconvert --execute` uses) and cell by cell through kernel-mcp's
// run_code, and compares each cell: failed or not (execute_reply's status),
// execution count, exception names and values, stdout, stderr, the result,
// the displays (MIME types and text), the images, and the order of the
// outputs (from save_notebook). Only what differs by nature is normalised;
// see normalise.
func TestNotebookFidelity(t *testing.T) {
	t.Parallel()
	requirePython(t, "nbclient", "nbformat", "matplotlib", "numpy", "pandas")
	requireChartBrowser(t) // an SVG reaches the model as a PNG drawn from it
	work := t.TempDir()
	var scripts []string
	for _, name := range fidelityScripts {
		scripts = append(scripts, filepath.Join("testdata", "fidelity", name+".py"))
	}

	// nbclient runs in the background while kernel-mcp runs the same cells.
	ref := filepath.Join(work, "nbclient")
	if err := os.Mkdir(ref, 0o700); err != nil {
		t.Fatal(err)
	}
	var nbLog bytes.Buffer
	nb := exec.Command("python3", append([]string{filepath.Join("testdata", "fidelity", "nbclient_run.py"), ref}, scripts...)...)
	nb.Stdout, nb.Stderr = &nbLog, &nbLog
	if err := nb.Start(); err != nil {
		t.Fatal(err)
	}
	nbDone := false
	t.Cleanup(func() {
		if !nbDone {
			nb.Process.Kill()
			nb.Wait()
		}
	})

	s := startServer(t)
	got := map[string][]cellView{}
	sources := map[string][]string{}
	for _, name := range fidelityScripts {
		src, err := os.ReadFile(filepath.Join("testdata", "fidelity", name+".py"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(work, "kernel-mcp", name+".work")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if res := s.call("create_session", map[string]any{"session_id": name, "cwd": dir}); res.IsError {
			t.Fatal(text(res))
		}
		cells := percentCells(string(src))
		sources[name] = cells
		for _, code := range cells {
			res, out := s.run(name, code)
			got[name] = append(got[name], viewRun(res, out, dir))
		}
		path := filepath.Join(work, name+".kernel-mcp.ipynb")
		if res := s.call("save_notebook", map[string]any{"session_id": name, "path": path}); res.IsError {
			t.Fatal(text(res))
		}
		orders := notebookViews(t, path, dir)
		if len(orders) != len(cells) {
			t.Fatalf("%s: save_notebook has %d cells, %d were run", name, len(orders), len(cells))
		}
		for i := range cells {
			got[name][i].Order = orders[i].Order
		}
	}

	err := nb.Wait()
	nbDone = true
	if err != nil {
		t.Fatalf("nbclient: %v\n%s", err, nbLog.String())
	}
	compared, matched := 0, 0
	for _, name := range fidelityScripts {
		dir := filepath.Join(ref, name+".work")
		want, wantSrc := notebookViewsAndSources(t, filepath.Join(ref, name+".ipynb"), dir)
		if !slices.Equal(wantSrc, sources[name]) {
			t.Fatalf("%s: the cells run differ from nbclient's:\n%q\n%q", name, sources[name], wantSrc)
		}
		for i := range want {
			compared++
			if diff := want[i].diff(got[name][i]); diff != "" {
				t.Errorf("%s, cell %d:\n%s\n%s", name, i+1, indent(sources[name][i]), diff)
				continue
			}
			matched++
		}
	}
	t.Logf("notebook fidelity: %d cells compared, %d matched", compared, matched)
	if compared < 60 {
		t.Errorf("only %d cells compared; the notebooks lost cells", compared)
	}
}

// percentCells splits a py:percent script into its code cells, as
// nbclient_run.py does (the test checks both agree): a cell starts at a
// line "# %%"; "# %% [markdown]" cells are not code.
func percentCells(src string) []string {
	var (
		cells []string
		cur   []string
		code  bool
		open  bool
	)
	flush := func() {
		if open && code {
			cells = append(cells, strings.Trim(strings.Join(cur, "\n"), "\n"))
		}
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "# %%") {
			flush()
			open, code, cur = true, !strings.Contains(line, "[markdown]"), nil
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return cells
}

// cellView is what the test compares of one cell.
type cellView struct {
	Failed         bool
	ExecutionCount int
	Errors         []string // "EName: EValue"
	Stdout, Stderr string
	Result         string
	Displays       []string // "mime,mime|text shown" (see outputtext.FromBundle)
	Images         []string // MIME type of each image, in order
	Order          []string // output types in order, streams merged
}

func (w cellView) diff(g cellView) string {
	var b strings.Builder
	field := func(name string, want, got any) {
		if fmt.Sprint(want) != fmt.Sprint(got) {
			fmt.Fprintf(&b, "  %s:\n    nbclient   %q\n    kernel-mcp %q\n", name, fmt.Sprint(want), fmt.Sprint(got))
		}
	}
	field("failed", w.Failed, g.Failed)
	field("execution count", w.ExecutionCount, g.ExecutionCount)
	field("errors", w.Errors, g.Errors)
	field("stdout", w.Stdout, g.Stdout)
	field("stderr", w.Stderr, g.Stderr)
	field("result", w.Result, g.Result)
	field("displays", w.Displays, g.Displays)
	field("images", w.Images, g.Images)
	field("output order", w.Order, g.Order)
	return b.String()
}

// normalise applies history.Normalise, the rules rerun_code compares
// outputs by; each run also has a working directory of its own, which %cd
// and tracebacks can print.
func normalise(s, cwd string) string { return history.Normalise(s, cwd) }

// viewRun is kernel-mcp's view of a cell, from run_code's result.
func viewRun(res *mcp.CallToolResult, out runOutput, cwd string) cellView {
	v := cellView{
		Failed:         res.IsError,
		ExecutionCount: out.ExecutionCount,
		Stdout:         normalise(out.Stdout, cwd),
		Stderr:         normalise(out.Stderr, cwd),
		Result:         normalise(out.Result, cwd),
	}
	for _, e := range out.shownErrors() {
		v.Errors = append(v.Errors, normalise(e.EName+": "+e.EValue, cwd))
	}
	for _, d := range out.Displays {
		v.Displays = append(v.Displays, strings.Join(d.MimeTypes, ",")+"|"+normalise(d.Text, cwd))
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			v.Images = append(v.Images, c.MIMEType)
		case *mcp.ResourceLink:
			v.Images = append(v.Images, c.MIMEType)
		}
	}
	return v
}

// nbCell is the part of an nbformat code cell the test reads.
type nbCell struct {
	CellType       string          `json:"cell_type"`
	Source         json.RawMessage `json:"source"`
	ExecutionCount *int            `json:"execution_count"` // nbclient's own numbering

	Metadata struct {
		ReplyStatus         string `json:"reply_status"`
		ReplyExecutionCount int    `json:"reply_execution_count"`
	} `json:"metadata"`
	Outputs []struct {
		OutputType string                     `json:"output_type"`
		Name       string                     `json:"name"`
		Text       json.RawMessage            `json:"text"`
		Data       map[string]json.RawMessage `json:"data"`
		EName      string                     `json:"ename"`
		EValue     string                     `json:"evalue"`
	} `json:"outputs"`
}

// joinLines reads an nbformat multi-line string: a string or a list of lines.
func joinLines(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	json.Unmarshal(raw, &lines)
	return strings.Join(lines, "")
}

func notebookViews(t *testing.T, path, cwd string) []cellView {
	v, _ := notebookViewsAndSources(t, path, cwd)
	return v
}

// notebookViewsAndSources reads a notebook's code cells as the test
// compares them, and their sources.
func notebookViewsAndSources(t *testing.T, path, cwd string) ([]cellView, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []nbCell `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var (
		views   []cellView
		sources []string
	)
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		sources = append(sources, joinLines(c.Source))
		v := cellView{Failed: c.Metadata.ReplyStatus == "error", ExecutionCount: c.Metadata.ReplyExecutionCount}
		if c.Metadata.ReplyStatus == "" && c.ExecutionCount != nil {
			// save_notebook's cells carry the kernel's count.
			v.ExecutionCount = *c.ExecutionCount
		}
		var stdout, stderr strings.Builder
		for _, o := range c.Outputs {
			kind := o.OutputType
			switch o.OutputType {
			case "stream":
				kind += "/" + o.Name
				// How stream text is split into messages depends on
				// flush timing: consecutive chunks of one stream are one
				// output, as a notebook shows them.
				if n := len(v.Order); n > 0 && v.Order[n-1] == kind {
					kind = ""
				}
				if o.Name == "stderr" {
					stderr.WriteString(joinLines(o.Text))
				} else {
					stdout.WriteString(joinLines(o.Text))
				}
			case "error":
				kind += "/" + o.EName
				v.Errors = append(v.Errors, normalise(history.PlainText(o.EName+": "+o.EValue), cwd))
			case "execute_result", "display_data":
				// run_code shows what outputtext makes of the bundle.
				shown, _ := outputtext.FromBundle(o.Data)
				plain := normalise(history.PlainText(shown), cwd)
				if o.OutputType == "execute_result" {
					v.Result = plain
				} else {
					mimes := make([]string, 0, len(o.Data))
					for m := range o.Data {
						mimes = append(mimes, m)
					}
					sort.Strings(mimes)
					v.Displays = append(v.Displays, strings.Join(mimes, ",")+"|"+plain)
				}
				// kernel-mcp shows one image per output, the first of
				// these it has; an SVG as the PNG drawn from it, since
				// models take raster images (a browser is on CI's machine).
				for _, m := range []string{"image/png", "image/jpeg", "image/gif", "image/svg+xml"} {
					if _, ok := o.Data[m]; ok {
						if m == "image/svg+xml" {
							m = "image/png"
						}
						v.Images = append(v.Images, m)
						break
					}
				}
			}
			if kind != "" {
				v.Order = append(v.Order, kind)
			}
		}
		// kernel-mcp shows text as a terminal would (ANSI colour codes
		// stripped, carriage returns applied), so the reference is read
		// the same way.
		v.Stdout = normalise(history.PlainText(stdout.String()), cwd)
		v.Stderr = normalise(history.PlainText(stderr.String()), cwd)
		views = append(views, v)
	}
	return views, sources
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
