package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Token is a user's JupyterHub token as kernel-mcp keeps it: the access
// token the hub issued to kernel-mcp's OAuth client when the user signed
// in, and when it expires (zero: unknown or never).
type Token struct {
	AccessToken string    `json:"access_token"`
	Expiry      time.Time `json:"expiry,omitzero"`
	SavedAt     time.Time `json:"saved_at"`
}

// Expired reports whether the token's expiry has passed at now.
func (t Token) Expired(now time.Time) bool { return !t.Expiry.IsZero() && !now.Before(t.Expiry) }

// maxTokenFile bounds what LoadToken reads: a token file is tiny.
const maxTokenFile = 64 << 10

// SaveToken writes t to path, readable by this user only (0600, its folder
// made 0700), replacing the file in one rename so a reader never sees half
// of it.
func SaveToken(path string, t Token) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".hub-token-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, there is none
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// LoadToken reads a token SaveToken wrote. A missing file is an error that
// wraps ErrNoToken.
func LoadToken(path string) (Token, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Token{}, fmt.Errorf("%w: %s does not exist", ErrNoToken, path)
	}
	if err != nil {
		return Token{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return Token{}, err
	}
	if len(data) > maxTokenFile {
		return Token{}, fmt.Errorf("%s is over %d bytes: not a token file kernel-mcp wrote", path, maxTokenFile)
	}
	var t Token
	if err := json.Unmarshal(data, &t); err != nil {
		return Token{}, fmt.Errorf("%s: %v", path, err)
	}
	if t.AccessToken == "" {
		return Token{}, fmt.Errorf("%w: %s holds none", ErrNoToken, path)
	}
	return t, nil
}
