package kernel

import (
	"strings"
	"testing"
	"time"
)

// A memory limit is the kernel's RLIMIT_AS, survives a restart, and turns
// an oversized allocation into a MemoryError the kernel lives through.
func TestMemoryLimitIsTheKernelsRLIMIT_AS(t *testing.T) {
	t.Parallel()
	const limit = 1 << 30
	k := startKernel(t, Options{MemoryLimit: limit})
	check := func() {
		t.Helper()
		res := mustExecute(t, k, "import resource\nresource.getrlimit(resource.RLIMIT_AS)")
		if got, _ := res.Outputs[0].String("text/plain"); got != "(1073741824, 1073741824)" {
			t.Fatalf("RLIMIT_AS = %s, want (1073741824, 1073741824)", got)
		}
	}
	check()
	_, err := k.Execute(testCtx(t, 60*time.Second), "x = bytearray(4 * 1024**3)", ExecuteOptions{})
	wantExecError(t, err, "MemoryError")
	if res := mustExecute(t, k, "1 + 1"); !strings.Contains(describe(res.Outputs[0]), "2") {
		t.Fatalf("after MemoryError: %v", describeAll(res.Outputs))
	}
	if err := k.Restart(testCtx(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	check()
}
