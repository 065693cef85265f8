// Parsers of single setting values (switches, byte counts, seconds,
// absolute paths) and the default state directory.

package main

import (
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// parseSwitch reads a switch's value; "" is false.
func parseSwitch(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	}
	return false, invalid(name, v, "want true or false")
}

// parseBytes parses a non-negative byte count with an optional binary
// suffix: K, M, G or T (also KB, KiB, ..., any case). 1K is 1024 bytes.
func parseBytes(v string) (int64, error) {
	bad := errors.New("want bytes with an optional K, M or G suffix, such as 2G or 512M (0 means none)")
	num := strings.TrimRight(v, "KMGTkmgtIiBb")
	suffix := strings.ToUpper(strings.TrimSpace(v[len(num):]))
	num = strings.TrimSpace(num)
	shift := 0
	switch strings.TrimSuffix(strings.TrimSuffix(suffix, "B"), "I") {
	case "":
		if suffix != "" && suffix != "B" {
			return 0, bad
		}
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	case "T":
		shift = 40
	default:
		return 0, bad
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errors.New("too large")
	case err != nil || n < 0:
		return 0, bad
	case n > math.MaxInt64>>shift:
		return 0, errors.New("too large")
	}
	return n << shift, nil
}

// parseSeconds parses a non-negative number of seconds, fractions allowed.
func parseSeconds(v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, errors.New("want a number of seconds, such as 30 or 2.5 (0 means none)")
	case f < 0:
		return 0, errors.New("must not be negative (0 means none)")
	case f*float64(time.Second) >= math.MaxInt64:
		return 0, errors.New("too large")
	}
	return time.Duration(f * float64(time.Second)), nil
}

// defaultStateDir is where histories are kept when --state-dir is not given:
// $XDG_STATE_HOME/kernel-mcp if set (and absolute), else the platform's
// per-user state or application-data directory. It returns "" when no home
// directory is known.
func defaultStateDir(goos string, getenv func(string) string) string {
	join := filepath.Join
	if goos == "windows" {
		// Build Windows paths even when tests run elsewhere.
		join = func(elem ...string) string { return strings.Join(elem, `\`) }
	}
	if x := getenv("XDG_STATE_HOME"); x != "" && isAbs(goos, x) {
		return join(x, "kernel-mcp")
	}
	switch goos {
	case "windows":
		if d := getenv("LocalAppData"); d != "" {
			return join(d, "kernel-mcp")
		}
		if d := getenv("USERPROFILE"); d != "" {
			return join(d, "AppData", "Local", "kernel-mcp")
		}
		return ""
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return join(h, "Library", "Application Support", "kernel-mcp")
		}
		return ""
	default:
		if h := getenv("HOME"); h != "" {
			return join(h, ".local", "state", "kernel-mcp")
		}
		return ""
	}
}

func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	// C:\dir, C:/dir or \\server\share.
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//")
}
