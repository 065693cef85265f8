package mcpb

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// rewriteZip copies the archive mcpb pack wrote at src to dst so that the
// bytes depend only on the files: mcpb pack (2.1.2) stamps every entry
// with the time of packing (fflate's zipSync with mtime: new Date()) and
// orders entries as the directory listing came, and it writes Unix modes
// only when it runs on Unix. The copy has the entries sorted by name, every
// timestamp set to epoch, and each file's mode set by fileMode; the
// compressed data is mcpb's, copied as is (with its CRC). It fails when
// the archive does not hold exactly the files that were laid out.
func rewriteZip(src, dst string, files map[string][]byte, epoch time.Time) error {
	r, err := zip.OpenReader(src)
	if err != nil {
		return err
	}
	defer r.Close()
	entries := slices.Clone(r.File)
	slices.SortFunc(entries, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) })
	var names []string
	for _, f := range entries {
		names = append(names, f.Name)
	}
	var want []string
	for name := range files {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		return fmt.Errorf("mcpb pack archived %v, want %v", names, want)
	}

	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := zip.NewWriter(out)
	date, tm := msDosTime(epoch)
	for _, f := range entries {
		fh := &zip.FileHeader{
			Name:               f.Name,
			Method:             f.Method,
			CRC32:              f.CRC32,
			CompressedSize64:   f.CompressedSize64,
			UncompressedSize64: f.UncompressedSize64,
			CreatorVersion:     20,
			ReaderVersion:      20,
		}
		// CreateRaw (unlike CreateHeader) ignores Modified: the MS-DOS
		// fields are the only way to stamp a raw copy.
		//lint:ignore SA1019 see above
		fh.ModifiedDate, fh.ModifiedTime = date, tm
		fh.SetMode(fileMode(f.Name))
		raw, err := f.OpenRaw()
		if err != nil {
			out.Close()
			return err
		}
		fw, err := w.CreateRaw(fh)
		if err != nil {
			out.Close()
			return err
		}
		if _, err := io.Copy(fw, raw); err != nil {
			out.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// Check the copy: every entry decompresses to the file laid out.
	c, err := zip.OpenReader(dst)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, f := range c.File {
		rc, err := f.Open()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if !bytes.Equal(data, files[f.Name]) {
			return fmt.Errorf("%s: archived contents differ from the file laid out", f.Name)
		}
	}
	return nil
}

// msDosTime is t (in UTC) as a zip entry's MS-DOS date and time, which
// count from 1980 in two-second steps: earlier times become 1980-01-01.
// The raw copy writes no extended-timestamp field, so this is the only
// time in the archive.
func msDosTime(t time.Time) (date, tm uint16) {
	t = t.UTC()
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tm
}
