package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// archiveFile is one file of a release archive.
type archiveFile struct {
	Name string      // its name in the archive
	Path string      // where it is read from
	Mode os.FileMode // 0o755 for the binary, 0o644 for the rest
}

// sortedFiles orders an archive's entries by name, so the bytes depend on
// the files alone.
func sortedFiles(files []archiveFile) []archiveFile {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b archiveFile) int { return strings.Compare(a.Name, b.Name) })
	return files
}

// writeTarGz writes a gzip-compressed ustar archive of files: sorted
// entries, owner 0:0 without names, every timestamp epoch, and a gzip
// header with neither name nor time.
func writeTarGz(path string, files []archiveFile, epoch time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, af := range sortedFiles(files) {
		b, err := os.ReadFile(af.Path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     af.Name,
			Size:     int64(len(b)),
			Mode:     int64(af.Mode.Perm()),
			ModTime:  epoch,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes a deflated zip archive of files: sorted entries, every
// timestamp epoch (in UTC), Unix modes.
func writeZip(path string, files []archiveFile, epoch time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(f)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	for _, af := range sortedFiles(files) {
		src, err := os.Open(af.Path)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: af.Name, Method: zip.Deflate, Modified: epoch.UTC()}
		hdr.SetMode(af.Mode.Perm())
		w, err := zw.CreateHeader(hdr)
		if err == nil {
			_, err = io.Copy(w, src)
		}
		src.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}
