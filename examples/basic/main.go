// Command basic starts a Jupyter kernel with the kernel package, runs code in
// it and prints what a notebook cell would show.
//
//	go run ./examples/basic                        # runs a default snippet
//	go run ./examples/basic 'x = 6' 'print(x * 7)' # each argument is one cell
//	go run ./examples/basic -python /path/to/python3 'import sys; sys.version'
//
// Each argument runs as one cell in the same kernel, so names defined in one
// are visible in the next. Ctrl-C interrupts the running cell.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

const defaultCode = `import sys, platform
print("hello from", platform.python_implementation(), platform.python_version())
print("a warning", file=sys.stderr)
sum(range(10))`

func main() {
	python := flag.String("python", "python3", "the Python interpreter whose ipykernel runs the code")
	timeout := flag.Duration("timeout", 0, "interrupt a cell that runs longer than this (0: no limit)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-python PATH] [-timeout D] [code ...]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	cells := flag.Args()
	if len(cells) == 0 {
		cells = []string{defaultCode}
	}
	if err := run(*python, *timeout, cells); err != nil {
		fmt.Fprintln(os.Stderr, "basic:", err)
		os.Exit(1)
	}
}

func run(python string, timeout time.Duration, cells []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	k, err := kernel.Start(ctx, kernel.Options{Python: python})
	if err != nil {
		return err
	}
	defer k.Close()
	fmt.Fprintf(os.Stderr, "kernel started (pid %d)\n", k.Pid())

	failed := false
	for i, code := range cells {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, timeout)
		}
		res, err := k.Execute(cctx, code, kernel.ExecuteOptions{})
		cancel()
		if res != nil {
			fmt.Printf("In [%d]:\n", res.ExecutionCount)
			printOutputs(res.Outputs)
		}
		var ee *kernel.ExecError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			failed = true // the traceback was printed with the outputs
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			fmt.Fprintf(os.Stderr, "cell %d interrupted: %v\n", i+1, err)
			if ctx.Err() != nil {
				return errors.New("interrupted")
			}
			failed = true
		default:
			return fmt.Errorf("cell %d: %w", i+1, err)
		}
	}
	if failed {
		return errors.New("a cell raised an exception")
	}
	return nil
}

// printOutputs writes stream text to stdout or stderr, results and displays
// as text/plain (images as a note of their size), and tracebacks as sent.
func printOutputs(outs []kernel.Output) {
	for _, o := range outs {
		switch o.Type {
		case kernel.OutputStream:
			w := os.Stdout
			if o.Name == "stderr" {
				w = os.Stderr
			}
			fmt.Fprint(w, o.Text)
		case kernel.OutputExecuteResult, kernel.OutputDisplayData:
			for _, mime := range []string{"image/png", "image/jpeg"} {
				if s, ok := o.String(mime); ok {
					fmt.Printf("[%s, %d base64 characters]\n", mime, len(s))
				}
			}
			if s, ok := o.String("text/plain"); ok {
				if o.Type == kernel.OutputExecuteResult {
					fmt.Printf("Out[%d]: ", o.ExecutionCount)
				}
				fmt.Println(s)
			}
		case kernel.OutputError:
			fmt.Fprintln(os.Stderr, strings.Join(o.Traceback, "\n"))
		}
	}
}
