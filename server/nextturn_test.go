package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
)

// streamToEnd sends text on contextID as a streaming send and reads the stream up to the
// task's final status, as a client does before it sends the next message; it returns the
// stream's error, -32004 CONTEXT_BUSY included.
func streamToEnd(ctx context.Context, c *a2aclient.Client, contextID, text string) error {
	st, err := c.SendStreamingMessage(ctx, &a2a.SendParams{Message: a2a.Message{
		MessageID: "m-" + text, ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)},
	}})
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			return fmt.Errorf("stream ended before the final status: %w", err)
		}
		if ev.Status == nil || !ev.Status.Status.State.EndsStream() {
			continue
		}
		if s := ev.Status.Status.State; s != a2a.StateCompleted {
			return fmt.Errorf("final status %q, want completed", s)
		}
		return nil
	}
}

// TestNextTurnAfterStreamIsNotBusy is issue #15 item 1 over a real server: a client that
// streams a turn (message/stream in v0.3, SendStreamingMessage in v1.0), reads it to the
// final status and sends the next message at once (a blocking send) is never refused with
// CONTEXT_BUSY; nor is the stream that follows the blocking send's answer. The same over
// the WebSocket (SendStreamingMessage, then SendMessage, on one socket). Before the fix,
// 8 of 500 message/stream and 32 of 500 SendStreamingMessage follow-ups were.
func TestNextTurnAfterStreamIsNotBusy(t *testing.T) {
	t.Parallel()
	const rounds = 170 // per transport: 510 stream-then-send rounds, 1,020 turns
	s := startServer(t, testConfig(t))
	tests := []struct {
		name    string
		dialect a2a.Dialect
	}{
		{"v0.3 message/stream", a2a.V03},
		{"v1.0 SendStreamingMessage", a2a.V1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := a2aclient.New(s.URL(), a2aclient.Options{Dialect: tt.dialect})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ctx, contextID := t.Context(), "next-turn-"+fmt.Sprint(tt.dialect)
			busy := 0
			for i := range rounds {
				err := streamToEnd(ctx, c, contextID, fmt.Sprintf("stream %d", i))
				if err == nil {
					var res a2a.SendResult
					res, err = c.SendMessage(ctx, &a2a.SendParams{Message: a2a.Message{
						MessageID: fmt.Sprintf("send-%d", i), ContextID: contextID, Role: a2a.RoleUser,
						Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("send %d", i))},
					}})
					if err == nil && (res.Task == nil || res.Task.Status.State != a2a.StateCompleted) {
						t.Fatalf("round %d: blocking send answered %+v, want a completed task", i, res)
					}
				}
				switch {
				case errors.Is(err, a2a.ErrContextBusy):
					busy++
					t.Logf("round %d: %v", i, err)
				case err != nil:
					t.Fatalf("round %d: %v", i, err)
				}
			}
			t.Logf("%s: %d stream-then-send rounds on one context: %d CONTEXT_BUSY", tt.name, rounds, busy)
			if busy != 0 {
				t.Errorf("%d of %d rounds refused with CONTEXT_BUSY, want 0", busy, rounds)
			}
		})
	}
	t.Run("websocket SendStreamingMessage", func(t *testing.T) {
		t.Parallel()
		ws := wsDial(t, s, "")
		busy := 0
		for i := range rounds {
			cid := "next-turn-ws"
			wsWrite(t, ws, `{"jsonrpc":"2.0","id":"s%d","method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"ws-s%d","contextId":%q,"parts":[{"text":"stream %d"}]}}}`, i, i, cid, i)
			f, err := wsReadFrame(ws)
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			if f.Error == nil {
				// The first frame is the stream's first event; read on to its final status.
				if _, err := wsCollect(ws, fmt.Sprintf(`"s%d"`, i), finalOf("")); err != nil {
					t.Fatalf("round %d: stream: %v", i, err)
				}
				wsWrite(t, ws, `{"jsonrpc":"2.0","id":"b%d","method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"ws-b%d","contextId":%q,"parts":[{"text":"send %d"}]}}}`, i, i, cid, i)
				if f, err = wsReadFrame(ws); err != nil {
					t.Fatalf("round %d: blocking send: %v", i, err)
				}
			}
			switch {
			case f.Error != nil && f.Error.Code == -32004:
				busy++
				t.Logf("round %d: frame %s: %s", i, f.ID, f.Error.Message)
			case f.Error != nil:
				t.Fatalf("round %d: frame %s: error %d %s", i, f.ID, f.Error.Code, f.Error.Message)
			}
		}
		t.Logf("websocket: %d stream-then-send rounds on one context: %d CONTEXT_BUSY", rounds, busy)
		if busy != 0 {
			t.Errorf("%d of %d rounds refused with CONTEXT_BUSY, want 0", busy, rounds)
		}
	})
}
