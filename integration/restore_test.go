//go:build unix

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// historyFiles lists the files in a state dir's sessions folder.
func historyFiles(t *testing.T, state string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(state, "sessions"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// A call whose file is missing, a folder, not a regular file or not a
// notebook creates no session and no history file, so nothing is restored
// by the next server either.
func TestBadInputFileCreatesNoSession(t *testing.T) {
	t.Parallel()
	state, dir := t.TempDir(), t.TempDir()
	fifo := filepath.Join(dir, "pipe.py")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	prose := filepath.Join(dir, "prose.ipynb")
	os.WriteFile(prose, []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "markdown", "source": "no code"}]}`), 0o644)
	missing := filepath.Join(dir, "missing")
	s := startServer(t, "--state-dir", state)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_file", map[string]any{"path": missing + ".py"}, "no such file or directory"},
		{"run_file", map[string]any{"path": dir}, "it is a directory"},
		{"run_file", map[string]any{"path": fifo}, "it is not a regular file"},
		{"load_data", map[string]any{"path": missing + ".csv"}, "no such file or directory"},
		{"load_data", map[string]any{"path": dir}, "it is a directory"},
		{"load_data", map[string]any{"path": prose}, "cannot tell the format"},
		{"run_notebook", map[string]any{"path": missing + ".ipynb"}, "no such file or directory"},
		{"run_notebook", map[string]any{"path": prose}, "has no code cells"},
		{"run_notebook", map[string]any{"path": prose, "execute": false}, "has no code cells"},
	} {
		tc.args["session_id"] = "ghost"
		res := s.call(tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: isError=%v %q, want %q", tc.tool, tc.args, res.IsError, text(res), tc.want)
		}
	}
	if rows := s.sessions(); len(rows) != 0 {
		t.Errorf("sessions after bad input only: %+v", rows)
	}
	if files := historyFiles(t, state); len(files) != 0 {
		t.Errorf("history files after bad input only: %v", files)
	}
	s.close()
	s2 := startServer(t, "--state-dir", state)
	if rows := s2.sessions(); len(rows) != 0 {
		t.Errorf("sessions restored by the next server: %+v", rows)
	}
}

// A session restored after a server restart says, on its first run, that
// the kernel is new, that its history did not run in it, and that
// rerun_code rebuilds it.
func TestRestoredSessionSaysItsKernelIsNew(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	s.run("r", "df = [1, 2, 3]")
	s.run("r", "n = len(df)")
	s.run("r", "print(n)")
	s.close()

	s2 := startServer(t, "--state-dir", state)
	if st := text(s2.call("session_status", map[string]any{"session_id": "r"})); !strings.Contains(st, "restored after a server restart") {
		t.Errorf("session_status of a restored session: %s", st)
	}
	res := s2.call("list_variables", map[string]any{"session_id": "r"})
	if !res.IsError || !strings.Contains(text(res), "restored") {
		t.Errorf("list_variables in a restored session: isError=%v %s", res.IsError, text(res))
	}
	_, out := s2.run("r", "len(df)")
	if out.Error == nil || out.Error.EName != "NameError" {
		t.Fatalf("df in a fresh kernel: %+v", out)
	}
	for _, w := range []string{"the server restarted", "fresh kernel", "the 3 earlier block(s) of the history did not run in it", "rerun_code rebuilds them"} {
		if !strings.Contains(out.Note, w) {
			t.Errorf("first run after the restart: note %q lacks %q", out.Note, w)
		}
	}
	if _, out := s2.run("r", "1 + 1"); out.Note != "" {
		t.Errorf("the second run repeats the note: %q", out.Note)
	}
	if res := s2.call("rerun_code", map[string]any{"session_id": "r", "end": 3}); res.IsError {
		t.Fatal(text(res))
	}
	if _, out := s2.run("r", "len(df) + n"); out.Result != "6" || out.Note != "" {
		t.Fatalf("after rerun_code: %+v", out)
	}
}

// A history file with a corrupt line keeps its other blocks across a
// restart: the file as it was is kept beside it, the log counts it, and
// the session says so. A file that cannot be read at all is left as it is,
// and no session writes over it.
func TestCorruptHistoryFileIsKept(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startServer(t, "--state-dir", state)
	s.run("k", "a = 1")
	s.run("k", "b = 2")
	s.run("k", "c = 3")
	s.run("other", "x = 1")
	s.close()

	sessions := filepath.Join(state, "sessions")
	path := filepath.Join(sessions, "k.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = lines[2][:25] + "\n" // line 3: the block "b = 2"
	corrupt := strings.Join(lines, "")
	os.WriteFile(path, []byte(corrupt), 0o600)
	foreign := `{"meta":{"session_id":"someone-else"}}` + "\n" + `{"entry":{"code":"mine = 1","outputs":[]}}` + "\n"
	lost := filepath.Join(sessions, "lost.jsonl")
	os.WriteFile(lost, []byte(foreign), 0o600)

	s2 := startServer(t, "--state-dir", state)
	log := s2.stderr.String()
	if !strings.Contains(log, `msg="restored session histories" count=2 recovered_from_corrupt_files=1 failed=1`) {
		t.Errorf("start-up log does not count 2 restored, 1 recovered, 1 failed:\n%s", log)
	}
	var aside string
	for _, name := range historyFiles(t, state) {
		if strings.HasPrefix(name, "k.jsonl.corrupt-") {
			aside = filepath.Join(sessions, name)
		}
	}
	if b, err := os.ReadFile(aside); aside == "" || err != nil || string(b) != corrupt {
		t.Fatalf("the corrupt file was not kept as it was (%q, %v); files: %v", aside, err, historyFiles(t, state))
	}
	var row *sessionRow
	rows := s2.sessions()
	for i := range rows {
		if rows[i].SessionID == "k" {
			row = &rows[i]
		}
	}
	if row == nil || row.HistoryCount != 2 {
		t.Fatalf("restored sessions: %+v", rows)
	}
	listText := text(s2.call("list_sessions", nil))
	for _, w := range []string{"line(s) 3 could not be read", "2 block(s) were kept", aside, "Not restored", "lost ("} {
		if !strings.Contains(listText, w) {
			t.Errorf("list_sessions lacks %q:\n%s", w, listText)
		}
	}
	if got := text(s2.call("get_history", map[string]any{"session_id": "k"})); !strings.Contains(got, "[1] a = 1") || !strings.Contains(got, "[2] c = 3") {
		t.Errorf("history kept:\n%s", got)
	}
	_, out := s2.run("k", "d = 4")
	if out.Status != "ok" || !strings.Contains(out.Note, "was damaged") || !strings.Contains(out.Note, aside) || !strings.Contains(out.Note, "2 earlier block(s)") {
		t.Errorf("first run in the recovered session: %+v", out)
	}
	if _, out := s2.run("k", "e = 5"); out.Note != "" {
		t.Errorf("the second run repeats the note: %q", out.Note)
	}
	res := s2.call("run_code", map[string]any{"session_id": "lost", "code": "1"})
	if !res.IsError || !strings.Contains(text(res), "cannot be created") {
		t.Errorf("run_code on the unreadable session: isError=%v %s", res.IsError, text(res))
	}
	if b, _ := os.ReadFile(lost); string(b) != foreign {
		t.Errorf("the unreadable file was changed:\n%s", b)
	}
	s2.close()

	s3 := startServer(t, "--state-dir", state)
	got := text(s3.call("get_history", map[string]any{"session_id": "k"}))
	if !strings.Contains(got, "[2] c = 3") || !strings.Contains(got, "[3] d = 4") || !strings.Contains(got, "[4] e = 5") {
		t.Errorf("history after a second restart:\n%s", got)
	}
	if b, _ := os.ReadFile(aside); string(b) != corrupt {
		t.Error("the copy set aside changed")
	}
	if !strings.Contains(s3.stderr.String(), `msg="restored session histories" count=2 recovered_from_corrupt_files=0 failed=1`) {
		t.Errorf("second restart's log:\n%s", s3.stderr.String())
	}
}
