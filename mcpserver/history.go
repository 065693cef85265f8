package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-mcp/kernel-mcp/history"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// History bounds: what one entry keeps on disk and in memory. Results shown
// to the model are cut harder (Config.OutputLimit); history keeps more.
const (
	historyTextLimit = 200_000  // characters per text field
	historyDataLimit = 10 << 20 // bytes per MIME value, e.g. a base64 PNG
	// maxOutputs bounds the outputs one run keeps (its streams are bounded
	// by bytes): 10,000 displays in a loop keep the first 500.
	maxOutputs = 500
)

func historyURI(id string) string { return "session://" + id + "/history" }

// historyEntry converts an execution into a history entry.
func historyEntry(code, source string, res *kernel.ExecuteResult, out RunOutput, gen int, start, end time.Time) history.Entry {
	e := history.Entry{Code: code, Source: source, Status: out.Status, Generation: gen, Start: start, End: end, Note: out.Note, Outputs: []history.Output{}}
	if res == nil {
		return e
	}
	e.ExecutionCount = res.ExecutionCount
	for _, o := range res.Outputs {
		e.Outputs = append(e.Outputs, history.Output{
			OutputType: o.Type, Name: o.Name, Text: o.Text, Data: o.Data, Metadata: o.Metadata,
			ExecutionCount: o.ExecutionCount, EName: o.EName, EValue: o.EValue, Traceback: o.Traceback,
		})
	}
	// An error the server reports for a kernel that never replied (a dead
	// kernel) still belongs in the record. An error the reply alone carries
	// is left out, as a notebook leaves it out: IPython's UsageError (an
	// unknown magic) comes as stderr text plus the reply, and an error
	// output would show it twice.
	if res.Error != nil && res.Status != "error" && !hasError(e.Outputs) {
		e.Outputs = append(e.Outputs, history.Output{OutputType: "error", EName: res.Error.EName, EValue: res.Error.EValue, Traceback: res.Error.Traceback})
	}
	return e
}

func hasError(outs []history.Output) bool {
	for _, o := range outs {
		if o.OutputType == "error" {
			return true
		}
	}
	return false
}

// record appends an entry to the session's history, in memory and on disk,
// and tells subscribers. A disk failure is logged, never fatal: the entry is
// still in memory.
func (s *Server) record(ss *Session, e history.Entry) {
	e = history.Cap(e, historyTextLimit, historyDataLimit)
	ss.mu.Lock()
	ss.hist = append(ss.hist, e)
	store := ss.store
	ss.mu.Unlock()
	if store != nil {
		if err := store.Append(e); err != nil {
			s.cfg.Logger.Error("appending to history file", "session", ss.id, "error", err)
		}
	}
	s.historyChanged(ss)
}

func (s *Server) historyChanged(ss *Session) {
	if s.subscriptions.Load() <= 0 {
		return
	}
	s.mcp.ResourceUpdated(s.ctx, &mcp.ResourceUpdatedNotificationParams{URI: historyURI(ss.id)})
}

// rewriteHistory replaces the session's history with entries.
func (s *Server) rewriteHistory(ss *Session, entries []history.Entry) error {
	ss.mu.Lock()
	ss.hist = entries
	store, meta := ss.store, ss.meta
	ss.mu.Unlock()
	var err error
	if store != nil {
		err = store.Rewrite(meta, entries)
	}
	s.historyChanged(ss)
	return err
}

func (s *Server) clearHistory(_ context.Context, ss *Session) error {
	return s.rewriteHistory(ss, nil)
}

// register adds a new session: its history file, when histories are kept on
// disk, and its listed resource. Call with s.mu held.
func (s *Server) register(ss *Session) error {
	if err, ok := s.unrestorable[ss.id]; ok {
		return fmt.Errorf("session %q cannot be created: the history file it had when the server started could not be read (%v). "+
			"It is left as it is; use another session_id, or move the file out of %s and restart the server", ss.id, err, s.sessionsDir())
	}
	ss.meta = history.Meta{SessionID: ss.id, CreatedAt: ss.created, Kernel: ss.choice.Kernel, Python: ss.choice.Python, Cwd: ss.choice.Cwd,
		KernelID: ss.choice.KernelID, ConnectionFile: ss.choice.ConnectionFile}
	if s.cfg.StateDir != "" {
		st, err := history.Create(s.sessionsDir(), ss.meta)
		if err != nil {
			return fmt.Errorf("cannot create the history file of session %q: %w", ss.id, err)
		}
		ss.store = st
	}
	s.sessions[ss.id] = ss
	s.addResource(ss)
	return nil
}

