package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
)

// Signer computes and checks message signatures. The only scheme is
// hmac-sha256; an empty key turns signing off (signatures are empty and any
// signature is accepted), as the protocol allows. A Signer is safe for
// concurrent use.
type Signer struct {
	key  []byte
	pool sync.Pool // of hash.Hash; hmac.New allocates and hashes the key
}

// NewSigner returns a Signer for the connection file's signature_scheme and
// key. It refuses any scheme but hmac-sha256, so a kernel cannot talk us into
// a weaker one.
func NewSigner(scheme string, key []byte) (*Signer, error) {
	if scheme != "hmac-sha256" && !(scheme == "" && len(key) == 0) {
		return nil, fmt.Errorf("wire: unsupported signature scheme %q (only hmac-sha256)", scheme)
	}
	s := &Signer{key: append([]byte(nil), key...)}
	s.pool.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Sign returns the lowercase hex signature of the four signed frames.
func (s *Signer) Sign(header, parent, metadata, content []byte) []byte {
	if len(s.key) == 0 {
		return []byte{}
	}
	sum := s.sum(header, parent, metadata, content)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// Verify reports whether sig is the signature of the four frames. It compares
// in constant time.
func (s *Signer) Verify(sig, header, parent, metadata, content []byte) bool {
	if len(s.key) == 0 {
		return true
	}
	want := s.sum(header, parent, metadata, content)
	got := make([]byte, hex.DecodedLen(len(sig)))
	n, err := hex.Decode(got, sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got[:n], want)
}

func (s *Signer) sum(frames ...[]byte) []byte {
	h := s.pool.Get().(hash.Hash)
	h.Reset()
	for _, f := range frames {
		h.Write(f)
	}
	sum := h.Sum(nil)
	s.pool.Put(h)
	return sum
}
