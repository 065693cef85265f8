package history

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CorruptError is Open's error for a history file that holds a line that is
// not a record, other than a torn last one, or that has no meta record.
// Recover keeps what can be read of such a file.
type CorruptError struct {
	Path string
	Err  error // "line N: …" or "no meta record"
}

func (e *CorruptError) Error() string { return fmt.Sprintf("history: %s: %v", e.Path, e.Err) }

func (e *CorruptError) Unwrap() error { return e.Err }

// Recovery is what Recover did with a corrupt history file.
type Recovery struct {
	// SetAside is the copy of the file as it was, next to it.
	SetAside string
	// Skipped are the 1-based numbers of the lines left out.
	Skipped []int
	// MetaLost reports that no meta record could be read: the session's
	// kernel, interpreter, working directory and creation time are gone,
	// and the returned Meta holds only its id.
	MetaLost bool
}

// Recover is Open for a file Open refused with a *CorruptError. Every line
// is read on its own, and one that is not a record (or is a second meta
// record) is left out. The file as it was is first copied to
// <file>.corrupt-<UTC time> in the same folder (a new file: an earlier copy
// is never written over), then the history file is replaced atomically by
// the records that were read. A crash in between leaves the old file, or
// the new one and the copy. A file whose meta record names another session
// is an error, as in Open, and is left alone.
func Recover(dir, session string) (*Store, Meta, []Entry, Recovery, error) {
	var rec Recovery
	path, err := storePath(dir, session)
	if err != nil {
		return nil, Meta{}, nil, rec, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: %w", path, err)
	}
	meta, entries, skipped, haveMeta := salvageHistory(data)
	if haveMeta && meta.SessionID != "" && meta.SessionID != session {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: %s holds session %q, not %q", path, meta.SessionID, session)
	}
	if !haveMeta {
		meta = Meta{SessionID: session}
	}
	rec.Skipped, rec.MetaLost = skipped, !haveMeta
	if rec.SetAside, err = copyAside(path, data); err != nil {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: keeping a copy: %w", path, err)
	}
	var buf bytes.Buffer
	line, err := encodeRecord(record{Meta: &meta})
	if err != nil {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: %w", path, err)
	}
	buf.Write(line)
	for i := range entries {
		line, err := encodeRecord(record{Entry: &entries[i]})
		if err != nil {
			return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: entry %d: %w", path, i, err)
		}
		buf.Write(line)
	}
	if err := writeFileAtomic(path, buf.Bytes(), 0o600, 0o700); err != nil {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, Meta{}, nil, rec, fmt.Errorf("history: recover %s: %w", path, err)
	}
	return &Store{dir: dir, path: path, f: f, size: int64(buf.Len())}, meta, entries, rec, nil
}

// salvageHistory reads every line of a history file that is a record, in
// order, and returns the numbers of those that are not.
func salvageHistory(data []byte) (meta Meta, entries []Entry, skipped []int, haveMeta bool) {
	entries = []Entry{}
	for lineNo, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := decodeRecord(line)
		switch {
		case err != nil, r.Meta != nil && haveMeta:
			skipped = append(skipped, lineNo+1)
		case r.Meta != nil:
			meta, haveMeta = *r.Meta, true
		default:
			entries = append(entries, *r.Entry)
		}
	}
	return meta, entries, skipped, haveMeta
}

// copyAside writes data to a new file named path.corrupt-<UTC time>, with
// a counter when that name is taken, fsynced with its folder.
func copyAside(path string, data []byte) (string, error) {
	stamp := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		name := stamp
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(filepath.Dir(path))
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}
