package tasks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCreateIsDurableAndUnguessable(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Create(Record{Session: "fit", Run: "r2", Tool: "run_code", Protocol: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := st.Create(Record{Session: "fit", Run: "r3", Tool: "run_code"})
	if !validID.MatchString(a.ID) || a.ID == b.ID {
		t.Fatalf("ids %q %q: want two different 32-hex-digit ids", a.ID, b.ID)
	}
	// On disk before Create returned: a second store (a restarted server)
	// finds it, ended by the restart.
	st2, err := Open(dir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st2.Get(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Failed || !strings.Contains(got.Message, "server restarted") || !strings.Contains(got.Message, "r2") {
		t.Fatalf("after restart: %+v", got)
	}
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(got.Error, &e) != nil || e.Code != -32603 {
		t.Fatalf("error %s", got.Error)
	}
	if _, err := st2.Get("0123456789abcdef0123456789abcdef"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestFinishSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, time.Hour, nil)
	r, _ := st.Create(Record{Session: "s", Run: "r1"})
	if _, err := st.Finish(r.ID, Completed, json.RawMessage(`{"content":[]}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	// A second Finish keeps the first end.
	st.Finish(r.ID, Failed, nil, nil, "later")
	st2, _ := Open(dir, time.Hour, nil)
	got, err := st2.Get(r.ID)
	if err != nil || got.Status != Completed || string(got.Result) != `{"content":[]}` {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestExpiry(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	st, _ := Open(dir, time.Minute, c.now)
	short, _ := st.Create(Record{Session: "s", Run: "r1"})
	long, _ := st.Create(Record{Session: "s", Run: "r2"})
	st.Finish(short.ID, Completed, json.RawMessage(`{}`), nil, "")
	c.add(2 * time.Minute)
	// A task whose run goes on is never forgotten.
	if _, err := st.Get(long.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(short.ID); !errors.Is(err, ErrExpired) {
		t.Fatalf("after its TTL: %v", err)
	}
	// Ending after its TTL keeps it a TTL more.
	st.Finish(long.ID, Completed, json.RawMessage(`{}`), nil, "")
	c.add(30 * time.Second)
	if _, err := st.Get(long.ID); err != nil {
		t.Fatal(err)
	}
	c.add(31 * time.Second)
	if _, err := st.Get(long.ID); !errors.Is(err, ErrExpired) {
		t.Fatalf("%v", err)
	}
	// Forgotten on disk too: the file keeps the id only.
	b, _ := os.ReadFile(filepath.Join(dir, short.ID+".json"))
	if strings.Contains(string(b), `"session"`) || !strings.Contains(string(b), `"expired":true`) {
		t.Fatalf("expired record on disk: %s", b)
	}
	st2, _ := Open(dir, time.Minute, c.now)
	if _, err := st2.Get(short.ID); !errors.Is(err, ErrExpired) {
		t.Fatalf("after restart: %v", err)
	}
	if n := len(st2.List()); n != 0 {
		t.Fatalf("List has %d expired tasks", n)
	}
}

func TestCancelRequested(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, time.Hour, nil)
	r, _ := st.Create(Record{Session: "s", Run: "r1"})
	if _, ok, err := st.RequestCancel(r.ID); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Cut short by a restart after the cancel: it ends cancelled.
	st2, _ := Open(dir, time.Hour, nil)
	if got, _ := st2.Get(r.ID); got.Status != Cancelled {
		t.Fatalf("%+v", got)
	}
	if _, ok, _ := st2.RequestCancel(r.ID); ok {
		t.Fatal("cancel of an ended task reported as taken")
	}
}

func TestInMemory(t *testing.T) {
	st, err := Open("", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Create(Record{Session: "s", Run: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.Get(r.ID); err != nil || got.Run != "r1" {
		t.Fatal(got, err)
	}
}

// Records nobody asks for again are still forgotten past their expiry (their
// result leaves the disk), and their ids go a day (or a TTL, if longer)
// later: the store does not grow with every task ever made.
func TestSweepForgetsUnaskedRecords(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	st, err := Open(dir, time.Hour, c.now)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := st.Create(Record{Session: "s", Run: "r1"})
	if _, err := st.Finish(old.ID, Completed, json.RawMessage(`{"content":[{"type":"text","text":"secret"}]}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, old.ID+".json")

	// Past its expiry, a task made by someone else sweeps it: only its id
	// is left on disk, and asking for it says it expired.
	c.add(time.Hour + time.Second)
	if _, err := st.Create(Record{Session: "s", Run: "r2"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil || strings.Contains(string(b), "secret") || !strings.Contains(string(b), `"expired":true`) {
		t.Fatalf("after the sweep the file holds %s (%v); want the id alone, marked expired", b, err)
	}
	if _, err := st.Get(old.ID); !errors.Is(err, ErrExpired) {
		t.Fatalf("Get after expiry: %v, want ErrExpired", err)
	}

	// A sweep runs at most once a minute: a Create within it leaves the
	// tombstone even past its day...
	c.add(24*time.Hour - 30*time.Second)
	st.Create(Record{Session: "s", Run: "r3"})
	c.add(40 * time.Second)
	st.Create(Record{Session: "s", Run: "r4"})
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("tombstone gone before a sweep was due: %v", err)
	}
	// ...and the next sweep (here, a restart) drops it: the id is unknown.
	c.add(time.Minute)
	st2, err := Open(dir, time.Hour, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tombstone still on disk a day after expiry: %v", err)
	}
	if _, err := st2.Get(old.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get a day after expiry: %v, want ErrNotFound", err)
	}
	if n := len(st2.List()); n != 3 {
		t.Fatalf("%d live tasks after the sweeps, want 3 (r2, r3, r4)", n)
	}
	// r3, ended by the restart, is swept past its TTL without a Get.
	c.add(time.Hour + time.Second)
	st2.Create(Record{Session: "s", Run: "r5"})
	for _, r := range st2.recs {
		if r.Run == "r3" {
			t.Fatalf("r3 kept past its TTL: %+v", *r)
		}
	}
}
