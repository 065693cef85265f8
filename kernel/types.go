package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Output is one output of an execution, in nbformat's vocabulary: a stream,
// an execute_result, a display_data, or an error. Data holds a MIME bundle
// with values as the kernel sent them (strings for text and base64 images,
// JSON for application/json).
type Output struct {
	Type           string                     `json:"output_type"`
	Name           string                     `json:"name,omitempty"` // stream: stdout or stderr
	Text           string                     `json:"text,omitempty"` // stream text
	Data           map[string]json.RawMessage `json:"data,omitempty"`
	Metadata       map[string]json.RawMessage `json:"metadata,omitempty"`
	ExecutionCount int                        `json:"execution_count,omitempty"`
	DisplayID      string                     `json:"display_id,omitempty"`
	EName          string                     `json:"ename,omitempty"`
	EValue         string                     `json:"evalue,omitempty"`
	Traceback      []string                   `json:"traceback,omitempty"`
}

// Output types, as nbformat names them.
const (
	OutputStream        = "stream"
	OutputExecuteResult = "execute_result"
	OutputDisplayData   = "display_data"
	OutputError         = "error"
)

// String returns the MIME bundle's value for mime as a string: the JSON
// string itself, or the raw JSON for non-string values. ok is false when the
// bundle has no such entry.
func (o Output) String(mime string) (s string, ok bool) {
	raw, ok := o.Data[mime]
	if !ok {
		return "", false
	}
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	// nbformat also allows a list of lines.
	var lines []string
	if err := json.Unmarshal(raw, &lines); err == nil {
		return strings.Join(lines, ""), true
	}
	return string(raw), true
}

// Event is one iopub message about an execution, handed to
// ExecuteOptions.OnEvent as it arrives. Clear and update events are reported
// here as well as applied to ExecuteResult.Outputs.
type Event struct {
	// Kind is the iopub msg_type: stream, execute_result, display_data,
	// update_display_data, clear_output or error.
	Kind   string
	Output Output // for everything but clear_output
	Wait   bool   // clear_output's wait flag
}

// ExecuteResult is what an execution produced, in the order a notebook cell
// shows it: consecutive stream text of one name is merged, clear_output and
// update_display_data are applied.
type ExecuteResult struct {
	MsgID          string
	ExecutionCount int
	// Status is the execute_reply status: ok, error or aborted; empty when no
	// reply arrived (the kernel died or ignored an interrupt).
	Status string
	// Outputs holds every output, error outputs included, in order.
	Outputs []Output
	// Error is the execute_reply's error, set when Status is error. A cell
	// can show tracebacks and still succeed (Outputs then has error
	// outputs and Error is nil), and a failing one can show several
	// (ErrorOutputs lists them all).
	Error           *ExecError
	UserExpressions map[string]json.RawMessage
	Payload         []json.RawMessage
	// Interrupted is set when the context ended the execution and an
	// interrupt was sent to the kernel.
	Interrupted bool
	// Rejected counts iopub messages for this execution whose content was
	// not valid JSON; they are left out of Outputs.
	Rejected int
	// OmittedBytes counts the stream bytes ExecuteOptions.MaxStreamBytes
	// cut from the outputs kept. OmittedOutputs counts the outputs
	// MaxOutputs dropped whole, as a notebook counts outputs: the chunks of
	// one stream that follow each other are one output.
	OmittedBytes   int
	OmittedOutputs int
	// RateLimited is set when a Jupyter server replaced some of this
	// execution's output with its "IOPub data rate exceeded" (or message
	// rate) notice: that output never reached this client.
	RateLimited bool
	// IdleLost is set when the reply came but the idle status never did
	// (see noIdleWait): the kernel's output publisher dropped messages
	// under a flood, so outputs may be missing too.
	IdleLost bool
}

// ErrorOutputs returns the error outputs among r.Outputs, in order: every
// traceback the cell showed, whether or not the execution failed.
func (r *ExecuteResult) ErrorOutputs() []Output {
	var errs []Output
	for _, o := range r.Outputs {
		if o.Type == OutputError {
			errs = append(errs, o)
		}
	}
	return errs
}

// ExecError is an exception raised by the code. Its Error() is the kernel's
// "EName: EValue"; Traceback keeps the kernel's formatting, ANSI codes included.
type ExecError struct {
	EName     string
	EValue    string
	Traceback []string
}

func (e *ExecError) Error() string { return e.EName + ": " + e.EValue }

// ErrKernelDied is returned, wrapped in a *DiedError, by calls in flight when
// the kernel process exits or stops answering its heartbeat.
var ErrKernelDied = errors.New("kernel died")

// ErrInterruptIgnored is returned with the context's error when the kernel
// was interrupted but did not finish the execution within the grace period.
// The kernel is still busy; the caller decides whether to restart it.
var ErrInterruptIgnored = errors.New("kernel: interrupt ignored")

// ErrNoReply is returned when the kernel reported idle for an execution
// but sent no execute_reply within noReplyWait. ipykernel does that when an
// interrupt arrives while it is handling another; the code is not running
// any more and the namespace is intact.
var ErrNoReply = errors.New("kernel: idle without an execute_reply")

// ErrNotStarted is returned with the context's error when the context ended
// while the execute_request waited in the kernel's queue behind other code
// (another client's, or a silent helper's), and it did not start within
// InterruptGrace after. Execute does not interrupt then, since the code
// running is not its own. The kernel still runs the request when it gets to
// it: Jupyter cannot withdraw a queued request.
var ErrNotStarted = errors.New("kernel: request still queued behind other code; not interrupted")

