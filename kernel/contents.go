package kernel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The contents API of a Jupyter Server (/api/contents): the files under the
// server's root, as its file browser shows them. Paths are relative to that
// root, '/'-separated; the server refuses any that leads out of it.

// contentsPath is /api/contents/<path>, each segment escaped.
func contentsPath(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/api/contents/" + strings.Join(segs, "/")
}

// WriteContents writes data as the file at path on the server, making the
// folders it needs first. The file is sent whole, base64-encoded, as
// JupyterLab's upload does.
func (g Gateway) WriteContents(ctx context.Context, path string, data []byte) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	defer c.release()
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 1; i < len(segs); i++ {
		dir := strings.Join(segs[:i], "/")
		// Saving a folder that exists leaves it as it is.
		if err := c.do(ctx, http.MethodPut, contentsPath(dir), map[string]any{"type": "directory"}, nil, http.StatusOK, http.StatusCreated); err != nil {
			return fmt.Errorf("kernel: making the folder %s on %s: %w", dir, c, err)
		}
	}
	body := map[string]any{"type": "file", "format": "base64", "content": base64.StdEncoding.EncodeToString(data)}
	if err := c.do(ctx, http.MethodPut, contentsPath(path), body, nil, http.StatusOK, http.StatusCreated); err != nil {
		return fmt.Errorf("kernel: writing %s on %s: %w", path, c, err)
	}
	return nil
}

// StatContents checks that path names a file on the server (not a folder)
// of at most limit bytes (0: any size), without reading it; its errors are
// ReadContents'.
func (g Gateway) StatContents(ctx context.Context, path string, limit int64) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	defer c.release()
	return c.statFile(ctx, path, limit)
}

func (c *gatewayClient) statFile(ctx context.Context, path string, limit int64) error {
	var m struct {
		Type string `json:"type"`
		Size *int64 `json:"size"`
	}
	if err := c.do(ctx, http.MethodGet, contentsPath(path)+"?content=0", nil, &m, http.StatusOK); err != nil {
		if errors.Is(err, errNoSuchKernel) { // do's 404
			return fmt.Errorf("kernel: %s has no file %s", c, path)
		}
		return err
	}
	switch {
	case m.Type == "directory":
		return fmt.Errorf("kernel: %s on %s is a folder: %w", path, c, ErrNotAFile)
	case limit > 0 && m.Size != nil && *m.Size > limit:
		return fmt.Errorf("kernel: %s on %s is %d bytes, more than the %d allowed", path, c, *m.Size, limit)
	}
	return nil
}

// ErrNotAFile is wrapped by ReadContents' error for a path that names a
// folder.
var ErrNotAFile = errors.New("not a file")

// ReadContents reads the file at path on the server. A folder, a missing
// file, and a file of more than limit bytes are errors that say which; the
// answer is read only up to what limit bytes encode to.
func (g Gateway) ReadContents(ctx context.Context, path string, limit int64) ([]byte, error) {
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	defer c.release()
	if err := c.statFile(ctx, path, limit); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+contentsPath(path)+"?type=file&format=base64&content=1", nil)
	if err != nil {
		return nil, err
	}
	req.Header = c.header()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.redact(fmt.Errorf("kernel: %s is unreachable: %w", c, err))
	}
	defer resp.Body.Close()
	// base64 is 4/3 of the bytes; the JSON model around it is small.
	most := limit/3*4 + 8 + 64<<10
	b, err := io.ReadAll(io.LimitReader(resp.Body, most+1))
	if err != nil {
		return nil, fmt.Errorf("kernel: reading %s from %s: %w", path, c, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &GatewayError{URL: c.String(), Method: http.MethodGet, Path: contentsPath(path), Status: resp.StatusCode, Body: reason(b)}
	}
	if int64(len(b)) > most {
		return nil, fmt.Errorf("kernel: %s on %s is more than the %d bytes allowed", path, c, limit)
	}
	var f struct {
		Content string `json:"content"`
		Format  string `json:"format"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&f); err != nil {
		return nil, fmt.Errorf("kernel: decoding %s from %s: %w", path, c, err)
	}
	if f.Format != "base64" {
		return nil, fmt.Errorf("kernel: %s sent %s as %q, not base64", c, path, f.Format)
	}
	data, err := base64.StdEncoding.DecodeString(f.Content)
	if err != nil {
		return nil, fmt.Errorf("kernel: decoding %s from %s: %w", path, c, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("kernel: %s on %s is more than the %d bytes allowed", path, c, limit)
	}
	return data, nil
}
