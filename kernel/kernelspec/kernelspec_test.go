package kernelspec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	j := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }
	list := func(ps ...string) string { return strings.Join(ps, string(os.PathListSeparator)) }

	var userEnv map[string]string
	var wantUser string
	switch runtime.GOOS {
	case "windows":
		userEnv = map[string]string{"APPDATA": j("appdata"), "PROGRAMDATA": j("pd")}
		wantUser = j("appdata", "jupyter", "kernels")
	case "darwin":
		userEnv = map[string]string{"HOME": j("home")}
		wantUser = j("home", "Library", "Jupyter", "kernels")
	default:
		userEnv = map[string]string{"HOME": j("home")}
		wantUser = j("home", ".local", "share", "jupyter", "kernels")
	}
	system := systemKernelDirs(mapEnv(userEnv))
	withUser := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range userEnv {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}

	tests := []struct {
		name  string
		env   map[string]string
		extra []string
		want  []string
	}{
		{
			name: "only user and system",
			env:  withUser(nil),
			want: append([]string{wantUser}, system...),
		},
		{
			name: "full precedence order",
			env: withUser(map[string]string{
				"JUPYTER_PATH":      list(j("jp1"), "", j("jp2")),
				"CONDA_PREFIX":      j("conda"),
				"CONDA_DEFAULT_ENV": "myenv",
			}),
			extra: []string{j("extra")},
			want: append([]string{
				j("extra"),
				j("jp1", "kernels"),
				j("jp2", "kernels"),
				wantUser,
				j("conda", "share", "jupyter", "kernels"),
			}, system...),
		},
		{
			name: "JUPYTER_DATA_DIR overrides user dir and duplicates are dropped",
			env: withUser(map[string]string{
				"JUPYTER_PATH":     list(j("jp1"), j("jp1")),
				"JUPYTER_DATA_DIR": j("jp1"),
			}),
			want: append([]string{j("jp1", "kernels")}, system...),
		},
	}
	if runtime.GOOS == "linux" {
		tests = append(tests, struct {
			name  string
			env   map[string]string
			extra []string
			want  []string
		}{
			name: "XDG_DATA_HOME on Linux",
			env:  withUser(map[string]string{"XDG_DATA_HOME": j("xdg")}),
			want: append([]string{j("xdg", "jupyter", "kernels")}, system...),
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Dirs(context.Background(), FindOptions{Getenv: mapEnv(tc.env), ExtraDirs: tc.extra})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Dirs =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestDirsPythonPrefix(t *testing.T) {
	needPython(t)
	t.Parallel()
	in, err := Inspect(context.Background(), realPy)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"JUPYTER_PATH": "/jp", "CONDA_PREFIX": "/conda"}
	f := newFinder(mapEnv(env), nil)
	f.system = nil
	got := f.dirs(context.Background(), FindOptions{Python: realPy})
	want := []kdir{
		{filepath.Clean("/jp/kernels"), "JUPYTER_PATH"},
		{filepath.Join(in.Prefix, "share", "jupyter", "kernels"), "interpreter"},
		{filepath.Clean("/conda/share/jupyter/kernels"), "conda:conda"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dirs =\n%v\nwant\n%v", got, want)
	}
	// A python that cannot be run just contributes nothing.
	got = f.dirs(context.Background(), FindOptions{Python: filepath.Join(t.TempDir(), "nope")})
	if len(got) != 2 {
		t.Errorf("dirs with bad python = %v, want the 2 env dirs", got)
	}
}

// kernelTree builds three kernels dirs (JUPYTER_PATH, user, conda) and
// returns a finder over them with no system dirs.
func kernelTree(t *testing.T) (f finder, high, user, conda string) {
	t.Helper()
	root := t.TempDir()
	high = filepath.Join(root, "jp", "kernels")
	user = filepath.Join(root, "data", "jupyter", "kernels")
	conda = filepath.Join(root, "conda", "share", "jupyter", "kernels")

	writeKernel(t, high, "python3", `{"argv": ["/opt/py/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3 (high)", "language": "python"}`)
	writeKernel(t, user, "python3", `{"argv": ["/low/python"], "display_name": "Python 3 (low)", "language": "python"}`)
	writeKernel(t, user, "ir", `{"argv": ["R", "--slave", "-f", "{connection_file}"], "display_name": "R", "language": "R", "interrupt_mode": "message", "env": {"R_LIBS": "/x"}, "metadata": {"debugger": true}}`)
	writeKernel(t, high, "broken", `{"argv": [`)
	writeKernel(t, user, "broken", `{"argv": ["fine"]}`)
	writeKernel(t, high, "noargv", `{"display_name": "no argv"}`)
	writeKernel(t, high, "badmode", `{"argv": ["x"], "interrupt_mode": "sometimes"}`)
	writeKernel(t, conda, "julia", `{"argv": ["julia", "{connection_file}"], "language": "julia"}`)
	if err := os.MkdirAll(filepath.Join(high, "notakernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(high, "README.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"JUPYTER_PATH":      filepath.Join(root, "jp"),
		"JUPYTER_DATA_DIR":  filepath.Join(root, "data", "jupyter"),
		"CONDA_PREFIX":      filepath.Join(root, "conda"),
		"CONDA_DEFAULT_ENV": "myenv",
	}
	f = newFinder(mapEnv(env), nil)
	f.system = nil
	return f, high, user, conda
}

func TestFind(t *testing.T) {
	t.Parallel()
	f, high, user, conda := kernelTree(t)
	got, err := f.find(context.Background(), FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{
			Name: "ir", Dir: filepath.Join(user, "ir"),
			Argv:        []string{"R", "--slave", "-f", "{connection_file}"},
			DisplayName: "R", Language: "R", InterruptMode: "message",
			Env: map[string]string{"R_LIBS": "/x"}, Metadata: map[string]any{"debugger": true},
			Source: "user",
		},
		{
			Name: "julia", Dir: filepath.Join(conda, "julia"),
			Argv:     []string{"julia", "{connection_file}"},
			Language: "julia", InterruptMode: "signal", Source: "conda:myenv",
		},
		{
			Name: "python3", Dir: filepath.Join(high, "python3"),
			Argv:        []string{"/opt/py/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"},
			DisplayName: "Python 3 (high)", Language: "python", InterruptMode: "signal",
			Source: "JUPYTER_PATH",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find =\n%+v\nwant\n%+v", got, want)
	}

	// ExtraDirs come first and can shadow everything.
	extra := t.TempDir()
	writeKernel(t, extra, "python3", `{"argv": ["/extra/python"]}`)
	got, err = f.find(context.Background(), FindOptions{ExtraDirs: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Source != "extra" || got[2].Argv[0] != "/extra/python" {
		t.Errorf("Find with ExtraDirs: python3 = %+v, want the extra one", got[2])
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.find(ctx, FindOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Find with canceled ctx: err = %v, want context.Canceled", err)
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	f, high, _, _ := kernelTree(t)
	empty := newFinder(mapEnv(map[string]string{"JUPYTER_PATH": t.TempDir()}), nil)
	empty.system = nil

	tests := []struct {
		name         string
		f            finder
		kernel       string
		wantDir      string
		wantNoSuch   bool
		wantContains []string
	}{
		{name: "found", f: f, kernel: "python3", wantDir: filepath.Join(high, "python3")},
		{name: "unknown lists names", f: f, kernel: "nope", wantNoSuch: true, wantContains: []string{`"nope"`, "available: ir, julia, python3"}},
		{name: "malformed shadows valid", f: f, kernel: "broken", wantContains: []string{filepath.Join(high, "broken", "kernel.json")}},
		{name: "missing argv", f: f, kernel: "noargv", wantContains: []string{"argv is missing"}},
		{name: "bad interrupt mode", f: f, kernel: "badmode", wantContains: []string{"interrupt_mode"}},
		{name: "dir without kernel.json", f: f, kernel: "notakernel", wantNoSuch: true},
		{name: "none installed", f: empty, kernel: "python3", wantNoSuch: true, wantContains: []string{"no kernelspecs found", "searched"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.f.get(context.Background(), tc.kernel, FindOptions{})
			if tc.wantDir != "" {
				if err != nil || s.Dir != tc.wantDir || s.Name != tc.kernel {
					t.Fatalf("get(%q) = %+v, %v; want Dir %s", tc.kernel, s, err, tc.wantDir)
				}
				return
			}
			if err == nil {
				t.Fatalf("get(%q) = %+v, want an error", tc.kernel, s)
			}
			if got := errors.Is(err, ErrNoSuchKernel); got != tc.wantNoSuch {
				t.Errorf("errors.Is(%v, ErrNoSuchKernel) = %v, want %v", err, got, tc.wantNoSuch)
			}
			for _, c := range tc.wantContains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
		})
	}
}

func TestExpandArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		cf   string
		want []string
	}{
		{
			name: "connection file",
			spec: Spec{Argv: []string{"python", "-m", "ipykernel_launcher", "-f", "{connection_file}"}},
			cf:   "/tmp/k.json",
			want: []string{"python", "-m", "ipykernel_launcher", "-f", "/tmp/k.json"},
		},
		{
			name: "resource dir and embedded placeholder",
			spec: Spec{Dir: "/k/ir", Argv: []string{"{resource_dir}/run.sh", "--conn={connection_file}", "{other}"}},
			cf:   "c.json",
			want: []string{"/k/ir/run.sh", "--conn=c.json", "{other}"},
		},
		{name: "empty", spec: Spec{}, cf: "c.json", want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]string(nil), tc.spec.Argv...)
			got := tc.spec.ExpandArgv(tc.cf)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ExpandArgv = %q, want %q", got, tc.want)
			}
			if len(orig) > 0 && !reflect.DeepEqual(tc.spec.Argv, orig) {
				t.Errorf("ExpandArgv modified the spec: %q", tc.spec.Argv)
			}
		})
	}
}

func TestForInterpreter(t *testing.T) {
	t.Parallel()
	s := ForInterpreter("/opt/py/bin/python3")
	want := []string{"/opt/py/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"}
	if !reflect.DeepEqual(s.Argv, want) || s.Language != "python" || s.InterruptMode != "signal" || s.Source != "synthesized" || s.Dir != "" {
		t.Errorf("ForInterpreter = %+v", s)
	}
}