// noReplyWait is how long Execute waits for a reply once idle arrived.
// ipykernel sends the reply before idle, so this only has to cover the
// reply travelling on another socket.
const noReplyWait = 2 * time.Second

// noIdleWait is how long Execute waits, once the reply is in, for the
// idle status after the request's last iopub message.
const noIdleWait = 5 * time.Second

// ErrNotOwned is returned by Restart on a kernel that was attached to rather
// than started, since the process belongs to someone else.
var ErrNotOwned = errors.New("kernel: not started by this client")

// DiedError says how the kernel ended. It matches ErrKernelDied with errors.Is.
type DiedError struct {
	ExitCode int    // -1 when killed by a signal or unknown
	Signal   string // e.g. "killed"; empty when it exited
	SignalNo int    // e.g. 9; 0 when it exited
	// Heartbeat is set when death was seen as a silent heartbeat (attached
	// kernels), not as a process exit.
	Heartbeat bool
	Stderr    string // the last lines the kernel wrote to stderr
	// Remote says how a gateway reported the end of a kernel it runs.
	Remote string
	// Restarted is set for the calls that were in flight when Restart or
	// ForceRestart replaced the process under them: the Kernel itself goes
	// on with the new process.
	Restarted bool
	// Protocol is set when the kernel broke the messaging protocol (a
	// message over Options.MaxMessageSize): its connection was ended and
	// a process of ours killed.
	Protocol *ProtocolError
}

func (e *DiedError) Error() string {
	switch {
	case e.Protocol != nil:
		return "kernel stopped: " + e.Protocol.Error()
	case e.Restarted:
		return "kernel died (restarted)"
	case e.Remote != "":
		return "kernel died (" + e.Remote + ")"
	case e.Heartbeat:
		return "kernel died (no heartbeat)"
	case e.SignalNo != 0:
		return fmt.Sprintf("kernel died (signal %d)", e.SignalNo)
	default:
		return fmt.Sprintf("kernel died (exit status %d)", e.ExitCode)
	}
}

// Is makes errors.Is(err, ErrKernelDied) true.
func (e *DiedError) Is(target error) bool { return target == ErrKernelDied }

// Unwrap returns the protocol error that ended the kernel, if any.
func (e *DiedError) Unwrap() error {
	if e.Protocol == nil {
		return nil
	}
	return e.Protocol
}

// RestartError is what every call on a Kernel returns after a Restart
// stopped the old process and could not start the new one: the kernel is
// gone, for the reason in Err. It matches ErrKernelDied with errors.Is, and
// unwraps to Err.
type RestartError struct{ Err error }

func (e *RestartError) Error() string {
	return "kernel died: the restart failed: " + e.Err.Error()
}

// Is makes errors.Is(err, ErrKernelDied) true.
func (e *RestartError) Is(target error) bool { return target == ErrKernelDied }

// Unwrap returns the cause of the failed restart.
func (e *RestartError) Unwrap() error { return e.Err }

// KernelInfo is the kernel_info_reply content.
type KernelInfo struct {
	Status                string `json:"status"`
	ProtocolVersion       string `json:"protocol_version"`
	Implementation        string `json:"implementation"`
	ImplementationVersion string `json:"implementation_version"`
	LanguageInfo          struct {
		Name           string `json:"name"`
		Version        string `json:"version"`
		MimeType       string `json:"mimetype"`
		FileExtension  string `json:"file_extension"`
		PygmentsLexer  string `json:"pygments_lexer"`
		NBConvertExprt string `json:"nbconvert_exporter"`
	} `json:"language_info"`
	Banner string `json:"banner"`
	// SupportedFeatures lists optional protocol features, e.g. "kernel
	// subshells" (JEP 91).
	SupportedFeatures []string `json:"supported_features"`
}

// CompleteReply is the complete_reply content.
type CompleteReply struct {
	Status      string          `json:"status"`
	Matches     []string        `json:"matches"`
	CursorStart int             `json:"cursor_start"`
	CursorEnd   int             `json:"cursor_end"`
	Metadata    json.RawMessage `json:"metadata"`
}

// InspectReply is the inspect_reply content. Data is a MIME bundle,
// usually text/plain with ANSI colour codes.
type InspectReply struct {
	Status string                     `json:"status"`
	Found  bool                       `json:"found"`
	Data   map[string]json.RawMessage `json:"data"`
}

// executeReply is the execute_reply content.
type executeReply struct {
	Status          string                     `json:"status"`
	ExecutionCount  int                        `json:"execution_count"`
	UserExpressions map[string]json.RawMessage `json:"user_expressions"`
	Payload         []json.RawMessage          `json:"payload"`
	EName           string                     `json:"ename"`
	EValue          string                     `json:"evalue"`
	Traceback       []string                   `json:"traceback"`
}

// iopubContent covers the fields of every iopub message an execution reads.
type iopubContent struct {
	Name           string                     `json:"name"`
	Text           string                     `json:"text"`
	Data           map[string]json.RawMessage `json:"data"`
	Metadata       map[string]json.RawMessage `json:"metadata"`
	ExecutionCount int                        `json:"execution_count"`
	Transient      struct {
		DisplayID string `json:"display_id"`
	} `json:"transient"`
	Wait           bool     `json:"wait"`
	EName          string   `json:"ename"`
	EValue         string   `json:"evalue"`
	Traceback      []string `json:"traceback"`
	ExecutionState string   `json:"execution_state"`
}
