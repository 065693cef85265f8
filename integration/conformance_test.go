//go:build unix

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conformanceMustPass are the scenarios of the MCP conformance suite that
// need no fixture of the suite's reference server: each must run and pass
// against ours. Every other scenario is listed, with its reason, in
// conformance-baseline.yml.
var conformanceMustPass = []string{
	"server-initialize",
	"ping",
	"logging-set-level",
	"tools-list",
	"resources-list",
	"resources-subscribe",
	"resources-unsubscribe",
	"prompts-list",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

// The MCP conformance suite (@modelcontextprotocol/conformance from npm,
// installed by .ci/run with `npm ci` in this directory, with the Node ≥ 22
// it needs from the npm package `node`) runs every server scenario, pending
// ones included, against the streamable HTTP endpoint. Scenarios that only
// the suite's fixture server can pass are in conformance-baseline.yml; the
// CLI fails on any other failure and on any baseline entry that passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	node, cli := conformanceCLI(t)
	baseline, err := filepath.Abs("conformance-baseline.yml")
	if err != nil {
		t.Fatal(err)
	}
	expected := readBaseline(t, baseline)
	for _, s := range conformanceMustPass {
		if slices.Contains(expected, s) {
			t.Fatalf("%s must pass but is in conformance-baseline.yml", s)
		}
	}

	url := startHTTPServer(t)

	// A live session, so that resources-list checks a real resource
	// (session://default/history) rather than an empty list.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conformance-setup", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "1 + 1"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := structured[runOutput](t, res); out.Result != "2" {
		t.Fatalf("run_code before the conformance run: %+v", out)
	}

	outDir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url,
		"--suite", "all", "--expected-failures", baseline, "-o", outDir)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	output, runErr := cmd.CombinedOutput()

	results := readConformanceResults(t, outDir)
	ran := make([]string, 0, len(results))
	for s := range results {
		ran = append(ran, s)
	}
	slices.Sort(ran)
	for _, s := range ran {
		verdict := "passed"
		if slices.Contains(expected, s) {
			verdict = "expected failure (baseline)"
		} else if !scenarioPassed(results[s]) {
			verdict = "FAILED"
		}
		t.Logf("%-32s %s", s, verdict)
	}
	if runErr != nil {
		// The CLI's summary and baseline verdict, then why each unexpected
		// failure failed.
		summary := string(output)
		if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
			summary = summary[i:]
		}
		for _, s := range ran {
			if !slices.Contains(expected, s) && !scenarioPassed(results[s]) {
				summary += "\n" + s + ":" + describeChecks(results[s])
			}
		}
		t.Fatalf("conformance: %v\n%s", runErr, summary)
	}

	for _, s := range conformanceMustPass {
		checks, ok := results[s]
		if !ok {
			t.Errorf("scenario %s did not run", s)
		} else if !scenarioPassed(checks) {
			t.Errorf("scenario %s: %s", s, describeChecks(checks))
		}
	}
	for _, s := range expected {
		if _, ok := results[s]; !ok {
			t.Errorf("conformance-baseline.yml lists %s, which is no scenario of the suite", s)
		}
	}
	// resources-list saw the session's history resource.
	for _, c := range results["resources-list"] {
		if c.ID == "resources-list" {
			var d struct {
				ResourceCount int `json:"resourceCount"`
			}
			json.Unmarshal(c.Details, &d)
			if d.ResourceCount < 1 {
				t.Errorf("resources-list listed no resource while a session was live: %s", c.Details)
			}
		}
	}
}

// conformanceCLI returns the Node ≥ 22 binary and the conformance CLI script
// from node_modules; it fails (under CI) or skips (locally) when they are
// not installed.
func conformanceCLI(t *testing.T) (node, cli string) {
	t.Helper()
	node, err := filepath.Abs("node_modules/.bin/node")
	if err != nil {
		t.Fatal(err)
	}
	cli, err = filepath.Abs("node_modules/@modelcontextprotocol/conformance/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{node, cli} {
		if _, err := os.Stat(f); err != nil {
			msg := "the MCP conformance suite is not installed (" + err.Error() + "): run `npm ci` in integration/"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// The suite needs Node 22 or later; the machine's own node may be older.
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
	if major < 22 {
		t.Fatalf("%s is %s; the conformance suite needs Node >= 22", node, v)
	}
	return node, cli
}

// readBaseline returns the server scenarios listed in the expected-failures
// file: the "- name" items under "server:", comments stripped.
func readBaseline(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	inServer := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "-") {
			inServer = strings.TrimSpace(line) == "server:"
			continue
		}
		if item, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && inServer {
			names = append(names, strings.TrimSpace(item))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Description  string          `json:"description"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// readConformanceResults reads the checks.json that the CLI writes for each
// scenario into dir/server-<scenario>-<timestamp>/.
func readConformanceResults(t *testing.T, dir string) map[string][]conformanceCheck {
	t.Helper()
	stamp := regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	files, err := filepath.Glob(filepath.Join(dir, "server-*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string][]conformanceCheck{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := stamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"), "")
		results[name] = checks
	}
	return results
}

// scenarioPassed is the CLI's verdict: some check succeeded and none failed
// or warned.
func scenarioPassed(checks []conformanceCheck) bool {
	ok := false
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			ok = true
		case "FAILURE", "WARNING":
			return false
		}
	}
	return ok
}

func describeChecks(checks []conformanceCheck) string {
	var b strings.Builder
	for _, c := range checks {
		if c.Status == "INFO" {
			continue
		}
		b.WriteString("\n  " + c.Status + " " + c.ID + ": " + c.Description)
		if c.ErrorMessage != "" {
			b.WriteString(" — " + c.ErrorMessage)
		}
	}
	return b.String()
}
