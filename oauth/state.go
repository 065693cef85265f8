package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// stateFile is the file, in the state folder, that holds what must survive
// a restart: the signing keys, the registered clients, the grants and the
// browser sessions.
// Authorization requests and codes live minutes and are kept in memory only.
const stateFile = "oauth.json"

// stateVersion is the format of stateFile; a file of another version is
// refused rather than misread.
const stateVersion = 1

// persisted is stateFile's content.
type persisted struct {
	Version int `json:"version"`
	// Keys are the signing keys, newest last; only the newest signs, the
	// others stay published until the tokens they signed have expired.
	Keys []storedKey `json:"keys"`
	// Clients are the clients registered by Dynamic Client Registration,
	// by client id. Clients named by a metadata document are fetched, not
	// stored.
	Clients map[string]*client `json:"clients"`
	// Grants are the user's consents to clients, by grant id: every access
	// and refresh token belongs to one, and revoking it revokes them all.
	Grants map[string]*grant `json:"grants"`
	// Refresh are the refresh tokens, by the hex SHA-256 of the token:
	// the file never holds a usable refresh token.
	Refresh map[string]*refreshToken `json:"refresh"`
	// RevokedAccess are revoked access tokens' ids (jti) and when they
	// would have expired anyway, after which they are forgotten.
	RevokedAccess map[string]time.Time `json:"revoked_access"`
	// BrowserSessions are the web view's signed-in browsers (browser.go),
	// by the hex SHA-256 of the session cookie: the file never holds a
	// usable cookie. Absent when there is none, so that a file without
	// any stays readable by a kernel-mcp that kept them in memory.
	BrowserSessions map[string]*browserSession `json:"browser_sessions,omitempty"`
}

// grant is one sign-in's consent: a user let a client act for them. Its
// refresh tokens form one family, rotated on every use.
type grant struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	Subject  string `json:"subject"`
	// Groups are the provider's groups of Subject at sign-in, for
	// AllowedGroups; GroupsKnown is false in grants older than that.
	Groups      []string  `json:"groups,omitempty"`
	GroupsKnown bool      `json:"groups_known,omitempty"`
	Scopes      []string  `json:"scopes"`
	AuthTime    time.Time `json:"auth_time"`
	Created     time.Time `json:"created"`
	// Expires bounds the whole family: no refresh past it, whatever the
	// rotations.
	Expires time.Time `json:"expires"`
	// Revoked is set by revocation, by a refresh token used twice, or by
	// sign-out; the grant is kept until Expires so that its tokens are
	// known to be revoked rather than unknown.
	Revoked   bool   `json:"revoked,omitempty"`
	RevokedBy string `json:"revoked_by,omitempty"`
}

// refreshToken is one refresh token of a grant's family.
type refreshToken struct {
	Grant   string    `json:"grant"`
	Expires time.Time `json:"expires"`
	// Used is set when the token was exchanged (rotated): presenting it
	// again means it was stolen or replayed, and revokes the family.
	Used bool `json:"used,omitempty"`
}

// unusedClientLifetime is how long a registered client with no grant is
// kept.
const unusedClientLifetime = 30 * 24 * time.Hour

// tokenDigest is how a refresh token is kept: the hex SHA-256 of its text.
func tokenDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// loadState reads dir's stateFile; a missing file is an empty state. A file
// that users other than its owner can read is refused: it holds the private
// signing keys.
func loadState(dir string) (*persisted, error) {
	path := filepath.Join(dir, stateFile)
	st := &persisted{Version: stateVersion}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		st.init()
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth state: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth state: %v", err)
	}
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("oauth state %s can be read or written by group or others (mode %04o): it holds the signing keys; run chmod 600 %s", path, perm, path)
	}
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("oauth state %s: %v (move it away to start over: every client must then sign in again)", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("oauth state %s has format version %d; this kernel-mcp reads version %d", path, st.Version, stateVersion)
	}
	st.init()
	return st, nil
}

func (st *persisted) init() {
	if st.Clients == nil {
		st.Clients = map[string]*client{}
	}
	if st.Grants == nil {
		st.Grants = map[string]*grant{}
	}
	if st.Refresh == nil {
		st.Refresh = map[string]*refreshToken{}
	}
	if st.RevokedAccess == nil {
		st.RevokedAccess = map[string]time.Time{}
	}
	if st.BrowserSessions == nil {
		st.BrowserSessions = map[string]*browserSession{}
	}
}

// save writes st to dir's stateFile atomically (a temporary file renamed
// over it), readable by its owner only. The folder is created 0700.
func (st *persisted) save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth state: %v", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth state: %v", err)
	}
	f, err := os.CreateTemp(dir, stateFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("oauth state: %v", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, there is nothing to remove
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		f.Close()
		return fmt.Errorf("oauth state: %v", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("oauth state: %v", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("oauth state: %v", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth state: %v", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("oauth state: %v", err)
	}
	return nil
}

// prune forgets what can no longer matter at now: expired grants with
// their refresh tokens, expired browser sessions, revoked access tokens
// past their expiry, and keys
// retired long enough that no token they signed is still valid.
func (st *persisted) prune(now time.Time) {
	for id, g := range st.Grants {
		if now.After(g.Expires) {
			delete(st.Grants, id)
		}
	}
	for d, rt := range st.Refresh {
		if _, ok := st.Grants[rt.Grant]; !ok || now.After(rt.Expires) {
			delete(st.Refresh, d)
		}
	}
	// A client registered long ago that has no grant left is forgotten:
	// registration is open to anyone, and a client that comes back
	// registers again.
	used := map[string]bool{}
	for _, g := range st.Grants {
		used[g.ClientID] = true
	}
	for id, c := range st.Clients {
		if !used[id] && now.Sub(c.Created) > unusedClientLifetime {
			delete(st.Clients, id)
		}
	}
	for d, bs := range st.BrowserSessions {
		if now.After(bs.Expires) {
			delete(st.BrowserSessions, d)
		}
	}
	for jti, exp := range st.RevokedAccess {
		if now.After(exp) {
			delete(st.RevokedAccess, jti)
		}
	}
	keep := st.Keys[:0]
	for i, k := range st.Keys {
		if i == len(st.Keys)-1 || k.Retired.IsZero() || now.Before(k.Retired) {
			keep = append(keep, k)
		}
	}
	st.Keys = keep
}