// unregister forgets a session: its resource and its history file. Call
// with s.mu held.
func (s *Server) unregister(ss *Session) {
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	ss.mu.Lock()
	ss.deleted = true
	ss.mu.Unlock()
	s.mcp.RemoveResources(historyURI(ss.id))
	if ss.store != nil {
		if err := ss.store.Remove(); err != nil {
			s.cfg.Logger.Error("removing history file", "session", ss.id, "error", err)
		}
	}
}

func (s *Server) sessionsDir() string { return filepath.Join(s.cfg.StateDir, "sessions") }

func (s *Server) addResource(ss *Session) {
	s.mcp.AddResource(&mcp.Resource{
		URI:         historyURI(ss.id),
		Name:        ss.id + "-history",
		Title:       "History of session " + ss.id,
		Description: "Numbered transcript of the code run in session " + ss.id + " and its outputs",
		MIMEType:    "text/plain",
	}, s.readHistoryResource)
}

// restore loads the histories kept in the state dir as stopped sessions:
// their history can be read and exported, and the first run starts a kernel
// and says that the history did not run in it. A file with unreadable
// lines keeps the rest (history.Recover sets the file as it was aside),
// and the session says so. A file that cannot be read at all is left as it
// is, and its session id refused, so that no new session writes over it.
func (s *Server) restore() error {
	if s.cfg.StateDir == "" {
		return nil
	}
	dir := s.sessionsDir()
	ids, err := history.Sessions(dir)
	if err != nil {
		return fmt.Errorf("reading histories in %s: %w", dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	restored, recovered, failed := 0, 0, 0
	for _, id := range ids {
		if checkSessionID(id) != nil {
			s.cfg.Logger.Warn("ignoring history file with an invalid session id", "file", id)
			continue
		}
		st, meta, entries, err := history.Open(dir, id)
		note := ""
		if errors.As(err, new(*history.CorruptError)) {
			var rec history.Recovery
			st, meta, entries, rec, err = history.Recover(dir, id)
			if err == nil {
				recovered++
				note = recoveryNote(id, rec, len(entries))
				s.cfg.Logger.Warn("restored what could be read of a corrupt history file; the file as it was is kept", "session", id,
					"skipped_lines", rec.Skipped, "meta_lost", rec.MetaLost, "blocks", len(entries), "kept_as", rec.SetAside)
			}
		}
		if err != nil {
			failed++
			if s.unrestorable == nil {
				s.unrestorable = map[string]error{}
			}
			s.unrestorable[id] = err
			s.cfg.Logger.Error("cannot restore a session's history; the file is left as it is, and the session id is refused until it is moved away", "session", id, "error", err)
			continue
		}
		ss := s.newSession(id, kernelChoice{Kernel: meta.Kernel, Python: meta.Python, Cwd: meta.Cwd, KernelID: meta.KernelID, ConnectionFile: meta.ConnectionFile})
		if !meta.CreatedAt.IsZero() {
			ss.created = meta.CreatedAt
		}
		ss.meta, ss.store, ss.hist = meta, st, entries
		ss.meta.CreatedAt = ss.created
		ss.restored, ss.restoreNote = len(entries) > 0, note
		for _, e := range entries {
			ss.gen = max(ss.gen, e.Generation)
		}
		s.sessions[id] = ss
		s.addResource(ss)
		restored++
	}
	if len(ids) > 0 {
		s.cfg.Logger.Info("restored session histories", "count", restored, "recovered_from_corrupt_files", recovered, "failed", failed, "dir", dir)
	}
	return nil
}

// recoveryNote tells the user what restoring a corrupt history file left
// out, and where the file as it was is kept.
func recoveryNote(id string, rec history.Recovery, blocks int) string {
	lines := make([]string, len(rec.Skipped))
	for i, n := range rec.Skipped {
		lines[i] = strconv.Itoa(n)
	}
	note := fmt.Sprintf("Note: the history file of session %q was damaged when the server started: ", id)
	if len(lines) > 0 {
		note += fmt.Sprintf("line(s) %s could not be read and were left out, ", strings.Join(lines, ", "))
	}
	note += fmt.Sprintf("%d block(s) were kept.", blocks)
	if rec.MetaLost {
		note += " Its first record (the session's kernel, interpreter and working directory) was lost, so the session uses the server's defaults."
	}
	return note + " The file as it was is kept at " + rec.SetAside + "."
}

// takeRestoreNote returns, once, what restoring the session's history file
// had to leave out; "" when nothing.
func (ss *Session) takeRestoreNote() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.restoreNoteShown {
		return ""
	}
	ss.restoreNoteShown = true
	return ss.restoreNote
}

// readHistoryResource serves session://{session_id}/history.
func (s *Server) readHistoryResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	u, err := url.Parse(req.Params.URI)
	if err != nil || u.Scheme != "session" || u.Path != "/history" {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	ss, err := s.lookup(u.Host)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	text := transcriptOf(ss, nil, nil)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// slice returns a copy of the session's entries in [start:end) and the
// 1-based number of the first.
func (ss *Session) slice(start, end *int) ([]history.Entry, int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	lo, hi := history.Slice(len(ss.hist), start, end)
	return append([]history.Entry(nil), ss.hist[lo:hi]...), lo + 1
}

func transcriptOf(ss *Session, start, end *int) string {
	entries, first := ss.slice(start, end)
	if len(entries) == 0 {
		return "(no history)"
	}
	return history.Transcript(entries, first)
}

// HistoryInput selects a slice of a session's history, Python-style.
type HistoryInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Start     *int   `json:"start,omitempty" jsonschema:"first block, 0-based; negative counts from the end (Python slice rules)"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before (exclusive); negative counts from the end"`
}

// DeleteHistoryInput is the input of delete_history.
type DeleteHistoryInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Start     *int   `json:"start" jsonschema:"first block to delete, 0-based; negative counts from the end"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before; without it only the block at start is deleted"`
}

