package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tokA, tokB = "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"

func TestParseTokens(t *testing.T) {
	users, err := parseTokens("f", []byte("# team\n\nalice "+tokA+"\n  bob\t"+tokB+"  \n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users[0] != (user{"alice", tokA}) || users[1] != (user{"bob", tokB}) {
		t.Fatalf("users = %+v", users)
	}
}

// Every bad tokens file is one line naming the line, never showing a token.
func TestParseTokensInvalid(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"one field", "alice " + tokA + "\nbob\n", []string{"line 2", `"name token"`}},
		{"three fields", "alice " + tokA + " extra\n", []string{"line 1", "3 fields"}},
		{"bad name", "../etc " + tokA + "\n", []string{"line 1", "invalid user name"}},
		{"short token", "alice short\n", []string{"line 1", "shorter than 16"}},
		{"duplicate name", "alice " + tokA + "\nalice " + tokB + "\n", []string{"line 2", "alice", "already on line 1"}},
		{"duplicate token", "alice " + tokA + "\n# x\nbob " + tokA + "\n", []string{"line 3", "same token as the user on line 1"}},
		{"empty", "# nobody\n\n", []string{"names no users"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTokens("/etc/km-tokens", []byte(tt.file))
			if err == nil {
				t.Fatal("want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || strings.Contains(msg, tokA) || strings.Contains(msg, tokB) || !strings.Contains(msg, "/etc/km-tokens") {
				t.Errorf("error must be one line, name the file and show no token: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

// A tokens file others can read is refused at start with the fix, as a
// usage error (exit 2) in one line; so is a bad one.
func TestRunRefusesTokensFile(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("alice "+tokA+"\n"), 0o644)
	os.Chmod(open, 0o644)
	dup := filepath.Join(dir, "dup")
	os.WriteFile(dup, []byte("alice "+tokA+"\nbob "+tokA+"\n"), 0o600)
	for _, c := range []struct {
		file string
		want string
	}{
		{open, "readable by group or others (mode 0644)"},
		{open, "chmod 600 " + open},
		{dup, "same token"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--transport", "streamable-http", "--port", "0", "--state-dir", "none", "--pool-size", "0", "--tokens-file", c.file}, env(base), &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != exitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line containing %q", c.file, code, msg, c.want)
		}
	}
}

func TestParseUsersConfigInvalid(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tokens-file", "/t"}, "streamable-http or sse"},
		{[]string{"--transport", "sse", "--tokens-file", "/t", "--token", "x"}, "not both"},
		{[]string{"--max-sessions-per-user", "2"}, "without --tokens-file"},
		{[]string{"--transport", "sse", "--tokens-file", "/t", "--max-sessions-per-user", "-1"}, "KERNEL_MCP_MAX_SESSIONS_PER_USER"},
	} {
		_, err := parseConfigFor("linux", c.args, env(base))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	c, err := parseConfigFor("linux", []string{"--transport", "streamable-http", "--host", "0.0.0.0", "--tokens-file", "/t", "--max-sessions-per-user", "3"}, env(base))
	if err != nil || c.TokensFile != "/t" || c.MaxSessionsPerUser != 3 || checkExposure(c) != nil {
		t.Errorf("tokens file on a public host: %+v, %v, exposure %v", c, err, checkExposure(c))
	}
}
