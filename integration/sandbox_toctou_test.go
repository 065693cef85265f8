//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The server's own file tools, under --sandbox, while code in the session
// swaps a folder of the path for a symlink that leads out and back, every
// millisecond or two: the writes (export_history, save_script,
// save_notebook) never put a file outside, and the reads (run_file,
// run_notebook) never run a file from outside. The swap is an atomic
// exchange (renameat2 RENAME_EXCHANGE), so the name is always there, a
// folder or a link; the test process does it, as the kernel could in its
// working directory.
func TestSandboxToolPathSwapRace(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		outside := l.dir(t, "outside")
		l.file(t, filepath.Join(outside, "code.py"), "print('OUTSIDE-' + 'MARKER')\n", 0o644)
		state := l.dir(t, "state")
		s := l.startServer(t, l.base, l.dir(t, "home"), "--sandbox", "--state-dir", state, "--pool-size", "0")
		if res := s.call("run_code", map[string]any{"code": "print('some history')"}); res.IsError {
			t.Fatal(text(res))
		}
		work := filepath.Join(state, "work")
		for _, d := range []string{"out", "in"} {
			l.dir(t, filepath.Join("state", "work", d))
			link := filepath.Join(work, d+".link")
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			l.chown(t, link)
		}
		l.file(t, filepath.Join(work, "in", "code.py"), "print('INSIDE-' + 'OK')\n", 0o644)

		exchange := func(d string) error {
			return unix.Renameat2(unix.AT_FDCWD, filepath.Join(work, d), unix.AT_FDCWD, filepath.Join(work, d+".link"), unix.RENAME_EXCHANGE)
		}
		if err := exchange("out"); err != nil {
			t.Fatalf("this file system cannot exchange names atomically: %v", err)
		}
		if err := exchange("out"); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		swaps := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, d := range []string{"out", "in"} {
					if err := exchange(d); err != nil {
						t.Errorf("swap %s: %v", d, err)
						return
					}
				}
				time.Sleep(time.Millisecond)
				for _, d := range []string{"out", "in"} {
					if err := exchange(d); err != nil {
						t.Errorf("swap %s back: %v", d, err)
						return
					}
				}
				swaps++
				time.Sleep(time.Millisecond)
			}
		}()

		wrote, ran := 0, 0
		for i := range 50 {
			for _, c := range []struct{ tool, path string }{
				{"export_history", "out/x.txt"},
				{"save_script", "out/s.py"},
				{"save_notebook", "out/n.ipynb"},
			} {
				if res := s.call(c.tool, map[string]any{"path": c.path}); !res.IsError {
					wrote++
				} else if !strings.Contains(text(res), "sandbox") {
					t.Errorf("%s %d: refused without saying why: %s", c.tool, i, text(res))
				}
			}
			for _, tool := range []string{"run_file", "run_notebook"} {
				res := s.call(tool, map[string]any{"path": "in/code.py"})
				if strings.Contains(text(res), "OUTSIDE-MARKER") {
					t.Errorf("%s %d ran the file outside: %s", tool, i, text(res))
				}
				if strings.Contains(text(res), "INSIDE-OK") {
					ran++
				}
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("%d swaps; %d of 150 writes and %d of 100 runs went through", swaps, wrote, ran)
		ents, err := os.ReadDir(outside)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if fmt.Sprint(names) != "[code.py]" {
			t.Errorf("files written outside the sandbox: %v", names)
		}
	})
}

// Under --sandbox-allow over the temporary directory, which holds the
// sandboxed kernels' runtime dirs, the tools do not read another kernel's
// connection file (nor the caller's own): the runtime dirs are hidden
// from the tools as from the kernels.
func TestSandboxToolsHideRuntimeDirs(t *testing.T) {
	forEachLeg(t, func(t *testing.T, l sandboxLeg) {
		tmp, err := filepath.EvalSymlinks(os.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s := l.startServer(t, l.base, l.dir(t, "home"), "--sandbox", "--sandbox-allow", tmp, "--state-dir", l.dir(t, "state"), "--pool-size", "0")
		_, out := s.run("other", "import sys; print(sys.argv[sys.argv.index('-f') + 1])")
		conn := strings.TrimSpace(out.Stdout)
		if !filepath.IsAbs(conn) {
			t.Fatalf("the other kernel's connection file: %q", out.Stdout)
		}
		for _, tool := range []string{"run_file", "load_data", "run_notebook"} {
			res := s.call(tool, map[string]any{"session_id": "reader", "path": conn})
			if !res.IsError || strings.Contains(text(res), "signature_scheme") || !strings.Contains(text(res), "hides") {
				t.Errorf("%s(%s): %s", tool, conn, text(res))
			}
		}
	})
}