// ExportInput is the input of export_history, save_script and save_notebook.
type ExportInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Path      string `json:"path" jsonschema:"file to write; relative paths resolve against the session's working directory; missing folders are created"`
	Start     *int   `json:"start,omitempty" jsonschema:"first block, 0-based (Python slice rules)"`
	End       *int   `json:"end,omitempty" jsonschema:"block to stop before (exclusive)"`
}

// RerunInput is the input of rerun_code.
type RerunInput struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"the session (default \"default\")"`
	Start     *int     `json:"start,omitempty" jsonschema:"first block to re-run, 0-based (Python slice rules)"`
	End       *int     `json:"end,omitempty" jsonschema:"block to stop before (exclusive)"`
	Timeout   *float64 `json:"timeout,omitempty" jsonschema:"seconds allowed for each block; 0 means no limit"`
	// Background hands the run off at once.
	Background bool `json:"background,omitempty" jsonschema:"return at once with the run's id instead of waiting; wait_run then gives the result"`
}

// HistoryOutput is the structured content of get_history.
type HistoryOutput struct {
	SessionID  string `json:"session_id"`
	Total      int    `json:"total"`
	First      int    `json:"first"` // 1-based number of the first block shown
	Count      int    `json:"count"`
	Transcript string `json:"transcript"`
}

// ExportOutput is the structured content of the export tools.
type ExportOutput struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	Blocks    int    `json:"blocks"`
	Bytes     int    `json:"bytes"`
}

// BlockSummary is one re-run block in a run_code or rerun_code result.
type BlockSummary struct {
	Block          int        `json:"block"` // 1-based number in the history it was taken from
	Status         string     `json:"status"`
	ExecutionCount int        `json:"execution_count"`
	Result         string     `json:"result"`
	Error          *ErrorInfo `json:"error,omitempty"`
}

func (s *Server) addHistoryTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, &mcp.Tool{Name: "get_history", Description: "Numbered transcript of the code run in a session and its outputs ([1] is the first block). start/end select blocks with Python slice rules on 0-based indices: start=-1 is the last block, start=0,end=2 the first two.", Annotations: ro}, s.getHistory)
	addTool(s, &mcp.Tool{Name: "delete_history", Description: "Delete blocks from a session's history: the block at start, or the slice [start:end) with Python slice rules. The namespace is not touched."}, s.deleteHistory)
	addTool(s, &mcp.Tool{Name: "export_history", Description: "Write the transcript (code and outputs) of a session, or a slice of it, to a text file. Replies with the absolute path."}, s.exportHistory)
	addTool(s, &mcp.Tool{Name: "save_script", Description: "Write the code of a session's history (no outputs), or a slice of it, as a runnable .py script with # %% cell markers. Replies with the absolute path."}, s.saveScript)
	addTool(s, &mcp.Tool{Name: "save_notebook", Description: "Write a session's history, or a slice of it, as a Jupyter notebook (.ipynb, nbformat 4) with its outputs and plots. Replies with the absolute path."}, s.saveNotebook)
	addTool(s, &mcp.Tool{Name: "run_notebook", Description: "Run a notebook (.ipynb, nbformat 4) or a py:percent script (# %% cells) in a session, cell by cell as one run: each code cell becomes a history block, markdown cells are kept for save_notebook, and it stops at the first error, naming the cell. start/end pick code cells (0-based, Python slice rules). execute=false only enters the cells (with the notebook's outputs) into the history, for run_code start/end, rerun_code or save_notebook. Hands off like run_code when it runs long."}, s.runNotebook)
	addTool(s, &mcp.Tool{Name: "rerun_code", Description: "Restart the session's kernel (fresh namespace), then re-run blocks of its history in order, stopping at the first error. start/end select blocks with Python slice rules; all blocks by default. Use it to rebuild state after a crash or reset_run_context."}, s.rerunCode)

	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "session://{session_id}/history",
		Name:        "session-history",
		Title:       "Session history",
		Description: "Numbered transcript of the code run in a session and its outputs",
		MIMEType:    "text/plain",
	}, s.readHistoryResource)
	s.addImageResources()
}

func (s *Server) getHistory(ctx context.Context, req *mcp.CallToolRequest, in HistoryInput) (*mcp.CallToolResult, HistoryOutput, error) {
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[HistoryOutput]("%v", err)
	}
	entries, first := ss.slice(in.Start, in.End)
	ss.mu.Lock()
	total := len(ss.hist)
	ss.mu.Unlock()
	out := HistoryOutput{SessionID: ss.id, Total: total, First: first, Count: len(entries)}
	if len(entries) == 0 {
		out.Transcript = ""
		msg := fmt.Sprintf("No blocks in that range: session %q has %d.", ss.id, total)
		if total == 0 {
			msg = fmt.Sprintf("Session %q has no history yet.", ss.id)
		}
		return textResult(msg), out, nil
	}
	out.Transcript = history.Transcript(entries, first)
	text, _ := history.CutMiddle(out.Transcript, s.cfg.OutputLimit)
	out.Transcript = text
	return textResult(text), out, nil
}

func (s *Server) deleteHistory(ctx context.Context, req *mcp.CallToolRequest, in DeleteHistoryInput) (*mcp.CallToolResult, ExportOutput, error) {
	if in.Start == nil {
		return errResult[ExportOutput]("delete_history needs start: the 0-based index of the first block to delete")
	}
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	// In its turn, so that no run records a block between the read of the
	// history and its rewrite.
	release, err := s.waitTurn(ctx, ss, req.Params.Meta)
	if err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	defer release()
	ss.mu.Lock()
	n := len(ss.hist)
	var lo, hi int
	if in.End == nil {
		// Just the block at start, which must exist.
		i := *in.Start
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			ss.mu.Unlock()
			return errResult[ExportOutput]("no block at index %d: session %q has %d (indices 0 to %d, or -1 to -%d)", *in.Start, ss.id, n, n-1, n)
		}
		lo, hi = i, i+1
	} else {
		lo, hi = history.Slice(n, in.Start, in.End)
	}
	kept := append(append([]history.Entry(nil), ss.hist[:lo]...), ss.hist[hi:]...)
	ss.mu.Unlock()
	err = s.rewriteHistory(ss, kept)
	if err != nil && !errors.Is(err, history.ErrNotDurable) {
		return errResult[ExportOutput]("blocks deleted in memory, but the history file could not be rewritten: %v", err)
	}
	msg := fmt.Sprintf("Deleted %d block(s) from session %q; %d remain.", hi-lo, ss.id, len(kept))
	if err != nil {
		msg += fmt.Sprintf(" The history file was rewritten, but: %v", err)
	}
	return textResult(msg), ExportOutput{SessionID: ss.id, Blocks: hi - lo}, nil
}

// export renders a slice of the history and writes it atomically.
func (s *Server) export(in ExportInput, what string, render func([]history.Entry, int, *Session) ([]byte, error)) (*mcp.CallToolResult, ExportOutput, error) {
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	path, err := ss.resolvePath(in.Path, writePath)
	if err != nil {
		return errResult[ExportOutput]("cannot write the %s: %v", what, err)
	}
	entries, first := ss.slice(in.Start, in.End)
	data, err := render(entries, first, ss)
	if err != nil {
		return errResult[ExportOutput]("rendering the %s: %v", what, err)
	}
	// 0666 less the umask, as any program's new file: the user decides
	// who may read an export, as with everything else they write.
	if err := path.writeFile(data, 0o666); err != nil {
		return errResult[ExportOutput]("%v", err)
	}
	out := ExportOutput{SessionID: ss.id, Path: path.abs, Blocks: len(entries), Bytes: len(data)}
	return textResult(fmt.Sprintf("Saved %d block(s) of session %q as a %s to %s", len(entries), ss.id, what, path)), out, nil
}

func (s *Server) exportHistory(ctx context.Context, req *mcp.CallToolRequest, in ExportInput) (*mcp.CallToolResult, ExportOutput, error) {
	return s.export(in, "transcript", func(e []history.Entry, first int, _ *Session) ([]byte, error) {
		if len(e) == 0 {
			return []byte{}, nil
		}
		return []byte(history.Transcript(e, first)), nil
	})
}

func (s *Server) saveScript(ctx context.Context, req *mcp.CallToolRequest, in ExportInput) (*mcp.CallToolResult, ExportOutput, error) {
	return s.export(in, "script", func(e []history.Entry, first int, ss *Session) ([]byte, error) {
		return []byte(history.Script(e, first, ss.id)), nil
	})
}

func (s *Server) saveNotebook(ctx context.Context, req *mcp.CallToolRequest, in ExportInput) (*mcp.CallToolResult, ExportOutput, error) {
	return s.export(in, "notebook", func(e []history.Entry, first int, ss *Session) ([]byte, error) {
		ss.mu.Lock()
		meta := history.NotebookMeta{KernelName: ss.info.KernelName, Language: ss.info.Language, LanguageVersion: ss.info.Version}
		ss.mu.Unlock()
		if meta.KernelName == "" {
			meta.KernelName = "python3"
		}
		if meta.Language == "" {
			meta.Language = "python"
		}
		meta.DisplayName = "Python 3 (ipykernel)"
		if meta.Language != "python" {
			meta.DisplayName = meta.KernelName
		}
		return history.Notebook(e, first, meta)
	})
}

// replay runs history blocks in order in the session, stopping at the
// first that does not succeed. The caller holds the execution right.
func (s *Server) replay(ctx context.Context, r *run, ss *Session, entries []history.Entry, first int, timeout time.Duration) (*mcp.CallToolResult, RunOutput, error) {
	var (
		content []mcp.Content
		last    RunOutput
		blocks  []BlockSummary
	)
	for i, e := range entries {
		n := first + i
		if !e.IsCode() {
			continue // a notebook's text cell
		}
		c, out, err := s.runBlock(ctx, r, ss, e.Code, "rerun", timeout)
		if err != nil {
			return errResult[RunOutput]("re-running block [%d]: %v", n, err)
		}
		blocks = append(blocks, BlockSummary{Block: n, Status: out.Status, ExecutionCount: out.ExecutionCount, Result: out.Result, Error: out.Error})
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf("[%d] %s", n, out.Status)})
		content = append(content, c...)
		last = out
		if out.Status != "ok" {
			last.Blocks = blocks
			head := replayHeadline(entries, first, blocks)
			return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...), IsError: true}, last, nil
		}
	}
	last.SessionID = ss.id
	last.RunID = r.id
	last.Blocks = blocks
	if last.Displays == nil {
		last.Displays = []Display{}
	}
	if len(entries) == 0 {
		last.Status = "ok"
		return textResult("No blocks in that range."), last, nil
	}
	if len(blocks) == 0 {
		last.Status = "ok"
	}
	head := replayHeadline(entries, first, blocks)
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: head}}, content...)}, last, nil
}

// replayHeadline sums up a replay of entries, numbered from first: blocks
// are the code blocks that ran, and the last of them stopped the replay
// unless it succeeded. It counts code blocks only: a notebook's text cells
// are kept in the history but never run.
func replayHeadline(entries []history.Entry, first int, blocks []BlockSummary) string {
	code := 0
	for _, e := range entries {
		if e.IsCode() {
			code++
		}
	}
	text := len(entries) - code
	if len(blocks) > 0 {
		if b := blocks[len(blocks)-1]; b.Status != "ok" {
			if b.Error != nil {
				return fmt.Sprintf("Stopped at block [%d]: %s. %d of %d blocks ran.", b.Block, errorHeadline(b.Error), len(blocks), code)
			}
			return fmt.Sprintf("Stopped at block [%d] (%s); %d of %d blocks ran.", b.Block, b.Status, len(blocks), code)
		}
	}
	head := fmt.Sprintf("Re-ran %d block(s) ([%d] to [%d]); all succeeded.", code, first, first+len(entries)-1)
	if code == 0 {
		head = fmt.Sprintf("No code blocks in [%d] to [%d]; nothing ran.", first, first+len(entries)-1)
	}
	if text > 0 {
		head += fmt.Sprintf(" %d text cell(s) among them were skipped.", text)
	}
	return head
}

func (s *Server) rerunCode(ctx context.Context, req *mcp.CallToolRequest, in RerunInput) (*mcp.CallToolResult, RunOutput, error) {
	timeout, err := s.timeoutFor(in.Timeout)
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *run) (*mcp.CallToolResult, RunOutput, error) {
		entries, first := ss.slice(in.Start, in.End)
		if err := ss.restart(ctx); err != nil {
			return errResult[RunOutput]("session %q: restart failed: %v", ss.id, err)
		}
		return s.limitJoined(s.replay(ctx, r, ss, entries, first, timeout))
	}, runHandoff(ss))
}

// runSlice is run_code's history form: re-run blocks in the live kernel.
func (s *Server) runSlice(ctx context.Context, req *mcp.CallToolRequest, in RunCodeInput, timeout time.Duration) (*mcp.CallToolResult, RunOutput, error) {
	ss, err := s.lookup(sessionOr(in.SessionID))
	if err != nil {
		return errResult[RunOutput]("%v", err)
	}
	return runTool(s, ctx, req, ss, in.Background, func(ctx context.Context, r *run) (*mcp.CallToolResult, RunOutput, error) {
		entries, first := ss.slice(in.Start, in.End)
		if len(entries) == 0 {
			ss.mu.Lock()
			n := len(ss.hist)
			ss.mu.Unlock()
			return errResult[RunOutput]("no blocks in that range: session %q has %d", ss.id, n)
		}
		return s.limitJoined(s.replay(ctx, r, ss, entries, first, timeout))
	}, runHandoff(ss))
}
