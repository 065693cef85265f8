package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// signingAlgorithm is the one algorithm tokens are signed with: ECDSA
// P-256 with SHA-256, small keys and short signatures.
const signingAlgorithm = jose.ES256

// storedKey is a signing key as kept in the state file.
type storedKey struct {
	// JWK is the private key as a JSON Web Key, its id and algorithm set.
	JWK     json.RawMessage `json:"jwk"`
	Created time.Time       `json:"created"`
	// Retired, when set, is when the key may be forgotten: a newer key
	// signs since, and every token this one signed has expired by then.
	Retired time.Time `json:"retired,omitzero"`
}

// newStoredKey makes a fresh ES256 key with a random id.
func newStoredKey(now time.Time) (storedKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return storedKey{}, fmt.Errorf("making a signing key: %v", err)
	}
	jwk := jose.JSONWebKey{Key: priv, KeyID: rand.Text()[:12], Algorithm: string(signingAlgorithm), Use: "sig"}
	b, err := jwk.MarshalJSON()
	if err != nil {
		return storedKey{}, fmt.Errorf("making a signing key: %v", err)
	}
	return storedKey{JWK: b, Created: now}, nil
}

// signingKey is a decoded storedKey; it serves as op.SigningKey (the
// private half) and as op.Key (the public half, published at /oauth/keys).
type signingKey struct {
	jwk jose.JSONWebKey
}

func decodeKey(k storedKey) (*signingKey, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(k.JWK); err != nil {
		return nil, fmt.Errorf("oauth state: a signing key: %v", err)
	}
	if _, ok := jwk.Key.(*ecdsa.PrivateKey); !ok || jwk.Algorithm != string(signingAlgorithm) || jwk.KeyID == "" {
		return nil, fmt.Errorf("oauth state: signing key %q is not an %s private key with an id", jwk.KeyID, signingAlgorithm)
	}
	return &signingKey{jwk: jwk}, nil
}

// SignatureAlgorithm is part of op.SigningKey.
func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return signingAlgorithm }

// Key is the private key for op.SigningKey.
func (k *signingKey) Key() any { return k.jwk.Key }

// ID is the key id (kid).
func (k *signingKey) ID() string { return k.jwk.KeyID }

// publicKey is the public half of a signing key, as op.Key.
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.jwk.KeyID }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return signingAlgorithm }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.jwk.Key.(*ecdsa.PrivateKey).PublicKey }
