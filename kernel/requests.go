// One request and its reply, on shell or control; the shell requests other
// than execute: kernel_info, complete, inspect.

package kernel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// request sends one request and waits for the reply of replyType, decoding
// its content into out. sub, when set, addresses a shell request to that
// subshell.
func (k *Kernel) request(ctx context.Context, g *generation, ch Channel, msgType string, content any, replyType string, out any, sub *Subshell) error {
	return k.requestWith(ctx, g, ch, msgType, content, replyType, out, requestOptions{sub: sub})
}

// requestWith is request with the options of a RequestOption.
func (k *Kernel) requestWith(ctx context.Context, g *generation, ch Channel, msgType string, content any, replyType string, out any, o requestOptions) error {
	sid, err := onSubshell(g, o.sub)
	if err != nil {
		return err
	}
	msg, err := wire.NewMessage(msgType, k.session, content)
	if err != nil {
		return err
	}
	msg.Header.SubshellID = sid
	box := g.router.register(msg.Header.MsgID)
	defer g.router.unregister(msg.Header.MsgID)
	if err := g.conn.Send(ctx, ch, msg); err != nil {
		return err
	}
	for {
		select {
		case <-box.notify:
			for _, r := range box.take() {
				if o.onBusy != nil && r.Channel == IOPub && r.Msg.Header.MsgType == "status" {
					var st iopubContent
					if json.Unmarshal(r.Msg.Content, &st) == nil && st.ExecutionState == "busy" {
						o.onBusy()
						o.onBusy = nil
					}
				}
				if r.Channel == ch && r.Msg.Header.MsgType == replyType {
					if out == nil {
						return nil
					}
					if err := json.Unmarshal(r.Msg.Content, out); err != nil {
						return fmt.Errorf("kernel: decode %s: %w", replyType, err)
					}
					return nil
				}
			}
		case <-g.died:
			return g.diedErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// KernelInfo asks the kernel for its language and implementation.
func (k *Kernel) KernelInfo(ctx context.Context) (*KernelInfo, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	var info KernelInfo
	if err := k.request(ctx, g, Shell, "kernel_info_request", nil, "kernel_info_reply", &info, nil); err != nil {
		return nil, err
	}
	return &info, nil
}

// RequestOption tunes one shell request (Complete, Inspect).
type RequestOption func(*requestOptions)

type requestOptions struct {
	sub    *Subshell
	onBusy func()
}

// OnSubshell sends the request to subshell s, where it does not wait behind
// the main shell's execution.
func OnSubshell(s *Subshell) RequestOption { return func(o *requestOptions) { o.sub = s } }

// OnBusy calls f once when the kernel takes the request up (its busy
// status for it).
func OnBusy(f func()) RequestOption { return func(o *requestOptions) { o.onBusy = f } }

func requestOpts(opts []RequestOption) requestOptions {
	var o requestOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Complete asks for completions of code at cursorPos (a count of Unicode
// code points, as the protocol says; -1 means the end of code).
func (k *Kernel) Complete(ctx context.Context, code string, cursorPos int, opts ...RequestOption) (*CompleteReply, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if cursorPos < 0 {
		cursorPos = len([]rune(code))
	}
	var r CompleteReply
	err = k.requestWith(ctx, g, Shell, "complete_request", map[string]any{"code": code, "cursor_pos": cursorPos}, "complete_reply", &r, requestOpts(opts))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Inspect asks for documentation of the name at cursorPos (-1: end of code).
// detailLevel 0 gives the docstring, 1 also the source where available.
func (k *Kernel) Inspect(ctx context.Context, code string, cursorPos, detailLevel int, opts ...RequestOption) (*InspectReply, error) {
	g, err := k.current()
	if err != nil {
		return nil, err
	}
	if cursorPos < 0 {
		cursorPos = len([]rune(code))
	}
	var r InspectReply
	err = k.requestWith(ctx, g, Shell, "inspect_request", map[string]any{"code": code, "cursor_pos": cursorPos, "detail_level": detailLevel}, "inspect_reply", &r, requestOpts(opts))
	if err != nil {
		return nil, err
	}
	return &r, nil
}
