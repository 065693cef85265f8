//go:build unix

package kernel

import "testing"

// BenchmarkWidgetsObserveUpdate: the cost of one tqdm step's comm_msg
// update, as the router and the execution's collector both read it.
func BenchmarkWidgetsObserveUpdate(b *testing.B) {
	w := newWidgets()
	replay(b, w, "tqdm")
	var upd recorded
	for _, r := range loadRecorded(b, "tqdm") {
		if r.MsgType == "comm_msg" {
			upd = r
		}
	}
	m := upd.message(b)
	col := newCollector(&ExecuteResult{MsgID: upd.ExecMsgID}, ExecuteOptions{})
	col.widgets = w
	observe := w.observer()
	b.ReportAllocs()
	for b.Loop() {
		observe(m)
		col.iopub(m.Header.MsgType, m.Content)
	}
}
