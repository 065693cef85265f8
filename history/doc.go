// Package history is a session's record: entries, Python-style slicing,
// renderers (transcript, script, notebook), a notebook reader, on-disk
// persistence.
//
// A session appends one [Entry] per executed block and renders any slice of
// them, numbered from [1] the way python-repl-mcp does:
//
//	entries := []history.Entry{
//		{Code: "a = 1", Status: "ok", ExecutionCount: 1, Generation: 1},
//		{Code: "a", Status: "ok", ExecutionCount: 2, Generation: 1, Outputs: []history.Output{{
//			OutputType: "execute_result",
//			Data:       map[string]json.RawMessage{"text/plain": json.RawMessage(`"1"`)},
//		}}},
//	}
//	start := -1 // entries[-1:]
//	lo, hi := history.Slice(len(entries), &start, nil)
//	fmt.Print(history.Transcript(entries[lo:hi], lo+1))
//	// [2] a
//	// 1
//
// The package knows nothing about kernels or MCP: [Transcript], [Script] and
// [Notebook] are pure functions of the entries, [ParseNotebook] reads the
// cells of a notebook or py:percent script back from its bytes, and a
// [Store] keeps one session's entries in an append-only JSON-lines file so
// a restarted server can reopen them.
package history
