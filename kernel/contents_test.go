package kernel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The contents API against a scripted server: a real Jupyter Server drives
// it in integration/hubkernels_test.go; these are the answers one seldom
// sends, and the requests it must get.
func TestContents(t *testing.T) {
	var mu sync.Mutex
	files := map[string]string{"big.csv": strings.Repeat("x", 5000), "lies.txt": "short"}
	var puts []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "token tok" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		p := strings.TrimPrefix(r.URL.Path, "/user/alice/api/contents/")
		switch {
		case r.Method == http.MethodPut:
			var m struct{ Type, Format, Content string }
			json.NewDecoder(r.Body).Decode(&m)
			puts = append(puts, m.Type+" "+p)
			if m.Type == "file" {
				b, _ := base64.StdEncoding.DecodeString(m.Content)
				files[p] = string(b)
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{}`)
		case p == "dir":
			fmt.Fprint(w, `{"type": "directory", "size": null}`)
		case files[p] == "":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message": "No such file or directory"}`)
		case r.URL.Query().Get("content") == "0":
			fmt.Fprintf(w, `{"type": "file", "size": %d}`, len(files[p]))
		case p == "lies.txt": // says it is short, then sends more
			fmt.Fprintf(w, `{"type": "file", "format": "base64", "content": %q}`, base64.StdEncoding.EncodeToString([]byte(strings.Repeat("y", 100000))))
		default:
			fmt.Fprintf(w, `{"type": "file", "format": "base64", "content": %q}`, base64.StdEncoding.EncodeToString([]byte(files[p])))
		}
	}))
	defer ts.Close()
	g := Gateway{URL: ts.URL + "/user/alice/", Token: "tok"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := g.WriteContents(ctx, "a b/c/n.ipynb", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// The folders first, then the file (r.URL.Path is unescaped).
	if want := []string{"directory a b", "directory a b/c", "file a b/c/n.ipynb"}; fmt.Sprint(puts) != fmt.Sprint(want) || files["a b/c/n.ipynb"] != "{}" {
		t.Errorf("requests: %q, want %q", puts, want)
	}
	if b, err := g.ReadContents(ctx, "big.csv", 10000); err != nil || len(b) != 5000 {
		t.Errorf("big.csv: %d bytes, %v", len(b), err)
	}
	for _, c := range []struct {
		path  string
		limit int64
		want  string
	}{
		{"big.csv", 1000, "5000 bytes, more than the 1000 allowed"},
		{"dir", 1000, "is a folder"},
		{"missing.txt", 1000, "has no file missing.txt"},
		{"lies.txt", 1000, "more than the 1000 bytes allowed"},
	} {
		_, err := g.ReadContents(ctx, c.path, c.limit)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
		if c.path == "dir" && !errors.Is(err, ErrNotAFile) {
			t.Errorf("dir: %v is not ErrNotAFile", err)
		}
	}
}
