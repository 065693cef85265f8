package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// StatusReport is what session_status says of a session: its description,
// filled in by the status probe when the kernel can answer it.
type StatusReport struct {
	Info SessionInfo
	// Note says what the report leaves out and why, or, when the probe
	// ran beside a run in progress, the note of that read.
	Note string
	// DuringRun names the run the probe ran beside, "" if none.
	DuringRun string
	// remote is the lines about a gateway or attached kernel.
	remote      string
	restoreNote string
}

// Status probes the session for its report. The probe runs silently and
// leaves no names behind; during a run (between its blocks too) it runs
// beside it on a subshell, and a kernel still starting is not waited for.
func (ss *Session) Status(ctx context.Context) StatusReport {
	info := ss.Describe()
	var r StatusReport
	k, restored := ss.RunningKernel(), ss.Restored()
	r.restoreNote = ss.RestoreNote()
	switch {
	case k == nil && info.State == "stopped" && restored:
		r.Note = "The history was restored after a server restart, and no kernel has run it: the next run_code starts a fresh one (earlier variables are gone), rerun_code rebuilds them."
	case k == nil && info.State == "stopped" && ss.WasIdled():
		r.Note = "The kernel was stopped after being idle; the next run_code starts a fresh one (earlier variables are gone, history is kept)."
	case k == nil:
		r.Note = "No kernel runs in this session yet; the next run_code starts one."
	case info.State != "idle" || info.Run != nil:
		r.Note = "The kernel is " + info.State + "; details that need the kernel are left out."
		if info.State == "idle" {
			r.Note = "Run " + info.Run.RunID + " goes on; details that need the kernel are left out."
		}
		if b, _, err := ss.BesideNow(ctx); err != nil {
			r.Note += " " + err.Error()
		} else if b != nil {
			out, err := b.Probe(ctx, StatusProbe)
			if err == nil && applyStatusProbe(&info, out) {
				r.Note, r.DuringRun = b.Note(), b.RunID()
			} else if err != nil {
				r.Note += " " + err.Error()
			}
		}
	case StatusProbeCode(info.Language) == "":
		r.Note = "The status probe is for Python and R kernels only: the interpreter, working directory, memory and packages of this " + info.Language + " kernel are left out."
	default:
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := k.Execute(pctx, StatusProbeCode(info.Language), kernel.ExecuteOptions{Silent: true})
		cancel()
		if err != nil || !applyStatusProbe(&info, string(StatusProbeReply(info.Language, res))) {
			r.Note = "The kernel did not answer the status probe; details that need the kernel are left out."
		}
	}
	r.remote = remoteStatus(ctx, k, &info)
	r.Info = info
	return r
}

// applyStatusProbe fills info from the status probe's output; false when
// the output is not the probe's JSON line.
func applyStatusProbe(info *SessionInfo, out string) bool {
	var st struct {
		Executable string            `json:"executable"`
		Version    string            `json:"version"`
		Cwd        string            `json:"cwd"`
		RSS        int64             `json:"rss"`
		Packages   map[string]string `json:"packages"`
	}
	if json.Unmarshal([]byte(out), &st) != nil {
		return false
	}
	info.Interpreter, info.Version, info.Cwd, info.MemoryRSS, info.Packages = st.Executable, st.Version, st.Cwd, st.RSS, st.Packages
	return true
}

// remoteStatus fills the report's remote fields and returns the lines its
// text adds.
func remoteStatus(ctx context.Context, k *kernel.Kernel, info *SessionInfo) string {
	if k == nil {
		return ""
	}
	var b strings.Builder
	if id := k.GatewayKernelID(); id != "" {
		gi := &GatewayInfo{URL: k.GatewayURL(), KernelID: id, Attached: k.Attached()}
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := k.GatewayStatus(gctx)
		cancel()
		if err != nil {
			gi.Error = err.Error()
		} else {
			gi.ExecutionState, gi.LastActivity, gi.Connections = m.ExecutionState, m.LastActivity, m.Connections
		}
		info.Gateway = gi
		fmt.Fprintf(&b, "Gateway: %s, kernel %s", gi.URL, gi.KernelID)
		if gi.Attached {
			b.WriteString(" (attached: shared, only detached on delete)")
		}
		if err != nil {
			fmt.Fprintf(&b, "; the gateway did not answer: %v\n", err)
		} else {
			fmt.Fprintf(&b, "; the gateway reports it %s, %d connection(s), last active %s\n", m.ExecutionState, m.Connections, m.LastActivity)
		}
		return b.String()
	}
	info.ConnectionFile = k.ConnectionFile()
	info.Attached = k.Attached()
	fmt.Fprintf(&b, "Connection file: %s (jupyter console --existing %s)\n", info.ConnectionFile, info.ConnectionFile)
	if info.Attached {
		b.WriteString("Attached: the kernel is shared and only detached on delete.\n")
	}
	return b.String()
}

// Text is the report as session_status words it, for session id; uiURL is
// the web view's address, "" without one.
func (r StatusReport) Text(id, uiURL string) string {
	info := &r.Info
	var text strings.Builder
	fmt.Fprintf(&text, "Session %s: %s\n", id, info.State)
	if info.Language != "" {
		fmt.Fprintf(&text, "Language: %s %s\n", info.Language, info.Version)
	}
	if info.Interpreter != "" {
		fmt.Fprintf(&text, "Interpreter: %s\n", info.Interpreter)
	}
	if info.Pid != 0 {
		fmt.Fprintf(&text, "Pid: %d\n", info.Pid)
	}
	if info.MemoryRSS > 0 {
		fmt.Fprintf(&text, "Memory (RSS): %.1f MB\n", float64(info.MemoryRSS)/1e6)
	}
	if info.Cwd != "" {
		fmt.Fprintf(&text, "Working directory: %s\n", info.Cwd)
	}
	if len(info.Packages) > 0 {
		names := make([]string, 0, len(info.Packages))
		for n := range info.Packages {
			names = append(names, n)
		}
		slices.Sort(names)
		text.WriteString("Packages:")
		for _, n := range names {
			fmt.Fprintf(&text, " %s %s;", n, info.Packages[n])
		}
		text.WriteByte('\n')
	}
	text.WriteString(r.remote)
	fmt.Fprintf(&text, "History entries: %d\n", info.History)
	if info.HistoryUnsaved != nil {
		text.WriteString(info.HistoryUnsaved.Note() + "\n")
	}
	if r := info.Run; r != nil {
		fmt.Fprintf(&text, "Run in progress: %s (%s), %s for %.1f s", r.RunID, r.Tool, r.Status, float64(r.ElapsedMS)/1000)
		if r.Progress != "" {
			fmt.Fprintf(&text, ", at %s", r.Progress)
		}
		if r.Prompt != "" {
			fmt.Fprintf(&text, ", asking %q", r.Prompt)
		}
		if r.LastLine != "" {
			fmt.Fprintf(&text, ", last output %q", r.LastLine)
		}
		text.WriteByte('\n')
	}
	if info.QueuedRuns > 0 {
		fmt.Fprintf(&text, "Runs queued: %d\n", info.QueuedRuns)
	}
	if r.Note != "" {
		text.WriteString(r.Note + "\n")
	}
	if r.restoreNote != "" {
		text.WriteString(r.restoreNote + "\n")
	}
	if uiURL != "" {
		fmt.Fprintf(&text, "Web view: %s\n", uiURL)
	}
	return strings.TrimRight(text.String(), "\n")
}
