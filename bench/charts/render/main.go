// Command render times the server's chart renderer (chartimage) on spec
// files, for bench/charts/charts.py: cold (New, the first Render, which
// starts the browser, and Close) and warm (Render on a running browser),
// and the memory of the browser's process tree after the warm renders.
// It prints one JSON object.
//
//	go run ./bench/charts/render -runs 7 plotly:a.json vega-lite:b.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/chartimage"
)

type result struct {
	Name    string    `json:"name"`
	Kind    string    `json:"kind"`
	Bytes   int       `json:"spec_bytes"`
	PNG     int       `json:"png_bytes"`
	ColdMS  []float64 `json:"cold_ms"`
	WarmMS  []float64 `json:"warm_ms"`
	Failure string    `json:"error,omitempty"`
}

func main() {
	runs := flag.Int("runs", 7, "cold and warm renders of each spec")
	flag.Parse()
	r0 := chartimage.New(chartimage.Options{})
	if err := r0.Available(); err != nil {
		log.Fatal(err)
	}
	browser := r0.Browser()
	r0.Close()
	ctx := context.Background()
	var out struct {
		Browser string   `json:"browser"`
		Charts  []result `json:"charts"`
		// The browser's process tree after each spec was drawn warm
		// (after it and every spec before it).
		Memory []memory `json:"browser_memory"`
	}
	out.Browser = browser
	type spec struct {
		kind chartimage.Kind
		data []byte
		name string
	}
	var specs []spec
	for _, a := range flag.Args() {
		k, path, ok := strings.Cut(a, ":")
		if !ok {
			log.Fatalf("%s: want kind:path", a)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			log.Fatal(err)
		}
		specs = append(specs, spec{chartimage.Kind(k), b, strings.TrimSuffix(filepath.Base(path), ".json")})
	}
	for _, s := range specs {
		res := result{Name: s.name, Kind: string(s.kind), Bytes: len(s.data)}
		for range *runs {
			r := chartimage.New(chartimage.Options{Timeout: 120 * time.Second})
			t := time.Now()
			png, err := r.Render(ctx, s.kind, s.data)
			res.ColdMS = append(res.ColdMS, ms(time.Since(t)))
			r.Close()
			if err != nil {
				res.Failure = err.Error()
				break
			}
			res.PNG = len(png)
		}
		out.Charts = append(out.Charts, res)
	}
	// Warm: one renderer, its browser started by a first render not timed.
	r := chartimage.New(chartimage.Options{Timeout: 120 * time.Second})
	defer r.Close()
	if len(specs) > 0 {
		if _, err := r.Render(ctx, specs[0].kind, specs[0].data); err != nil {
			log.Fatal(err)
		}
	}
	for i, s := range specs {
		for range *runs {
			t := time.Now()
			_, err := r.Render(ctx, s.kind, s.data)
			d := time.Since(t)
			if err != nil {
				out.Charts[i].Failure = err.Error()
				break
			}
			out.Charts[i].WarmMS = append(out.Charts[i].WarmMS, ms(d))
		}
		m := memory{After: s.name}
		m.Processes, m.RSSMB, m.PSSMB = treeMemory(os.Getpid())
		out.Memory = append(out.Memory, m)
	}
	b, _ := json.MarshalIndent(out, "", " ")
	fmt.Println(string(b))
}

type memory struct {
	After     string  `json:"after"`
	Processes int     `json:"processes"`
	RSSMB     float64 `json:"rss_mb"`
	PSSMB     float64 `json:"pss_mb"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// treeMemory sums VmRSS and Pss (smaps_rollup) over the descendants of pid:
// the browser and its helper processes (Linux only).
func treeMemory(pid int) (n int, rssMB, pssMB float64) {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
	}
	var tree []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				tree = append(tree, p)
				break
			}
		}
	}
	slices.Sort(tree)
	for _, p := range tree {
		rssMB += kb(fmt.Sprintf("/proc/%d/status", p), "VmRSS:") / 1024
		pssMB += kb(fmt.Sprintf("/proc/%d/smaps_rollup", p), "Pss:") / 1024
	}
	return len(tree), rssMB, pssMB
}

func kb(path, field string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}
