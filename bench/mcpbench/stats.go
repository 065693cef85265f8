// Sample summaries: medians and p95s of timed runs.

package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// stat is a sample summary in milliseconds.
type stat struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
}

func summarize(d []time.Duration) stat {
	if len(d) == 0 {
		return stat{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	med := ms(s[len(s)/2])
	if len(s)%2 == 0 {
		med = (ms(s[len(s)/2-1]) + ms(s[len(s)/2])) / 2
	}
	p95 := ms(s[max(0, int(math.Ceil(0.95*float64(len(s))))-1)]) // nearest rank
	return stat{N: len(s), Median: med, P95: p95}
}

// timeN runs f n times and summarizes; a failing run ends the series.
func timeN(n int, f func() error) stat {
	d := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
			break
		}
		d = append(d, time.Since(t0))
	}
	return summarize(d)
}

// summarizeSigned is summarize for samples that can be negative.
func summarizeSigned(d []time.Duration) stat {
	if len(d) == 0 {
		return stat{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e6 }
	med := ms(s[len(s)/2])
	if len(s)%2 == 0 {
		med = (ms(s[len(s)/2-1]) + ms(s[len(s)/2])) / 2
	}
	return stat{N: len(s), Median: med, P95: ms(s[max(0, int(math.Ceil(0.95*float64(len(s))))-1)])}
}
