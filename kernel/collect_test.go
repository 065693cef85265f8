package kernel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStreamTextBounds(t *testing.T) {
	t.Run("unbounded", func(t *testing.T) {
		var st streamText
		st.start("a")
		st.write("bc")
		if got, n := st.finish(); got != "abc" || n != 0 {
			t.Fatalf("%q %d", got, n)
		}
	})
	t.Run("many small writes", func(t *testing.T) {
		st := streamText{half: 5}
		st.start("")
		var all strings.Builder
		for i := range 1000 {
			s := string(rune('a' + i%26))
			st.write(s)
			all.WriteString(s)
		}
		got, n := st.finish()
		want := all.String()[:5] + "\n... [990 bytes of output omitted] ...\n" + all.String()[995:]
		if got != want || n != 990 {
			t.Fatalf("got %q (%d), want %q", got, n, want)
		}
	})
	t.Run("one huge write", func(t *testing.T) {
		st := streamText{half: 4}
		st.start("xy")
		st.write(strings.Repeat("z", 1<<20) + "END!")
		got, n := st.finish()
		if got != "xyzz\n... [1048574 bytes of output omitted] ...\nEND!" || n != 1048574 {
			t.Fatalf("%q %d", got, n)
		}
	})
	t.Run("cuts on whole characters", func(t *testing.T) {
		st := streamText{half: 4}
		st.start(strings.Repeat("é", 50))
		got, _ := st.finish()
		if !utf8.ValidString(got) || !strings.HasPrefix(got, "éé\n") || !strings.HasSuffix(got, "\néé") {
			t.Fatalf("%q", got)
		}
	})
}

// With limits, the collector keeps the first outputs, always the error, and
// counts the rest; clear_output resets the count.
func TestCollectorBounds(t *testing.T) {
	res := &ExecuteResult{}
	c := newCollector(res, ExecuteOptions{MaxOutputs: 3, MaxStreamBytes: 8})
	display := []byte(`{"data": {"text/plain": "d"}, "metadata": {}}`)
	for range 10 {
		c.iopub("display_data", display)
	}
	c.iopub("error", []byte(`{"ename": "E", "evalue": "v", "traceback": []}`))
	c.flush()
	if len(res.Outputs) != 4 || res.OmittedOutputs != 7 || res.Outputs[3].Type != OutputError {
		t.Fatalf("outputs %d omitted %d", len(res.Outputs), res.OmittedOutputs)
	}
	c.iopub("clear_output", []byte(`{"wait": false}`))
	c.iopub("stream", []byte(`{"name": "stdout", "text": "0123456789"}`))
	c.iopub("stream", []byte(`{"name": "stdout", "text": "abcdefghij"}`))
	c.flush()
	if len(res.Outputs) != 1 || res.OmittedOutputs != 0 || res.Outputs[0].Text != "0123\n... [12 bytes of output omitted] ...\nghij" || res.OmittedBytes != 12 {
		t.Fatalf("after clear: %+v omitted %d/%d", res.Outputs, res.OmittedOutputs, res.OmittedBytes)
	}
}

// The reply decides failure: error outputs before an ok reply leave Error
// nil; an error reply without a traceback borrows its error output's.
func TestCollectorErrorFollowsReply(t *testing.T) {
	res := &ExecuteResult{}
	c := newCollector(res, ExecuteOptions{})
	c.iopub("error", []byte(`{"ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": ["tb1"]}`))
	c.iopub("error", []byte(`{"ename": "ValueError", "evalue": "v", "traceback": ["tb2"]}`))
	c.reply([]byte(`{"status": "ok", "execution_count": 3}`))
	if res.Error != nil || len(res.ErrorOutputs()) != 2 {
		t.Fatalf("ok reply: Error %v, %d error outputs", res.Error, len(res.ErrorOutputs()))
	}
	c.reply([]byte(`{"status": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": []}`))
	if res.Error == nil || res.Error.EName != "ZeroDivisionError" || len(res.Error.Traceback) != 1 || res.Error.Traceback[0] != "tb1" {
		t.Fatalf("error reply: %+v", res.Error)
	}
}
