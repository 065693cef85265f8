package kernel

import (
	"fmt"
	"slices"
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

// A display formatter that raises fails the cell with a reply that names
// no exception ("NoneType: None", as ipykernel 7 sends it); the error is
// the one its error output shows, whichever came first.
func TestCollectorFormatterError(t *testing.T) {
	reply := []byte(`{"status": "error", "ename": "NoneType", "evalue": "None", "traceback": ["tb"]}`)
	errOut := []byte(`{"ename": "ValueError", "evalue": "Mime type rendering requires nbformat>=4.2.0 but it is not installed", "traceback": ["tb"]}`)
	result := []byte(`{"data": {"text/plain": "<A>"}, "metadata": {}, "execution_count": 1}`)
	for _, replyFirst := range []bool{true, false} {
		res := &ExecuteResult{}
		c := newCollector(res, ExecuteOptions{})
		if replyFirst {
			c.reply(reply)
		}
		c.iopub("error", errOut)
		c.iopub("execute_result", result)
		if !replyFirst {
			c.reply(reply)
		}
		c.finish()
		if e := res.Error; e == nil || e.EName != "ValueError" || !strings.HasPrefix(e.EValue, "Mime type rendering") || len(e.Traceback) != 1 {
			t.Errorf("reply first %v: Error %+v, want the ValueError", replyFirst, e)
		}
	}
}

// Stream text keeps joining its output across an update_display_data, and
// outputs past MaxOutputs are counted, not written into a stream already
// closed: each case is the message sequence a cell sends.
func TestCollectorStreamAfterUpdateOrDrop(t *testing.T) {
	stream := func(text string) []byte {
		return []byte(`{"name": "stdout", "text": "` + text + `"}`)
	}
	display := func(v string) []byte {
		return []byte(`{"data": {"text/plain": "` + v + `"}, "metadata": {}, "transient": {"display_id": "h"}}`)
	}
	type msg struct {
		typ     string
		content []byte
	}
	for _, tc := range []struct {
		name         string
		opts         ExecuteOptions
		msgs         []msg
		want         []string
		wantOmitted  int
		wantOmittedB int
	}{{
		// h = display('x', display_id=True); for i in range(3): print(i); h.update(i)
		name: "print then update, in a loop",
		msgs: []msg{{"display_data", display("'x'")},
			{"stream", stream(`0\n`)}, {"update_display_data", display("0")},
			{"stream", stream(`1\n`)}, {"update_display_data", display("1")},
			{"stream", stream(`2\n`)}, {"update_display_data", display("2")}},
		want: []string{"display_data 2", `stream stdout "0\n1\n2\n"`},
	}, {
		name: "print then update, with a stream limit",
		opts: ExecuteOptions{MaxStreamBytes: 1 << 10},
		msgs: []msg{{"display_data", display("'x'")},
			{"stream", stream(`0\n`)}, {"update_display_data", display("0")},
			{"stream", stream(`1\n`)}, {"update_display_data", display("1")}},
		want: []string{"display_data 1", `stream stdout "0\n1\n"`},
	}, {
		// print('a'); display('d'); print('b'); print('c') with MaxOutputs 1
		name: "outputs past MaxOutputs",
		opts: ExecuteOptions{MaxOutputs: 1},
		msgs: []msg{{"stream", stream(`a\n`)}, {"display_data", display("d")},
			{"stream", stream(`b\n`)}, {"stream", stream(`c\n`)}},
		want:        []string{`stream stdout "a\n"`},
		wantOmitted: 2, // the display, and "b\nc\n" after it
	}, {
		name: "a dropped stream is one output however many chunks",
		opts: ExecuteOptions{MaxOutputs: 1, MaxStreamBytes: 1 << 10},
		msgs: []msg{{"display_data", display("d")},
			{"stream", stream(`a\n`)}, {"stream", stream(`b\n`)}, {"stream", stream(`c\n`)},
			{"error", []byte(`{"ename": "E", "evalue": "v", "traceback": []}`)},
			{"stream", stream(`d\n`)}},
		want:        []string{"display_data d", "error E"},
		wantOmitted: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := &ExecuteResult{}
			c := newCollector(res, tc.opts)
			for _, m := range tc.msgs {
				c.iopub(m.typ, m.content)
			}
			c.flush()
			var got []string
			for _, o := range res.Outputs {
				switch o.Type {
				case OutputStream:
					got = append(got, fmt.Sprintf("stream %s %q", o.Name, o.Text))
				case OutputError:
					got = append(got, "error "+o.EName)
				default:
					v, _ := o.String("text/plain")
					got = append(got, o.Type+" "+v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("outputs:\n got %q\nwant %q", got, tc.want)
			}
			if res.OmittedOutputs != tc.wantOmitted || res.OmittedBytes != tc.wantOmittedB {
				t.Errorf("omitted %d outputs, %d bytes; want %d, %d", res.OmittedOutputs, res.OmittedBytes, tc.wantOmitted, tc.wantOmittedB)
			}
		})
	}
}
