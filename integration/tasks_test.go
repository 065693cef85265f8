//go:build unix

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireTool fails under CI, and skips elsewhere, when a client program
// a test drives is missing.
func requireTool(t *testing.T, path, how string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err == nil {
		if _, err = os.Stat(abs); err == nil {
			return abs
		}
	}
	msg := path + " is missing: " + how
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// MCP tasks (SEP-2663, protocol 2026-07-28) with a client no one here
// wrote: the Rust SDK rmcp (integration/tasks-rmcp). A 20 s loop becomes a
// task polled to its end, whose result is wait_run's; input() is answered
// through tasks/update; tasks/cancel interrupts and keeps the namespace; a
// short call returns its result directly.
func TestTasksRustClient(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	client := requireTool(t, "tasks-rmcp/target/release/tasks-rmcp", "run `make tasks-rmcp` (needs cargo)")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, binary, "--state-dir", t.TempDir(), "--pool-size", "0")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks-rmcp: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Step string          `json:"step"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("tasks-rmcp printed %q: %v", sc.Text(), err)
		}
		steps[line.Step] = line.Data
	}
	for _, s := range []string{"discover", "short", "long", "wait_run", "input", "cancel"} {
		if steps[s] == nil {
			t.Fatalf("tasks-rmcp did not get to step %s:\n%s\nstderr:\n%s", s, out, stderr.String())
		}
	}
	if !strings.Contains(string(steps["discover"]), `"io.modelcontextprotocol/tasks"`) || !strings.Contains(string(steps["discover"]), "2026-07-28") {
		t.Errorf("discover: %s", steps["discover"])
	}
	var short struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(steps["short"], &short)
	if short.ResultType != "complete" || len(short.Content) == 0 || short.Content[0].Text != "42" {
		t.Errorf("a short call did not return its result directly: %s", steps["short"])
	}
	var long struct {
		TaskID string `json:"task_id"`
		TTLMs  int64  `json:"ttl_ms"`
		Final  struct {
			Status string         `json:"status"`
			Result map[string]any `json:"result"`
		} `json:"final"`
	}
	json.Unmarshal(steps["long"], &long)
	if len(long.TaskID) != 32 || long.TTLMs <= 0 || long.Final.Status != "completed" {
		t.Fatalf("the 20 s loop: %s", steps["long"])
	}
	if !strings.Contains(string(steps["long"]), "epoch 19") || !strings.Contains(string(steps["long"]), "trained") {
		t.Errorf("the task's result lacks the run's output: %s", steps["long"])
	}
	var waited map[string]any
	json.Unmarshal(steps["wait_run"], &waited)
	for _, k := range []string{"content", "structuredContent", "isError"} {
		a, _ := json.Marshal(long.Final.Result[k])
		b, _ := json.Marshal(waited[k])
		if !bytes.Equal(a, b) {
			t.Errorf("the task's %s differs from wait_run's:\ntask:     %s\nwait_run: %s", k, a, b)
		}
	}
	if !strings.Contains(string(steps["input"]), `"completed"`) || !strings.Contains(string(steps["input"]), "hello Ada") {
		t.Errorf("input() through tasks/update: %s", steps["input"])
	}
	if c := string(steps["cancel"]); !strings.Contains(c, `"cancelled"`) || !strings.Contains(c, "namespace was kept") || !strings.Contains(c, `"text":"42"`) {
		t.Errorf("tasks/cancel: %s", c)
	}
}

// The 2025-11-25 tasks with the official TypeScript SDK 1.x's task client
// (client.experimental.tasks, testdata/tasks.mjs): tools/list marks the
// tools that take tasks, a 20 s loop is a task polled to its end whose
// result is wait_run's, input() is answered through the elicitation that
// tasks/result asks, tasks/cancel interrupts and keeps the namespace, and a
// call without a task returns its result directly.
func TestTasksTypeScriptClient(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	script, err := filepath.Abs("testdata/tasks.mjs")
	if err != nil {
		t.Fatal(err)
	}
	requireTool(t, "node_modules/@modelcontextprotocol/sdk/package.json", "run `npm ci` in integration/")
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, binary, "--state-dir", t.TempDir(), "--pool-size", "0")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	type stream struct {
		TaskID string         `json:"taskId"`
		Seen   []string       `json:"seen"`
		Result map[string]any `json:"result"`
		Error  string         `json:"error"`
	}
	var got struct {
		Capabilities map[string]any   `json:"capabilities"`
		TaskTools    []string         `json:"taskTools"`
		Short        map[string]any   `json:"short"`
		Long         stream           `json:"long"`
		WaitRun      map[string]any   `json:"waitRun"`
		List         []string         `json:"list"`
		Input        stream           `json:"input"`
		Elicited     []map[string]any `json:"elicited"`
		Cancelled    map[string]any   `json:"cancelled"`
		After        map[string]any   `json:"after"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := got.Capabilities["tasks"]; !ok {
		t.Errorf("initialize declares no tasks: %v", got.Capabilities)
	}
	if !slicesContain(got.TaskTools, "run_code:optional") || slicesContain(got.TaskTools, "wait_run:optional") {
		t.Errorf("execution.taskSupport: %v", got.TaskTools)
	}
	if fmt.Sprint(got.Short["content"]) != "[map[text:42 type:text]]" {
		t.Errorf("a call without a task: %v", got.Short)
	}
	if len(got.Long.TaskID) != 32 || got.Long.Seen[0] != "taskCreated" || got.Long.Seen[len(got.Long.Seen)-1] != "result" || !strings.Contains(fmt.Sprint(got.Long.Result), "epoch 19") {
		t.Fatalf("the 20 s loop: %+v", got.Long)
	}
	for _, k := range []string{"content", "structuredContent", "isError"} {
		a, _ := json.Marshal(got.Long.Result[k])
		b, _ := json.Marshal(got.WaitRun[k])
		if !bytes.Equal(a, b) {
			t.Errorf("tasks/result's %s differs from wait_run's:\ntask:     %s\nwait_run: %s", k, a, b)
		}
	}
	if !slicesContain(got.List, got.Long.TaskID) {
		t.Errorf("tasks/list %v lacks %s", got.List, got.Long.TaskID)
	}
	if !slicesContain(got.Input.Seen, "taskStatus:input_required") || !strings.Contains(fmt.Sprint(got.Input.Result), "hi Grace") {
		t.Errorf("input(): %+v", got.Input)
	}
	if len(got.Elicited) != 1 || !strings.Contains(fmt.Sprint(got.Elicited[0]), got.Input.TaskID) {
		t.Errorf("the elicitation tasks/result asked: %v", got.Elicited)
	}
	if got.Cancelled["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got.Cancelled["statusMessage"]), "namespace was kept") {
		t.Errorf("tasks/cancel: %v", got.Cancelled)
	}
	if fmt.Sprint(got.After["content"]) != "[map[text:42 type:text]]" {
		t.Errorf("after the cancel: %v", got.After)
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
