package turn

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// expiringLocker always grants the lease, as if every earlier holder's lease had expired
// unnoticed (its holder stalled past the TTL): the situation the ledger's epoch fences.
type expiringLocker struct{}

func (expiringLocker) Acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	return locking.NewLocal().Acquire(ctx, key, holder)
}

func (expiringLocker) Wait(context.Context, string) error { return nil }

func (expiringLocker) Holder(context.Context, string) (string, error) { return "", nil }

// TestFencingStaleHolder: a turn whose lease was taken over cannot append after the newer
// holder began; the newer turn is intact.
func TestFencingStaleHolder(t *testing.T) {
	t.Parallel()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	ag := newBlockingAgent()
	r := New(Config{}, st, expiringLocker{}, ag, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = r.Close(context.Background()); _ = st.Close() })

	stale, err := r.SendMessage(localCtx(t), &a2a.SendParams{
		Message: a2a.Message{MessageID: "m1", ContextID: "fenced", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("stale turn")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ag.started // the stale holder is stalled inside its agent
	fresh, err := r.SendMessage(localCtx(t), &a2a.SendParams{
		Message: a2a.Message{MessageID: "m2", ContextID: "fenced", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("fresh turn")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ag.started
	before, err := st.Conversation(t.Context(), "local", "fenced")
	if err != nil {
		t.Fatal(err)
	}
	close(ag.release) // both agents finish now: the stale one tries to append its reply
	testutil.WaitFor(t, "both turns to end", func() bool { return r.Running() == 0 })
	// The newer turn completed and is intact.
	got, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: fresh.Task.ID})
	if err != nil || got.Status.State != a2a.StateCompleted || a2a.PartsText(got.Artifacts[0].Parts) != "partial done" {
		t.Fatalf("fresh task = %+v, %v; want completed with its reply", got, err)
	}
	// Nothing of the stale turn was appended after the newer turn began.
	after, err := st.Range(t.Context(), "local", "fenced", before.LastSeq-2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range after {
		if e.TaskID == stale.Task.ID && (e.Visibility != ledger.VisibilityAudit || e.Kind != ledger.KindStatus) {
			t.Fatalf("stale turn appended seq %d (%s, %s) into the conversation after the newer turn began", e.Seq, e.Kind, e.Visibility)
		}
		if e.Epoch != before.Epoch && e.TaskID != stale.Task.ID {
			t.Fatalf("entry seq %d has epoch %d, want the newer turn's %d", e.Seq, e.Epoch, before.Epoch)
		}
	}
	// The stale task is closed as failed (audit-only), and its reply is nowhere.
	old, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: stale.Task.ID})
	if err != nil || old.Status.State != a2a.StateFailed || len(old.Artifacts) != 0 {
		t.Fatalf("stale task = %+v, %v; want failed with no reply", old, err)
	}
	// A direct append with the stale epoch is refused too.
	_, err = st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "fenced", Epoch: before.Epoch - 1, Entries: []ledger.Entry{
		{TaskID: stale.Task.ID, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "completed"},
	}})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("append with the stale epoch error = %v, want ErrFenced", err)
	}
}
