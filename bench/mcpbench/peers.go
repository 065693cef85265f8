// The peer MCP servers from PyPI: their virtualenv and their workloads.

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// peer is an MCP server from PyPI that runs Python.
type peer struct {
	name    string
	pkg     string   // pip requirement
	command []string // relative to the venv's bin directory
	tool    string
	args    func(code string) map[string]any
	check   func(out string) bool // is this the result of 1+1?
	env     func(py string) []string
	notes   []string
}

var peers = []peer{
	{
		name:    "python-session-mcp",
		pkg:     "python-session-mcp",
		command: []string{"python-session-mcp"},
		tool:    "run_python",
		args:    func(code string) map[string]any { return map[string]any{"code": code} },
		check:   func(out string) bool { return strings.Contains(out, "2") },
		env:     func(py string) []string { return []string{"PYTHON_MCP_INTERPRETER=" + py} },
		notes: []string{"one session per server process: no create_session, and the parallel-sessions workload does not apply",
			"user code runs in a plain Python worker over pipes, not a Jupyter kernel"},
	},
	{
		name:    "python-repl-mcp",
		pkg:     "python-repl-mcp",
		command: []string{"python", "-m", "python_repl_mcp"},
		tool:    "run_code",
		args:    func(code string) map[string]any { return map[string]any{"code": code} },
		check:   func(out string) bool { return strings.Contains(out, "2") },
		env:     func(string) []string { return nil },
	},
}

// peerVenv makes (once) a virtualenv for a peer under the user cache dir
// and installs it; it returns the venv's bin directory.
func peerVenv(p peer, py string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	venv := filepath.Join(cache, "kernel-mcp-bench", p.name)
	bin := filepath.Join(venv, "bin")
	if runtime.GOOS == "windows" {
		bin = filepath.Join(venv, "Scripts")
	}
	if _, err := os.Stat(filepath.Join(venv, ".installed")); err == nil {
		return bin, nil
	}
	os.RemoveAll(venv)
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		return "", fmt.Errorf("python -m venv: %v: %s", err, lastLine(string(out)))
	}
	out, err := exec.Command(filepath.Join(bin, "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q", p.pkg).CombinedOutput()
	if err != nil {
		os.RemoveAll(venv)
		return "", fmt.Errorf("pip install %s failed: %s", p.pkg, lastLine(string(out)))
	}
	return bin, os.WriteFile(filepath.Join(venv, ".installed"), nil, 0o644)
}

func benchPeer(p peer, py string) *result {
	r := &result{Name: p.name, Notes: p.notes}
	bin, err := peerVenv(p, py)
	if err != nil {
		r.Skipped = err.Error()
		return r
	}
	if out, err := exec.Command(filepath.Join(bin, "python"), "-m", "pip", "show", p.pkg).Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "Version: "); ok {
				r.Version = p.pkg + " " + v
			}
		}
	}
	start := func() (*mcpServer, error) {
		argv := slices.Clone(p.command)
		argv[0] = filepath.Join(bin, argv[0])
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), p.env(py)...)
		return connect(cmd)
	}
	run := func(s *mcpServer, code string) (string, error) { return s.call(p.tool, p.args(code)) }

	s, err := start()
	if err != nil {
		r.Skipped = "cannot start: " + err.Error()
		return r
	}
	out, err := run(s, codeRoundTrip)
	if err != nil || !p.check(out) {
		s.close()
		r.Skipped = fmt.Sprintf("1+1 gave %q, %v", firstLine(out), err)
		return r
	}
	for range warmup {
		run(s, codeRoundTrip)
	}
	r.RoundTrip = timeN(*flagN, func() error { _, err := run(s, codeRoundTrip); return err })
	s.close()

	var first []time.Duration
	for range *flagNStart {
		s, err := start()
		if err != nil {
			r.Notes = append(r.Notes, "first result: "+err.Error())
			break
		}
		t0 := time.Now()
		_, err = run(s, codeRoundTrip)
		d := time.Since(t0)
		s.close()
		if err != nil {
			r.Notes = append(r.Notes, "first result: "+err.Error())
			break
		}
		first = append(first, d)
	}
	r.StartCold = summarize(first)

	big := func(code string, check func(string) bool) (stat, float64, error) {
		s, err := start()
		if err != nil {
			return stat{}, 0, err
		}
		defer s.close()
		if _, err := run(s, codeRoundTrip); err != nil {
			return stat{}, 0, err
		}
		st := timeN(*flagNBig, func() error {
			out, err := run(s, code)
			if err == nil && !check(out) {
				err = fmt.Errorf("incomplete output (%d bytes)", len(out))
			}
			return err
		})
		peak, _ := rss(s.cmd.Process.Pid)
		return st, peak, nil
	}
	var berr error
	if r.Stdout10MB, r.Stdout10MBPeak, berr = big(codeStdout, func(out string) bool { return len(out) > 0 }); berr != nil {
		r.Notes = append(r.Notes, "10 MB: "+berr.Error())
	}
	if r.Lines100k, r.Lines100kPeak, berr = big(codeLines, func(out string) bool { return len(out) > 0 }); berr != nil {
		r.Notes = append(r.Notes, "100,000 lines: "+berr.Error())
	}
	return r
}
