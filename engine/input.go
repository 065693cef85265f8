package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// Questions the code asks through input() and getpass(), and their answers.

// Question is a question the code asked through input() or getpass().
type Question struct {
	Req      kernel.InputRequest
	Seq      int        // the run's questions are numbered from 1
	answer   chan Reply // capacity 1: the first answer wins
	answered bool       // an answer is on its way to the code
	elicited bool       // out to the user as an elicitation, until handed off
}

// Reply is an answer to a Question: the line typed, or why there is none.
type Reply struct {
	Text string
	Err  error
}

var (
	ErrInputDeclined  = errors.New("the user declined to answer")
	ErrInputCancelled = errors.New("the user dismissed the question")
)

// onInput waits for the answer to the code's input() or getpass(): from
// the user through elicitation (see attend) or from send_input. The run
// reads as input_requested meanwhile.
func (r *Run) onInput(ctx context.Context, ir kernel.InputRequest) (string, error) {
	r.mu.Lock()
	r.inputSeq++
	in := &Question{Req: ir, Seq: r.inputSeq, answer: make(chan Reply, 1), elicited: r.eliciting > 0}
	r.input = in
	r.state = StatusInputRequested
	r.signal()
	r.ss.eng.events.Publish(Event{Kind: InputRequested, Session: r.ss.id, Run: r.id, Prompt: ir.Prompt, Password: ir.Password})
	r.mu.Unlock()
	r.ss.signalAsked()
	defer func() {
		r.mu.Lock()
		if r.input == in {
			r.input = nil
		}
		if r.state == StatusInputRequested {
			r.state = StatusRunning
		}
		r.signal()
		r.mu.Unlock()
	}()
	select {
	case ans := <-in.answer:
		return ans.Text, ans.Err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Answer gives the waiting question its reply; seq 0 answers whichever is
// open (send_input), another only that question (an elicitation's answer).
func (r *Run) Answer(seq int, ans Reply) (kernel.InputRequest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.input
	if in == nil || in.answered || (seq != 0 && in.Seq != seq) {
		return kernel.InputRequest{}, false
	}
	in.answered = true
	// Counted before the answer can reach the code: a read sent after
	// this waits in the kernel until the code has it (Beside.answered).
	r.ss.answers.Add(1)
	// Published before the code has the answer: what it prints next comes
	// after input_answered on the stream.
	r.ss.eng.events.Publish(Event{Kind: InputAnswered, Session: r.ss.id, Run: r.id})
	in.answer <- ans // never blocks: the first answer is the only one
	if r.state == StatusInputRequested {
		r.state = StatusRunning
	}
	r.signal()
	return in.Req, true
}

// Eliciting says that a caller waits on the run and will put a question
// it asks to the user (see Elicit), until done: a question asked meanwhile
// is marked elicited from the start, before calls queued behind it look.
func (r *Run) Eliciting() (done func()) {
	r.mu.Lock()
	r.eliciting++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.eliciting--
			r.mu.Unlock()
		})
	}
}

// Elicit marks question seq as put to the user through the client: calls
// queued behind it wait for the user's answer instead of being told to
// answer it with send_input. The mark goes when the run is handed off.
func (r *Run) Elicit(seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.input != nil && r.input.Seq == seq && !r.input.answered {
		r.input.elicited = true
	}
}

// questionForAssistant is the open question that only the assistant can
// answer (send_input): nil when none is open, when it is out to the user
// as an elicitation, or when the run is the person's (the web view
// answers it).
func (r *Run) questionForAssistant() *Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.input == nil || r.input.answered || r.input.elicited || r.by == history.ByPerson {
		return nil
	}
	return r.input
}

// PendingQuestion is the open question, if any.
func (r *Run) PendingQuestion() *Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.input == nil || r.input.answered {
		return nil
	}
	return r.input
}
