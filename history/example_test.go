package history_test

import (
	"encoding/json"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/history"
)

func Example() {
	plain := func(s string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"text/plain": json.RawMessage(fmt.Sprintf("%q", s))}
	}
	entries := []history.Entry{
		{Code: "import math\nresult = math.sqrt(144)\nresult", Status: "ok", ExecutionCount: 1, Generation: 1,
			Outputs: []history.Output{{OutputType: "execute_result", Data: plain("12.0")}}},
		{Code: "result + 1", Status: "ok", ExecutionCount: 2, Generation: 1,
			Outputs: []history.Output{{OutputType: "execute_result", Data: plain("13.0")}}},
		{Code: "b", Status: "error", ExecutionCount: 1, Generation: 2,
			Outputs: []history.Output{{OutputType: "error", EName: "NameError", EValue: "name 'b' is not defined"}}},
	}
	fmt.Print(history.Transcript(entries, 1))

	// get_history(start=-1): the last block, numbered as in the full list.
	start := -1
	lo, hi := history.Slice(len(entries), &start, nil)
	fmt.Println("---")
	fmt.Print(history.Transcript(entries[lo:hi], lo+1))
	// Output:
	// [1] import math
	//     result = math.sqrt(144)
	//     result
	// 12.0
	//
	// [2] result + 1
	// 13.0
	//
	// --- kernel restarted: variables before this point are gone ---
	// [3] b
	// NameError: name 'b' is not defined
	// ---
	// [3] b
	// NameError: name 'b' is not defined
}

func ExampleSlice() {
	n := 5 // blocks in the history
	for _, c := range []struct{ start, end *int }{{ptr(0), ptr(2)}, {ptr(-2), nil}, {ptr(1), ptr(-1)}, {nil, nil}, {ptr(9), nil}} {
		lo, hi := history.Slice(n, c.start, c.end)
		fmt.Println(lo, hi)
	}
	// Output:
	// 0 2
	// 3 5
	// 1 4
	// 0 5
	// 5 5
}

func ptr(i int) *int { return &i }
