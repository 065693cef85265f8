package engine

// PoolSummary describes the warm kernels kept ready for new sessions.
type PoolSummary struct {
	Size     int   `json:"size"`     // kernels kept ready per kind (0: the pool is off)
	Ready    int   `json:"ready"`    // started and waiting
	Starting int   `json:"starting"` // being started
	Pids     []int `json:"pids"`     // of the ready ones
}

// SessionInfo is the structured content of create_session and session_status.
type SessionInfo struct {
	SessionID   string            `json:"session_id"`
	State       string            `json:"state"`
	Language    string            `json:"language,omitempty"`
	Version     string            `json:"version,omitempty"`
	Interpreter string            `json:"interpreter,omitempty"`
	Kernel      string            `json:"kernel,omitempty"`
	Pid         int               `json:"pid,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	MemoryRSS   int64             `json:"memory_rss_bytes,omitempty"`
	Packages    map[string]string `json:"packages,omitempty"`
	History     int               `json:"history_count"`
	// HistoryUnsaved is what of the history is not in the session's
	// history file yet (a full disk); nil when all of it is.
	HistoryUnsaved *HistoryBacklog `json:"history_unsaved,omitempty"`
	// Run is the run in progress, if any; QueuedRuns counts those waiting
	// behind it.
	Run        *RunView `json:"run,omitempty"`
	QueuedRuns int      `json:"queued_runs,omitempty"`
	// Remote kernels (remote.go).
	ConnectionFile string       `json:"connection_file,omitempty"`
	Attached       bool         `json:"attached,omitempty"`
	Gateway        *GatewayInfo `json:"gateway,omitempty"`
}
