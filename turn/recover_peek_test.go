package turn

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// recovering marks the context of a Recover call that a test's hooks act on.
type recovering struct{}

func isRecovering(ctx context.Context) bool { return ctx.Value(recovering{}) != nil }

// hookLedger is a Ledger that calls hooks inside a marked Recover (isRecovering): after
// its first read of a task's entries, and before its append.
type hookLedger struct {
	Ledger
	afterRead    func()
	beforeAppend func()
	once         sync.Once
}

func (h *hookLedger) TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error) {
	c, es, err := h.Ledger.TaskEntries(ctx, taskID)
	if isRecovering(ctx) && h.afterRead != nil {
		h.once.Do(h.afterRead)
	}
	return c, es, err
}

func (h *hookLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	if isRecovering(ctx) && h.beforeAppend != nil {
		h.beforeAppend()
	}
	return h.Ledger.Append(ctx, req)
}

// lookLocker is an in-process Locker that records the holder of every Acquire and calls
// look when Recover's holder acquires a key or when anyone asks who holds one: the
// moments Recover looks at a context's lease.
type lookLocker struct {
	*locking.Local
	look     func()
	acquired func(holder string) // called after any other holder's Acquire succeeded

	mu      sync.Mutex
	holders []string
}

func (l *lookLocker) Acquire(ctx context.Context, key, holder string) (*locking.Lease, error) {
	l.mu.Lock()
	l.holders = append(l.holders, holder)
	l.mu.Unlock()
	lease, err := l.Local.Acquire(ctx, key, holder)
	switch {
	case err != nil:
	case holder == "gateway-recover" && l.look != nil: // what Recover did before it only looked
		l.look()
	case holder != "gateway-recover" && l.acquired != nil:
		l.acquired(holder)
	}
	return lease, err
}

func (l *lookLocker) Holder(ctx context.Context, key string) (string, error) {
	if l.look != nil {
		l.look()
	}
	return l.Local.Holder(ctx, key)
}

func (l *lookLocker) acquiredBy(holder string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.holders, holder)
}

// newHookedRunner is a Runner over a shared store (no sweep: the test calls Recover)
// whose ledger and locker are hooked.
func newHookedRunner(t *testing.T, ag agent.Agent) (*Runner, *hookLedger, *lookLocker) {
	t.Helper()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	hl := &hookLedger{Ledger: st}
	locks := &lookLocker{Local: locking.NewLocal()}
	r := New(Config{SharedStore: true}, hl, locks, ag, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	return r, hl, locks
}

// taskStateOf folds taskID from the store.
func taskStateOf(t *testing.T, st Ledger, taskID string) a2a.TaskState {
	t.Helper()
	conv, es, err := st.TaskEntries(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return foldTask(conv, taskID, es).Status.State
}

// slowTurnAgent holds the turn whose text is "slow" until release is closed; other turns
// answer at once.
func slowTurnAgent(release <-chan struct{}) agent.Agent {
	return funcAgent(func(ctx context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
		if tu.Text == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return agent.Result{}, ctx.Err()
			}
		}
		return agent.Result{}, emit("reply to " + tu.Text)
	})
}

