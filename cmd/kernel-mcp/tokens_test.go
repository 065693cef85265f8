package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// --token-file / KERNEL_MCP_TOKEN_FILE is a setting of its own, and the
// token is given once: with --token, KERNEL_MCP_TOKEN or a tokens file it
// is refused.
func TestParseTokenFileConfig(t *testing.T) {
	c, err := parseConfigFor("linux", []string{"--transport", "streamable-http", "--host", "0.0.0.0"}, env(with(map[string]string{"KERNEL_MCP_TOKEN_FILE": "/run/km-token"})))
	if err != nil || c.TokenFile != "/run/km-token" || c.Token != "" || checkExposure(c) != nil {
		t.Errorf("token file from the environment on a public host: %+v, %v, exposure %v", c, err, checkExposure(c))
	}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{[]string{"--token", "x", "--token-file", "/t"}, nil, []string{"--token-file / KERNEL_MCP_TOKEN_FILE", "not both"}},
		{[]string{"--token-file", "/t"}, map[string]string{"KERNEL_MCP_TOKEN": "x"}, []string{"--token-file", "not both"}},
		{[]string{"--transport", "sse", "--token-file", "/t", "--tokens-file", "/u"}, nil, []string{"--tokens-file", "--token-file", "not both"}},
	} {
		_, err := parseConfigFor("linux", tt.args, env(with(tt.env)))
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q %v: %v, want an error containing %q", tt.args, tt.env, err, w)
			}
		}
	}
}

// A bad token file stops the server at start (exit 2) with one line that
// names the file and the fix, and never shows what the file holds.
func TestRunRefusesTokenFile(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	type badFile struct {
		file string
		want []string
	}
	var cases []badFile
	if runtime.GOOS != "windows" { // where the folder's ACL decides
		readable := write("readable", secret+"\n", 0o644)
		writable := write("writable", secret+"\n", 0o620)
		cases = append(cases,
			badFile{readable, []string{"group or others (mode 0644)", "chmod 600 " + readable}},
			badFile{writable, []string{"group or others (mode 0620)", "chmod 600 " + writable}})
	}
	for _, c := range append(cases, []badFile{
		{write("empty", "", 0o600), []string{"is empty", "openssl rand"}},
		{write("blank", "\n \n", 0o600), []string{"is empty"}},
		{write("two", secret+"\n"+secret+"x\n", 0o600), []string{"more than one word", "--tokens-file"}},
		{write("big", strings.Repeat("a", maxTokenFile+1), 0o600), []string{"over 4096 bytes"}},
		{dir, []string{"is a directory"}},
		{filepath.Join(dir, "missing"), []string{"--token-file / KERNEL_MCP_TOKEN_FILE", "no such file"}},
	}...) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--transport", "streamable-http", "--port", "0", "--state-dir", "none", "--pool-size", "0", "--token-file", c.file}, env(base), &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != exitUsage || strings.Contains(msg, "\n") || strings.Contains(msg, secret) || !strings.Contains(msg, c.file) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line naming the file, without the token", c.file, code, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: stderr %q lacks %q", c.file, msg, w)
			}
		}
	}
}

// The server started with --token-file wants the file's token, its
// trailing newline dropped, from every HTTP client.
func TestRunHTTPTokenFile(t *testing.T) {
	const token = "from-the-file-0123456789"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`serving \S+ at (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--transport", transportStreamableHTTP, "--port", "0", "--state-dir", "none", "--pool-size", "0"},
			env(with(map[string]string{"KERNEL_MCP_TOKEN_FILE": file})), io.Discard, pw)
		pw.Close()
	}()
	var url string
	select {
	case url = <-urls:
	case code := <-exit:
		t.Fatalf("run exited %d before serving", code)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientTransport(transportStreamableHTTP, url, token), nil)
	if err != nil {
		t.Fatalf("connect with the file's token: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("list tools: %v", err)
	}
	cs.Close()
	for _, wrong := range []string{"", "wrong"} {
		if _, err := client.Connect(ctx, clientTransport(transportStreamableHTTP, url, wrong), nil); err == nil {
			t.Errorf("connected with token %q", wrong)
		}
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d after cancel, want 0", code)
	}
}
