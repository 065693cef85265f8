package engine

import "testing"

func TestImageStoreBounds(t *testing.T) {
	st := NewImageStore()
	for i := range 65 {
		if n, ok := st.Add("image/png", []byte{byte(i)}); !ok || n != i+1 {
			t.Fatalf("add %d: n=%d ok=%v", i, n, ok)
		}
	}
	if _, oldest, last, ok := st.Get(1); ok || oldest != 2 || last != 65 {
		t.Fatalf("the 65th image must drop the 1st: ok=%v oldest=%d last=%d", ok, oldest, last)
	}
	for _, n := range []int{2, 65} {
		if img, _, _, ok := st.Get(n); !ok || img.Data[0] != byte(n-1) {
			t.Fatalf("image %d: ok=%v", n, ok)
		}
	}
	if _, _, _, ok := st.Get(66); ok {
		t.Fatal("image 66 was never made")
	}

	// The memory bound drops the oldest too.
	st = NewImageStore()
	st.maxBytes = 1000
	for range 3 {
		st.Add("image/png", make([]byte, 400))
	}
	if _, oldest, _, ok := st.Get(1); ok || oldest != 2 || st.bytes != 800 {
		t.Fatalf("memory bound: image 1 kept=%v, oldest %d, %d bytes", ok, oldest, st.bytes)
	}
	// An image larger than the bound is not kept, and its number is used.
	if n, ok := st.Add("image/png", make([]byte, 1001)); ok || n != 4 {
		t.Fatalf("oversized image: n=%d ok=%v", n, ok)
	}
	if n, _ := st.Add("image/png", make([]byte, 10)); n != 5 {
		t.Fatalf("next number %d, want 5", n)
	}
	if st.bytes > st.maxBytes {
		t.Fatalf("%d bytes kept, over %d", st.bytes, st.maxBytes)
	}
}
