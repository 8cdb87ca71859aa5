package turn

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// TestStorageFullMidTurn: the storage fills up after the inbound message was stored, so
// neither the reply nor the record of the failure can be stored. A blocking send must not
// answer with a task that looks like it is still working: it gets STORAGE_UNAVAILABLE
// naming the cause and saying that the message was stored but the reply was not.
func TestStorageFullMidTurn(t *testing.T) {
	t.Parallel()
	st, full := openFullableLedger(t)
	ag := funcAgent(func(_ context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
		full.Store(true) // the inbound message is stored; nothing after it will be
		return agent.Result{}, emit("the reply")
	})
	r := New(Config{}, st, locking.NewLocal(), ag, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	p := &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "c", Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("hello")}}}
	res, err := r.SendMessage(localCtx(t), p)
	if err == nil {
		state := a2a.TaskState("")
		if res.Task != nil {
			state = res.Task.Status.State
		}
		t.Fatalf("SendMessage() = task in state %q, nil error; want STORAGE_UNAVAILABLE (the reply was not stored)", state)
	}
	var ae *a2a.Error
	if !errors.Is(err, a2a.ErrStorageUnavailable) || !errors.As(err, &ae) {
		t.Fatalf("SendMessage() error = %v, want an *a2a.Error wrapping ErrStorageUnavailable", err)
	}
	if ae.Metadata["cause"] != string(ledger.CauseFull) || !strings.Contains(ae.Message, "reply could not be stored") {
		t.Errorf("SendMessage() error = %q %v, want the cause (full) and that the reply was not stored", ae.Message, ae.Metadata)
	}
}
