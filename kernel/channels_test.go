package kernel

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kernel-mcp/kernel-mcp/kernel/wire"
)

// A process that gets hold of a kernel's iopub port (say, by binding it
// first) can publish to our client. What it sends without the connection
// file's key is dropped, counted, and never reaches a request; a message
// signed with the key passes.
func TestForgedIOPubMessagesAreDropped(t *testing.T) {
	ci, err := NewConnectionInfo()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The "kernel": a PUB on iopub and ROUTERs on the other ports, so the
	// client's dials succeed.
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Listen("tcp://" + net.JoinHostPort(ci.IP, strconv.Itoa(ci.IOPubPort))); err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{ci.ShellPort, ci.ControlPort, ci.StdinPort} {
		r := zmq4.NewRouter(ctx)
		defer r.Close()
		if err := r.Listen("tcp://" + net.JoinHostPort(ci.IP, strconv.Itoa(port))); err != nil {
			t.Fatal(err)
		}
	}
	hb := zmq4.NewRep(ctx)
	defer hb.Close()
	if err := hb.Listen("tcp://" + net.JoinHostPort(ci.IP, strconv.Itoa(ci.HBPort))); err != nil {
		t.Fatal(err)
	}

	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, err := dialZMQ(dctx, ci, connLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	good, _ := wire.NewSigner(ci.SignatureScheme, []byte(ci.Key))
	forger, _ := wire.NewSigner("hmac-sha256", []byte("not-the-key"))
	publish := func(s *wire.Signer, text string) {
		msg, _ := wire.NewMessage("stream", "kernel", map[string]string{"name": "stdout", "text": text})
		frames, _ := wire.Encode(msg, s)
		if err := pub.Send(zmq4.NewMsgFrom(frames...)); err != nil {
			t.Fatal(err)
		}
	}
	// A SUB joins asynchronously: publish signed messages until one
	// arrives, then the forgery, then a last signed one.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case r := <-conn.Messages():
			if string(r.Msg.Content) != "" {
				break wait
			}
		case <-tick.C:
			publish(good, "joined")
		case <-deadline:
			t.Fatal("no signed message arrived")
		}
	}
	publish(forger, "FORGED")
	publish(good, "after")
	for {
		select {
		case r := <-conn.Messages():
			var m iopubContent
			decodeAny(t, r.Msg.Content, &m)
			switch m.Text {
			case "FORGED":
				t.Fatal("a message with a wrong signature was delivered")
			case "after":
				n, lastErr := conn.Rejected()
				if n != 1 || !errors.Is(lastErr, wire.ErrBadSignature) {
					t.Fatalf("rejected %d, last error %v; want 1 bad signature", n, lastErr)
				}
				return
			}
		case <-deadline:
			t.Fatal("the signed message after the forgery never arrived")
		}
	}
}

func decodeAny(t *testing.T, b []byte, v any) {
	t.Helper()
	name, text, ok := decodeStream(b)
	if !ok {
		t.Fatalf("undecodable content %s", b)
	}
	*(v.(*iopubContent)) = iopubContent{Name: name, Text: text}
}
