//go:build unix

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The MCP Inspector CLI, a third-party client from npm (installed by .ci/run
// with `npm ci` in this directory), drives the server over stdio.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	cli, err := filepath.Abs("node_modules/.bin/mcp-inspector-cli")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		msg := "the MCP Inspector CLI is not installed: run `npm ci` in integration/"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	inspect := func(code string) map[string]any {
		t.Helper()
		cmd := exec.Command(cli, "--cli", binary, "--state-dir", "none",
			"--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code="+code)
		// The CLI reads its own package.json through a path relative to the
		// working directory's parent; node_modules/ is one level below ours.
		cmd.Dir = "node_modules"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector: %v\n%s", err, out)
		}
		start := strings.Index(string(out), "{")
		if start < 0 {
			t.Fatalf("inspector printed no JSON:\n%s", out)
		}
		var res map[string]any
		if err := json.Unmarshal(out[start:], &res); err != nil {
			t.Fatalf("inspector output: %v\n%s", err, out)
		}
		return res
	}

	res := inspect("import math; math.sqrt(144)")
	sc, _ := res["structuredContent"].(map[string]any)
	if res["isError"] == true || sc["result"] != "12.0" || sc["status"] != "ok" {
		t.Fatalf("run_code via the inspector: %v", res)
	}

	res = inspect("print('x')\n1/0")
	sc, _ = res["structuredContent"].(map[string]any)
	content, _ := res["content"].([]any)
	first, _ := content[0].(map[string]any)
	if res["isError"] != true || sc["status"] != "error" || !strings.HasPrefix(first["text"].(string), "ZeroDivisionError on line 2: division by zero") {
		t.Fatalf("error via the inspector: %v", res)
	}
}
