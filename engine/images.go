package engine

import "sync"

// Bounds of a session's image store: the newest images are kept, the
// oldest dropped.
const (
	MaxKeptImages     = 64
	MaxKeptImageBytes = 256 << 20
)

// ImageStore keeps a session's image outputs in memory, numbered from 1 in
// order of production. It keeps the last maxCount images and at most
// maxBytes of them; numbers are never reused.
type ImageStore struct {
	mu       sync.Mutex
	maxCount int
	maxBytes int64
	last     int         // number of the last image added
	kept     []KeptImage // oldest first
	bytes    int64       // sum of the kept images' sizes
}

// KeptImage is one image a session keeps.
type KeptImage struct {
	N    int
	MIME string
	Data []byte
}

// NewImageStore is an empty store with the default bounds.
func NewImageStore() *ImageStore {
	return &ImageStore{maxCount: MaxKeptImages, maxBytes: MaxKeptImageBytes}
}

// Add keeps an image, dropping the oldest ones past the bounds, and returns
// its number. ok is false when the image alone is larger than the store
// may hold: it is not kept, and its number is used up.
func (st *ImageStore) Add(mime string, data []byte) (n int, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last++
	n = st.last
	if int64(len(data)) > st.maxBytes {
		return n, false
	}
	st.kept = append(st.kept, KeptImage{N: n, MIME: mime, Data: data})
	st.bytes += int64(len(data))
	for len(st.kept) > st.maxCount || st.bytes > st.maxBytes {
		st.bytes -= int64(len(st.kept[0].Data))
		st.kept[0] = KeptImage{} // let the data go
		st.kept = st.kept[1:]
	}
	return n, true
}

// Get returns image n. When it is not kept, oldest is the number of the
// oldest image kept (0 if none) and last the number of the newest produced.
func (st *ImageStore) Get(n int) (img KeptImage, oldest, last int, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, k := range st.kept {
		if k.N == n {
			return k, 0, st.last, true
		}
	}
	if len(st.kept) > 0 {
		oldest = st.kept[0].N
	}
	return KeptImage{}, oldest, st.last, false
}

// Images returns the session's image store, creating it if create.
func (ss *Session) Images(create bool) *ImageStore {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.images == nil && create {
		ss.images = NewImageStore()
	}
	return ss.images
}

// SetBounds changes the store's bounds; the next Add applies them.
func (st *ImageStore) SetBounds(maxCount int, maxBytes int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.maxCount, st.maxBytes = maxCount, maxBytes
}
