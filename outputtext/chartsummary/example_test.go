package chartsummary_test

import (
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/outputtext/chartsummary"
)

func Example() {
	// A Plotly figure as a kernel's output bundle carries it; plotly 6 and
	// later write numpy arrays as base64 typed arrays like "y" here.
	fig := []byte(`{
		"data": [
			{"type": "bar", "name": "2024", "x": ["Q1", "Q2", "Q3", "Q4"], "y": [10, 14, 9, 17]},
			{"type": "bar", "name": "2025", "x": ["Q1", "Q2", "Q3", "Q4"],
			 "y": {"dtype": "i1", "bdata": "DBAVEw=="}}
		],
		"layout": {"title": {"text": "Revenue"}, "yaxis": {"title": {"text": "M€"}}}
	}`)
	s, err := chartsummary.Summarize("application/vnd.plotly.v1+json", fig)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Text())
	// Output: Plotly bar chart "Revenue" — x: 4 categories: Q1, Q2, Q3, Q4, y: M€ (9–21); 2 series: 2024 (4 points), 2025 (4)
}
