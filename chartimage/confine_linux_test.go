package chartimage_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/chartimage"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Under the kernels' sandbox (bubblewrap, as --sandbox runs kernels) the
// browser still draws, and a chart that asks for a URL gets nothing.
func TestRenderConfined(t *testing.T) {
	_, errB := exec.LookPath("bwrap")
	_, errC := chartimage.FindBrowser()
	if err := errors.Join(errB, errC); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, and the confined renderer cannot run: %v", err)
		}
		t.Skip(err)
	}
	var argv []string
	r := chartimage.New(chartimage.Options{Confine: func(a, rw []string) ([]string, error) {
		out, err := kernel.ConfineCommand(kernel.SandboxOptions{}, rw, a)
		argv = out
		return out, err
	}})
	defer r.Close()
	png, err := r.Render(context.Background(), chartimage.VegaLite, []byte(`{"data":{"values":[{"a":1,"b":2},{"a":2,"b":5}]},"mark":"bar","encoding":{"x":{"field":"a","type":"ordinal"},"y":{"field":"b","type":"quantitative"}}}`))
	if err != nil {
		t.Fatalf("confined render: %v\n%s", err, strings.Join(argv, " "))
	}
	if len(png) < 100 || !strings.Contains(strings.Join(argv, " "), "--unshare-net") {
		t.Errorf("png of %d bytes; command %v", len(png), argv)
	}
}
