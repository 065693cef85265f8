package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
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