// TestRecoverNeverMakesIdleContextBusy (issue #35, 3): a recovery sweep that listed a task
// while its turn ran, and looks at the context's lease just after that turn ended, never
// holds the lease: a send arriving at that moment (the context idle between turns) is
// admitted, not refused with CONTEXT_BUSY naming the pseudo-task gateway-recover, and
// neither turn is marked failed. Deterministic: the hooks run the turn's end between the
// sweep's read and its look, and the send at the look.
func TestRecoverNeverMakesIdleContextBusy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r, hl, locks := newHookedRunner(t, slowTurnAgent(release))
	ctx := localCtx(t)
	first, err := r.SendMessage(ctx, &a2a.SendParams{
		Message: a2a.Message{MessageID: "m-slow", ContextID: "idle", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("slow")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	firstID := first.Task.ID
	hl.afterRead = func() { // the sweep read the task running; now its turn ends
		close(release)
		waitTurnEnded(t, r, firstID)
	}
	var (
		second    a2a.SendResult
		secondErr error
		sent      bool
	)
	locks.look = func() { // the sweep looks at the lease: a send arrives right then
		if sent {
			return
		}
		sent = true
		second, secondErr = send(ctx, r, "idle", "", "right after")
	}
	n, err := r.Recover(context.WithValue(ctx, recovering{}, true))
	if err != nil || n != 0 {
		t.Errorf("Recover() = %d, %v, want 0, nil (the task ended)", n, err)
	}
	if !sent {
		t.Fatal("Recover never looked at the lease")
	}
	if errors.Is(secondErr, a2a.ErrContextBusy) {
		t.Fatalf("send while the sweep looked: %v; want it admitted (the context was idle)", secondErr)
	}
	if secondErr != nil || second.Task == nil || second.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("send while the sweep looked = %+v, %v, want a completed task", second.Task, secondErr)
	}
	if locks.acquiredBy("gateway-recover") {
		t.Error("Recover acquired a context's lease; it must only look")
	}
	for _, id := range []string{firstID, second.Task.ID} {
		if st := taskStateOf(t, hl, id); st != a2a.StateCompleted {
			t.Errorf("task %s is %q after the sweep, want completed", id, st)
		}
	}
}

// waitTurnEnded waits until the Runner has no live turn of taskID (it stored its end and
// gave its lease up).
func waitTurnEnded(t *testing.T, r *Runner, taskID string) {
	t.Helper()
	r.mu.Lock()
	lt := r.live[taskID]
	r.mu.Unlock()
	if lt != nil {
		<-lt.finished
	}
}

// TestRecoverMarkWindow (issue #35, 3): between the sweep's look at a free lease and its
// mark of a task left running by a stopped instance, a new turn may take the lease. If
// the new turn's first append commits first, the mark is fenced off (the turn settled
// the task itself as it began); if the new turn has taken the lease and not yet
// appended, the mark goes through and the new turn runs unharmed. Either way the stopped
// task is failed exactly once and the new turn completes.
func TestRecoverMarkWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		begun  bool // the new turn's first append commits before the sweep's mark
		wantN  int  // tasks Recover reports marked
		settle string
	}{
		{"new turn began before the mark: mark fenced", true, 0, "the new turn"},
		{"new turn holds the lease, not yet appended: mark made", false, 1, "the sweep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, hl, locks := newHookedRunner(t, agent.Echo{})
			appendRunning(t, hl.Ledger, "window", "t-stopped")
			ctx := localCtx(t)
			var (
				res  a2a.SendResult
				err  error
				done = make(chan struct{})
			)
			holding, marked := make(chan struct{}), make(chan struct{})
			hl.beforeAppend = func() {
				if tt.begun {
					res, err = send(ctx, r, "window", "", "new turn")
					close(done)
					return
				}
				// The new send takes the lease and is held there, before its first
				// append, until the sweep's mark is made.
				locks.acquired = func(string) { close(holding); <-marked }
				go func() {
					defer close(done)
					res, err = send(ctx, r, "window", "", "new turn")
				}()
				select {
				case <-holding:
				case <-done: // refused: the test reports it
				}
			}
			n, rerr := r.Recover(context.WithValue(ctx, recovering{}, true))
			close(marked)
			<-done
			if rerr != nil || n != tt.wantN {
				t.Errorf("Recover() = %d, %v, want %d (settled by %s)", n, rerr, tt.wantN, tt.settle)
			}
			if err != nil || res.Task == nil || res.Task.Status.State != a2a.StateCompleted {
				t.Fatalf("new turn = %+v, %v, want completed", res.Task, err)
			}
			if got := failedCount(t, hl.Ledger, "t-stopped"); got != 1 {
				t.Errorf("stopped task has %d failed statuses, want exactly 1", got)
			}
			if got := failedCount(t, hl.Ledger, res.Task.ID); got != 0 {
				t.Errorf("new turn's task has %d failed statuses, want 0", got)
			}
		})
	}
}
