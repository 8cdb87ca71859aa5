package turn

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// countingReads is a Ledger that counts ConversationRunning reads.
type countingReads struct {
	Ledger
	reads atomic.Int64
}

func (c *countingReads) ConversationRunning(ctx context.Context, owner, contextID string) (ledger.Conversation, []string, error) {
	c.reads.Add(1)
	return c.Ledger.ConversationRunning(ctx, owner, contextID)
}

// newSharedRunner is a Runner over a shared store without the recovery sweep (a stopped
// instance's task is left to the turns), with its ledger's reads counted.
func newSharedRunner(t *testing.T) (*Runner, *countingReads) {
	t.Helper()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	led := &countingReads{Ledger: st}
	r := New(Config{SharedStore: true}, led, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	return r, led
}

// nonTerminal lists the tasks of contextID that ListTasks shows neither terminal nor
// interrupted.
func nonTerminal(t *testing.T, r *Runner, contextID string) []string {
	t.Helper()
	res, err := r.ListTasks(localCtx(t), &a2a.ListTasksParams{ContextID: contextID})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tk := range res.Tasks {
		if st := tk.Status.State; !st.Terminal() && !st.Interrupted() {
			out = append(out, tk.ID)
		}
	}
	return out
}

// stoppedStatus returns taskID's FAILED status entry and the entries of the append that
// stored it (same epoch), or fails.
func stoppedStatus(t *testing.T, st Ledger, taskID string) ledger.Entry {
	t.Helper()
	_, es, err := st.TaskEntries(t.Context(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == ledger.KindStatus && e.State == string(a2a.StateFailed) {
			if len(e.Parts) != 1 || e.Parts[0].Text != textStopped {
				t.Errorf("failed status of %s = %+v, want the text %q", taskID, e.Parts, textStopped)
			}
			return e
		}
	}
	t.Fatalf("task %s has no failed status: %+v", taskID, es)
	return ledger.Entry{}
}

// TestTurnSettlesStoppedTask (issue #35, 4): over a shared store, a task that a stopped
// instance left running in a conversation (its lease expired; the sweep, which skips held
// leases, has not come by) is marked FAILED by the next turn that takes the lease there,
// in the same append as that turn's message (one commit), so the conversation never
// shows two running tasks once the new turn has begun. A follow-up to the stopped task
// continues it instead; a repeat of its message runs again as a new task.
func TestTurnSettlesStoppedTask(t *testing.T) {
	t.Parallel()
	status := func(task, state string) ledger.Entry {
		return ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: state}
	}
	tests := []struct {
		name    string
		stopped func(t *testing.T, st Ledger) // leaves t-stopped running in "c"
		text    string
	}{
		{"new task left running", func(t *testing.T, st Ledger) { appendRunning(t, st, "c", "t-stopped") }, "next"},
		{"continued task left running, not the last task", func(t *testing.T, st Ledger) {
			for _, es := range [][]ledger.Entry{
				{status("t-stopped", "working"), status("t-stopped", "input-required")},
				{status("t-later", "working"), status("t-later", "completed")},
				{status("t-stopped", "working")}, // continued, then its instance stopped
			} {
				if _, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "c", BeginTurn: true, Entries: es}); err != nil {
					t.Fatal(err)
				}
			}
		}, "next"},
		{"the stopped task's message sent again", func(t *testing.T, st Ledger) { appendRunning(t, st, "c", "t-stopped") }, "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, led := newSharedRunner(t)
			tt.stopped(t, led.Ledger)
			msgID := "m-next"
			if tt.text == "hi" {
				msgID = "m-t-stopped" // appendRunning's message: the same id and parts
			}
			// Bounded: before the fix, the repeat was answered with the stopped task and
			// waited for its end, which no turn would bring.
			ctx, cancel := context.WithTimeout(localCtx(t), 30*time.Second)
			defer cancel()
			res, err := r.SendMessage(ctx, &a2a.SendParams{Message: a2a.Message{
				MessageID: msgID, ContextID: "c", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(tt.text)}}})
			if err != nil || res.Task == nil || res.Task.Status.State != a2a.StateCompleted || res.Task.ID == "t-stopped" {
				t.Fatalf("SendMessage() = %+v, %v, want a new task completed", res.Task, err)
			}
			if got := failedCount(t, led.Ledger, "t-stopped"); got != 1 {
				t.Fatalf("stopped task has %d failed statuses, want 1", got)
			}
			failed := stoppedStatus(t, led.Ledger, "t-stopped")
			_, mine, err := led.TaskEntries(t.Context(), res.Task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if first := mine[0]; first.Kind != ledger.KindUserMessage || first.Epoch != failed.Epoch || first.Seq != failed.Seq+1 {
				t.Errorf("the new turn's message (seq %d, epoch %d) is not stored right after the stopped task's mark (seq %d, epoch %d) in one append",
					first.Seq, first.Epoch, failed.Seq, failed.Epoch)
			}
			if h := res.Task.History; len(h) != 2 || h[0].MessageID != msgID || h[1].Role != a2a.RoleAgent {
				t.Errorf("the new task's history = %+v, want its own message and reply only", h)
			}
			if got := nonTerminal(t, r, "c"); len(got) != 0 {
				t.Errorf("ListTasks(c) shows running tasks %v after the turn, want none", got)
			}
		})
	}
}

// TestTurnBeginReadsOnlyWhenUnsure (issue #35, 4): a turn reads the conversation's
// running tasks only when the Runner does not know there are none: not on a context
// whose previous turn it ran to its end in the epoch that is still current. When another
// instance began a turn there since (the epoch moved, unknown to this Runner), the
// append is fenced, read again and the task that turn left running is settled.
func TestTurnBeginReadsOnlyWhenUnsure(t *testing.T) {
	t.Parallel()
	r, led := newSharedRunner(t)
	ctx := localCtx(t)
	for i, text := range []string{"one", "two", "three"} {
		if res, err := send(ctx, r, "known", "", text); err != nil || res.Task.Status.State != a2a.StateCompleted {
			t.Fatalf("send %q = %+v, %v", text, res.Task, err)
		}
		if got, want := led.reads.Load(), int64(1); got != want {
			t.Fatalf("after %d turns: %d reads of the running tasks, want %d (the first turn only)", i+1, got, want)
		}
	}
	// Another instance begins a turn and stops: this Runner does not know.
	appendRunning(t, led.Ledger, "known", "t-elsewhere")
	res, err := send(ctx, r, "known", "", "four")
	if err != nil || res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("send after another instance's turn = %+v, %v", res.Task, err)
	}
	if got := led.reads.Load(); got != 2 {
		t.Errorf("%d reads of the running tasks, want 2 (the fenced append read again)", got)
	}
	if got := failedCount(t, led.Ledger, "t-elsewhere"); got != 1 {
		t.Errorf("the other instance's stopped task has %d failed statuses, want 1", got)
	}
	if got := nonTerminal(t, r, "known"); len(got) != 0 {
		t.Errorf("ListTasks(known) shows running tasks %v, want none", got)
	}
}
