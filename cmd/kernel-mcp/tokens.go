package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"unicode"
)

// user is one line of a tokens file: a name and its bearer token.
type user struct {
	Name  string
	Token string
}

// validUserName keeps user names usable as folder names.
var validUserName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// minTokenLength is the shortest token a tokens file may hold: anything
// shorter can be guessed over HTTP.
const minTokenLength = 16

// maxTokenFile bounds what loadTokenFile reads: a token is a line, and a
// bigger file is the wrong file.
const maxTokenFile = 4096

// loadTokenFile reads --token-file: the token alone, white space around it
// (a trailing newline) dropped. Like a tokens file, it is refused when
// users other than its owner may read or write it: the file exists to keep
// the token from the other local users, who see --token in ps; one they
// can read gives it away just the same, and one they can write lets them
// choose it. A refusal, not a warning: a warning goes to a log the person
// may never read. (On Windows, where Go reports no such mode bits, that
// check is left to the folder's ACL.) A pipe works too, so a shell can
// hand the token over as --token-file <(pass show kernel-mcp).
func loadTokenFile(path string) (string, error) {
	const name = "token file (--token-file / KERNEL_MCP_TOKEN_FILE)"
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	if st.IsDir() {
		return "", fmt.Errorf("%s %s is a directory: name the file that holds the token", name, path)
	}
	if perm := st.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("%s %s can be read or written by group or others (mode %04o): they could take the token or set their own; run chmod 600 %s", name, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", name, path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s %s is over %d bytes: it should hold the token alone", name, path, maxTokenFile)
	}
	token := strings.TrimSpace(string(b))
	switch {
	case token == "":
		return "", fmt.Errorf("%s %s is empty: write the token in it (make one with: openssl rand -hex 32)", name, path)
	case strings.ContainsFunc(token, unicode.IsSpace):
		return "", fmt.Errorf("%s %s holds more than one word: it should hold the token alone, on one line (for several users, use --tokens-file)", name, path)
	}
	return token, nil
}

// loadTokensFile reads a tokens file, refusing one that users other than
// its owner can read (on Windows, where Go reports no such mode bits, that
// check is left to the folder's ACL).
func loadTokensFile(path string) ([]user, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file (--tokens-file / KERNEL_MCP_TOKENS_FILE): %v", err)
	}
	if perm := st.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("tokens file %s is readable by group or others (mode %04o): it holds every user's token; run chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %v", err)
	}
	return parseTokens(path, b)
}

// parseTokens parses "name token" lines; blank lines and lines starting
// with # are skipped. Every error is one line naming the line number, and
// never shows a token.
func parseTokens(path string, b []byte) ([]user, error) {
	var users []user
	names := map[string]int{}
	tokens := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("tokens file %s line %d: want \"name token\", found %d fields", path, n, len(f))
		}
		name, token := f[0], f[1]
		if !validUserName.MatchString(name) || strings.Contains(name, "..") {
			return nil, fmt.Errorf("tokens file %s line %d: invalid user name %q: use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit", path, n, name)
		}
		if len(token) < minTokenLength {
			return nil, fmt.Errorf("tokens file %s line %d: user %s's token is shorter than %d characters (make one with: openssl rand -hex 32)", path, n, name, minTokenLength)
		}
		if first, dup := names[name]; dup {
			return nil, fmt.Errorf("tokens file %s line %d: user %s is already on line %d", path, n, name, first)
		}
		if first, dup := tokens[token]; dup {
			return nil, fmt.Errorf("tokens file %s line %d: user %s has the same token as the user on line %d; every user needs a token of their own", path, n, name, first)
		}
		names[name], tokens[token] = n, n
		users = append(users, user{Name: name, Token: token})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %v", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("tokens file %s names no users: write one \"name token\" line per user", path)
	}
	return users, nil
}
