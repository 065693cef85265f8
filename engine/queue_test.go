package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/internal/ipytest"
)

// A call waiting for its turn behind a run that waits for input gives up
// at once, naming the question and how to answer it: when the run asked
// before the call came, and when it asks while the call waits. MaxWait is
// far beyond the test's own deadline, so waiting it out would fail.
func TestWaitTurnBehindInput(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{MaxWait: time.Hour})
	ss, err := e.LookupOrCreate("ask")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gate := filepath.Join(t.TempDir(), "gate")
	code := fmt.Sprintf("import os, time\nwhile not os.path.exists(%q):\n    time.sleep(0.05)\ninput('Name? ')", gate)
	r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, code, "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	for r.View().Status != StatusRunning {
		if ctx.Err() != nil {
			t.Fatal("the run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := `session "ask" waits for input: run r1 called input() with the prompt "Name? "; nothing was done. Answer it with send_input {"session_id": "ask", "run_id": "r1", "text": "..."}, or stop the run with interrupt_session, then try again`
	queued := queueBehind(ctx, t, e, ss, 2)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err == nil || err.Error() != want {
		t.Errorf("a call queued before the question: %v\nwant %s", err, want)
	}
	if _, err := e.WaitTurn(ctx, ss, nil); err == nil || err.Error() != want {
		t.Errorf("a call after the question: %v\nwant %s", err, want)
	}
	if ss.queueLen() != 1 {
		t.Errorf("%d jobs in the queue, want the run's alone", ss.queueLen())
	}
	// A run queued behind it is not waited for either.
	r2, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
		return r.RunBlock(ctx, "1", "", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Await(ctx, time.Hour); got != AwaitBlocked || !strings.Contains(r2.BlockedBy(), `run r1 called input() with the prompt "Name? "`) {
		t.Errorf("a run queued behind the question: await %v, %q", got, r2.BlockedBy())
	}
	if _, ok := r.Answer(0, Reply{Text: "Ada"}); !ok {
		t.Fatal("the question could not be answered")
	}
	if got := r2.Await(ctx, time.Minute); got != AwaitDone {
		t.Errorf("the queued run after the answer: await %v", got)
	}
}

// A question out to the user (an elicitation) or a person's run's question
// (the web view answers it) is not the assistant's to answer: calls queued
// behind it wait as behind any run, woken by the answer, and are never told
// to answer it with send_input.
func TestWaitTurnBehindUserQuestion(t *testing.T) {
	ipytest.Require(t)
	e := newTestEngine(t, Config{MaxWait: time.Hour})
	for _, who := range []string{"elicited", "person"} {
		t.Run(who, func(t *testing.T) {
			ss, err := e.LookupOrCreate(who)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var opts []RunOption
			if who == "person" {
				opts = append(opts, WrittenBy(history.ByPerson))
			}
			r, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
				return r.RunBlock(ctx, "name = input('Name? ')", "", 0)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if who == "elicited" {
				defer r.Eliciting()() // a caller that elicits waits on the run as it asks
			}
			for r.PendingQuestion() == nil {
				if ctx.Err() != nil {
					t.Fatal("the run never asked")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Cut short by the test's own deadline, the call says it was
			// cancelled while waiting: it waited, and named no send_input.
			short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = e.WaitTurn(short, ss, nil)
			stop()
			if err == nil || strings.Contains(err.Error(), "send_input") || !strings.Contains(err.Error(), "cancelled while waiting") {
				t.Errorf("a call behind the user's question: %v", err)
			}
			r2, err := e.StartRun(ctx, ss, nil, "run_code", func(ctx context.Context, r *Run) (any, error) {
				return r.RunBlock(ctx, "1", "", 0)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := r2.Await(ctx, 300*time.Millisecond); got != AwaitTimeout || r2.BlockedBy() != "" {
				t.Errorf("a run queued behind the user's question: await %v, %q", got, r2.BlockedBy())
			}
			queued := queueBehind(ctx, t, e, ss, 3)
			if _, ok := r.Answer(0, Reply{Text: "Ada"}); !ok {
				t.Fatal("the question could not be answered")
			}
			if err := <-queued; err != nil {
				t.Errorf("the call after the answer: %v", err)
			}
			if got := r2.Await(ctx, time.Minute); got != AwaitDone {
				t.Errorf("the queued run after the answer: await %v", got)
			}
		})
	}
}

// queueBehind starts a call waiting for its turn in ss (WaitTurn) and
// returns once the session's queue holds n jobs, the call's among them; the
// call's error comes on the channel once it has had its turn. A call that
// returns before then fails the test.
func queueBehind(ctx context.Context, t *testing.T, e *Engine, ss *Session, n int) <-chan error {
	t.Helper()
	queued := make(chan error, 1)
	go func() {
		release, err := e.WaitTurn(ctx, ss, nil)
		if err == nil {
			release()
		}
		queued <- err
	}()
	for ss.queueLen() < n {
		select {
		case err := <-queued:
			t.Fatalf("the call returned before it queued: %v", err)
		default:
		}
		if ctx.Err() != nil {
			t.Fatal("the call never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return queued
}
