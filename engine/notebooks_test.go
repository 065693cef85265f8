package engine

import (
	"strings"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/history"
)

// A cell taken by start/end is named by its place in the whole notebook,
// not in the slice.
func TestSelectCellsNamesCellsInTheWholeNotebook(t *testing.T) {
	nb := []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
		{"cell_type": "markdown", "source": "# Title"},
		{"cell_type": "code", "source": "a = 0", "outputs": []},
		{"cell_type": "code", "source": "b = 1", "outputs": []},
		{"cell_type": "markdown", "source": "More"},
		{"cell_type": "markdown", "source": "Even more"},
		{"cell_type": "code", "source": "c = 2", "outputs": []},
		{"cell_type": "code", "source": "d = 3", "outputs": []}]}`)
	cells, _, err := history.ParseNotebook("nb.ipynb", nb)
	if err != nil {
		t.Fatal(err)
	}
	start := 2
	picked, lo, hi, codeN := SelectCells(cells, &start, nil)
	if lo != 2 || hi != 4 || codeN != 4 || len(picked) != 4 {
		t.Fatalf("SelectCells(start 2) = %d cells, code %d to %d of %d", len(picked), lo, hi, codeN)
	}
	var labels []string
	n := lo
	for _, c := range picked {
		if c.Type == "code" {
			labels = append(labels, CellLabel(n, c))
			n++
		}
	}
	want := []string{"code cell 2, cell 6 of the notebook", "code cell 3, cell 7 of the notebook"}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Fatalf("labels %q, want %q", labels, want)
	}
}

// A start on a py:percent script counts its code cells, and the cell it
// picks keeps its place in the script.
func TestSelectCellsInAPercentScript(t *testing.T) {
	script := "# %% [markdown]\n# # Analysis\n\n# %%\nx = 1\n\n# %%\ny = x + 1\n"
	cells, _, err := history.ParseNotebook("steps.py", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	start := 1
	picked, lo, _, codeN := SelectCells(cells, &start, nil)
	if codeN != 2 || lo != 1 || len(picked) != 1 || picked[0].Source != "y = x + 1" || picked[0].Index != 2 {
		t.Fatalf("start 1 picks %+v (code cells: %d)", picked, codeN)
	}
}
