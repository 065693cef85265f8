package main

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// otherProgramsFlags are the --flags the docs write that belong to other
// programs, each with the program; every other --flag in README.md and
// docs/*.md must be one of kernel-mcp's.
var otherProgramsFlags = map[string]string{
	"existing":                     "jupyter console --existing",
	"execute":                      "jupyter nbconvert --execute",
	"bind-fd":                      "bwrap --bind-fd",
	"user":                         "pip install --user",
	"scope":                        "claude mcp add --scope",
	"header":                       "claude mcp add --header",
	"serve":                        "bench/jupyter_client_bench.py --serve",
	"compare":                      "bench/context/context.py --compare",
	"dump":                         "bench/context/context.py --dump",
	"json":                         "bench/context/context.py --json",
	"charts":                       "bench/context/context.py --charts",
	"runs":                         "bench/charts/charts.py --runs",
	"IPythonKernel._execute_sleep": "ipykernel's option",
	"ZMQChannelsWebsocketConnection.iopub_data_rate_limit": "Jupyter Server's and Kernel Gateway's option",
	"MappingKernelManager.cull_idle_timeout":               "Jupyter Server's and Enterprise Gateway's option",
	"EnterpriseGatewayApp.auth_token":                      "Enterprise Gateway's option",
}

// otherProgramsVariables are the environment variables of the MCP_ and
// KERNEL_MCP_ kinds that the docs name and that other programs read.
var otherProgramsVariables = map[string]string{
	"MCP_TOOL_TIMEOUT": "Claude Code's request timeout",
	"KERNEL_MCP_BIN":   "the binary make context measures",
}

// docFiles reads README.md and docs/*.md, keyed by their path from the
// repository's root.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join("..", "..", "README.md"))
	docs := make(map[string]string, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.ToSlash(strings.TrimPrefix(p, filepath.Join("..", "..")+string(filepath.Separator)))] = string(data)
	}
	if _, ok := docs["docs/configuration.md"]; !ok {
		t.Fatal("there is no docs/configuration.md")
	}
	return docs
}

// flagToken is a --flag written in prose or code: not a heading's anchor
// (#--sandbox-linux), not the middle of a word, and ending before = or a
// value.
var flagToken = regexp.MustCompile(`(?:^|[^\w#-])--([A-Za-z][\w.-]*)`)

func flagTokens(text string) []string {
	var out []string
	for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.TrimRight(m[1], ".-"))
	}
	return out
}

// variableToken is an environment variable of kernel-mcp's kinds.
var variableToken = regexp.MustCompile(`\b(?:KERNEL_|PYTHON_)?MCP_[A-Z][A-Z0-9_]*[A-Z0-9]\b`)

// defined says whether the command's own FlagSet (parseConfig's) accepts
// --name: parsing "--name=x --version" sets the flag and stops at
// --version before any value is checked or anything is looked at.
func defined(name string) bool {
	_, err := parseConfig([]string{"--" + name + "=x", "--version"}, env(nil))
	return err == nil || !strings.Contains(err.Error(), "flag provided but not defined")
}

// helpEntries returns the flags --help lists and the environment variables
// it names for them.
func helpEntries(t *testing.T) (flags, vars []string) {
	t.Helper()
	var buf bytes.Buffer
	usage(&buf, env(nil))
	entry := regexp.MustCompile(`(?m)^  --(\S+)(?:  \(env (\S+)\))?$`)
	for _, m := range entry.FindAllStringSubmatch(buf.String(), -1) {
		flags = append(flags, m[1])
		if m[2] != "" {
			vars = append(vars, m[2])
		}
	}
	if len(flags) < len(settings) {
		t.Fatalf("--help lists %d flags, fewer than the %d settings:\n%s", len(flags), len(settings), buf.String())
	}
	return flags, vars
}

// configVariables returns the variables that the command's own code reads
// by name (getenv("HOME"), os.Getenv(...)) besides the settings' ones.
func configVariables(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`(?i)getenv\("(\w+)"\)`)
	var vars []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			vars = append(vars, m[1])
		}
	}
	return vars
}

// moduleVariables returns every variable of kernel-mcp's kinds that the
// module's Go code names in a string literal, and, apart, the KERNEL_MCP_
// ones that code outside tests reads with os.Getenv.
func moduleVariables(t *testing.T) (named map[string]bool, read []string) {
	t.Helper()
	named = map[string]bool{}
	literal := regexp.MustCompile(`"((?:KERNEL_|PYTHON_)?MCP_[A-Z][A-Z0-9_]*[A-Z0-9])"`)
	getenv := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("(KERNEL_MCP_\w+)"\)`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			named[m[1]] = true
		}
		if !strings.HasSuffix(path, "_test.go") {
			for _, m := range getenv.FindAllStringSubmatch(string(src), -1) {
				read = append(read, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return named, read
}

// TestDocsFlags keeps the docs' flags and variables true: every flag and
// variable the command has is in docs/configuration.md, and every --flag and
// kernel-mcp variable that README.md and docs/*.md write is one the command
// or the code reads (or, listed above, another program's).
func TestDocsFlags(t *testing.T) {
	docs := docFiles(t)
	config := docs["docs/configuration.md"]
	configFlags := flagTokens(config)

	flags, helpVars := helpEntries(t)
	for _, f := range flags {
		if !defined(f) {
			t.Errorf("--help lists --%s, which the command does not accept", f)
		}
		if !slices.Contains(configFlags, f) {
			t.Errorf("docs/configuration.md does not name --%s", f)
		}
	}
	for _, s := range settings {
		if !slices.Contains(flags, s.flag) || !slices.Contains(helpVars, s.env) {
			t.Errorf("--help lacks --%s / %s", s.flag, s.env)
		}
	}

	named, read := moduleVariables(t)
	wantVars := slices.Concat(helpVars, configVariables(t), read)
	slices.Sort(wantVars)
	wantVars = slices.Compact(wantVars)
	for _, v := range wantVars {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(config) {
			t.Errorf("docs/configuration.md does not name the variable %s, which the code reads", v)
		}
	}

	usedFlags := map[string]bool{}
	usedVars := map[string]bool{}
	for _, file := range slices.Sorted(maps.Keys(docs)) {
		for _, f := range flagTokens(docs[file]) {
			usedFlags[f] = true
			if _, other := otherProgramsFlags[f]; !other && !defined(f) {
				t.Errorf("%s writes --%s, which kernel-mcp does not define (another program's? list it in otherProgramsFlags)", file, f)
			}
		}
		for _, v := range variableToken.FindAllString(docs[file], -1) {
			usedVars[v] = true
			if _, other := otherProgramsVariables[v]; !other && !named[v] && !slices.Contains(wantVars, v) {
				t.Errorf("%s names the variable %s, which no Go code here reads (another program's? list it in otherProgramsVariables)", file, v)
			}
		}
	}
	for f, prog := range otherProgramsFlags {
		if !usedFlags[f] {
			t.Errorf("otherProgramsFlags lists --%s (%s), which no doc writes any more: remove it", f, prog)
		}
		if defined(f) {
			t.Errorf("otherProgramsFlags lists --%s (%s), which is kernel-mcp's own flag", f, prog)
		}
	}
	for v, prog := range otherProgramsVariables {
		if !usedVars[v] {
			t.Errorf("otherProgramsVariables lists %s (%s), which no doc names any more: remove it", v, prog)
		}
	}
}
