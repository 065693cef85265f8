"""Generate slices.json: the bounds Python's own slicing gives.

For a sequence of 5 elements and every start and end in {None, -7..7}, record
the half-open range [lo, hi) that seq[start:end] selects, as reported by
slice.indices (clamped so that hi >= lo, i.e. the selection range(lo, hi)).
TestSliceMatchesPython in slice_test.go checks history.Slice against it.

Regenerate from the history/ folder with:

    python3 testdata/gen_slices.py > testdata/slices.json
"""
import json

N = 5
bounds = [None] + list(range(-7, 8))
seq = list(range(N))
cases = []
for start in bounds:
    for end in bounds:
        lo, hi, _ = slice(start, end).indices(N)
        hi = max(hi, lo)
        got = seq[start:end]
        # Cross-check: the slice is exactly range(lo, hi).
        assert got == list(range(lo, hi)), (start, end, got, lo, hi)
        cases.append({"start": start, "end": end, "lo": lo, "hi": hi})
print('{"n": %d, "cases": [' % N)
print(",\n".join(json.dumps(c) for c in cases))
print("]}")
