// Kernel subshells (JEP 91): threads of the kernel that share its namespace
// and take shell requests beside the main shell, so that code can be read
// while a long execution runs.

package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// FeatureSubshells is the kernel_info_reply supported_features entry of a
// kernel that has subshells.
const FeatureSubshells = "kernel subshells"

// ErrNoSubshells is returned by CreateSubshell when the kernel did not
// advertise subshells in its kernel_info_reply.
var ErrNoSubshells = errors.New("kernel: this kernel has no subshells")

// ErrSubshellGone is returned for a request on a subshell of an earlier
// kernel process: a subshell dies with its kernel, restarts included.
var ErrSubshellGone = errors.New("kernel: the subshell went with an earlier kernel process")

// ErrAbandoned is returned with the context's error by Execute on a
// subshell when the context ended before the kernel answered. Nothing is
// interrupted, since an interrupt stops the kernel's main thread, whoever
// runs there: the subshell goes on with the request, and requests sent
// to it later wait behind it.
var ErrAbandoned = errors.New("kernel: subshell request abandoned; the kernel was not interrupted")

// Subshell is one subshell of one kernel process. It is valid until that
// process ends (a restart ends it too) or DeleteSubshell.
type Subshell struct {
	id string
	g  *generation
}

// ID is the subshell_id the kernel gave it.
func (s *Subshell) ID() string { return s.id }

// HasSubshells reports whether the current kernel process advertised
// subshells when it became ready. A restart may change the answer.
func (k *Kernel) HasSubshells() bool {
	_, err := k.withSubshells()
	return err == nil
}

// withSubshells is the current kernel process, or ErrNoSubshells when it
// did not advertise subshells.
func (k *Kernel) withSubshells() (*generation, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(g.features, FeatureSubshells) {
		return nil, ErrNoSubshells
	}
	return g, nil
}

// Implementation is the current kernel process's implementation and its
// version as its kernel_info_reply gave them, e.g. "ipython 8.12.3".
func (k *Kernel) Implementation() string {
	g, err := k.current()
	if err != nil {
		return ""
	}
	return g.implementation
}

// CreateSubshell asks the kernel for a new subshell (create_subshell_request
// on control). It fails with ErrNoSubshells at once, sending nothing, when
// the kernel has none; a kernel or gateway that drops the request leaves it
// waiting until ctx ends, so give ctx a short bound.
func (k *Kernel) CreateSubshell(ctx context.Context) (*Subshell, error) {
	g, err := k.withSubshells()
	if err != nil {
		return nil, err
	}
	var r struct {
		Status     string `json:"status"`
		SubshellID string `json:"subshell_id"`
		EValue     string `json:"evalue"`
	}
	if err := k.request(ctx, g, Control, "create_subshell_request", nil, "create_subshell_reply", &r, nil); err != nil {
		return nil, err
	}
	if r.Status != "ok" || r.SubshellID == "" {
		return nil, fmt.Errorf("kernel: create_subshell_request failed: %s %s", r.Status, r.EValue)
	}
	return &Subshell{id: r.SubshellID, g: g}, nil
}

// ListSubshells returns the ids of the kernel's subshells
// (list_subshell_request), whoever created them.
func (k *Kernel) ListSubshells(ctx context.Context) ([]string, error) {
	g, err := k.withSubshells()
	if err != nil {
		return nil, err
	}
	var r struct {
		Status    string   `json:"status"`
		Subshells []string `json:"subshell_id"`
	}
	if err := k.request(ctx, g, Control, "list_subshell_request", nil, "list_subshell_reply", &r, nil); err != nil {
		return nil, err
	}
	if r.Status != "ok" {
		return nil, fmt.Errorf("kernel: list_subshell_request failed: %s", r.Status)
	}
	if r.Subshells == nil {
		r.Subshells = []string{}
	}
	return r.Subshells, nil
}

// DeleteSubshell ends a subshell (delete_subshell_request). One of an
// earlier kernel process is gone already: that is not an error.
func (k *Kernel) DeleteSubshell(ctx context.Context, s *Subshell) error {
	g, err := k.current()
	if err != nil {
		return err
	}
	if s.g != g {
		return nil
	}
	var r struct {
		Status string `json:"status"`
		EValue string `json:"evalue"`
	}
	if err := k.request(ctx, g, Control, "delete_subshell_request", map[string]string{"subshell_id": s.id}, "delete_subshell_reply", &r, nil); err != nil {
		return err
	}
	if r.Status != "ok" {
		return fmt.Errorf("kernel: delete_subshell_request failed: %s %s", r.Status, r.EValue)
	}
	return nil
}

// onSubshell checks that s (nil: the main shell) belongs to g and returns
// the subshell_id to put in the header.
func onSubshell(g *generation, s *Subshell) (string, error) {
	if s == nil {
		return "", nil
	}
	if s.g != g {
		return "", ErrSubshellGone
	}
	return s.id, nil
}
