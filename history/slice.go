package history

// Slice returns the bounds [lo, hi) that Python's seq[start:end] selects in a
// sequence of length n (step 1). nil means omitted. Indices are 0-based, end
// is exclusive, negatives count from the end, and out-of-range values are
// clamped, so Slice never fails; hi may equal lo (an empty selection).
func Slice(n int, start, end *int) (lo, hi int) {
	if n < 0 {
		n = 0
	}
	lo, hi = 0, n
	if start != nil {
		lo = clampIndex(*start, n)
	}
	if end != nil {
		hi = clampIndex(*end, n)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// clampIndex maps a Python slice bound onto [0, n].
func clampIndex(i, n int) int {
	if i < 0 {
		i += n
		if i < 0 {
			return 0
		}
		return i
	}
	if i > n {
		return n
	}
	return i
}
