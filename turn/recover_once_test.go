package turn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// barrierList is a Ledger whose TaskEntries waits until every Recover has read the task,
// so that the instances read the same head (epoch) before any of them appends (instances
// restarting together on one shared store).
type barrierList struct {
	Ledger
	listed *sync.WaitGroup
}

func (b barrierList) TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error) {
	c, out, err := b.Ledger.TaskEntries(ctx, taskID)
	b.listed.Done()
	b.listed.Wait()
	return c, out, err
}

// TestRecoverOnceAcrossInstances: two runners (two gateway instances) recovering one
// shared ledger at the same time mark the interrupted task failed exactly once.
func TestRecoverOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	_, st := newRunner(t, agent.Echo{})
	_, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "crashed", BeginTurn: true, Entries: []ledger.Entry{
		{TaskID: "t-crash", Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, MessageID: "m", Parts: []ledger.Part{{Kind: ledger.PartText, Text: "hi"}}},
		{TaskID: "t-crash", Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var listed sync.WaitGroup
	listed.Add(2)
	counts := make([]int, 2)
	var wg sync.WaitGroup
	for i := range counts {
		r := New(Config{}, barrierList{st, &listed}, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		wg.Go(func() {
			n, err := r.Recover(t.Context())
			if err != nil {
				t.Errorf("Recover() error = %v", err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	_, es, err := st.TaskEntries(t.Context(), "t-crash")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, e := range es {
		if e.State == "failed" {
			failed++
		}
	}
	if counts[0]+counts[1] != 1 || failed != 1 {
		t.Fatalf("Recover() counts %v, %d failed statuses; want the task recovered exactly once", counts, failed)
	}
}

// TestRecoverRunningTaskNotLast: Recover finds a running task through the running-task
// index even when it is not its conversation's last task (a parked task continued after a
// newer one began), and leaves settled and parked tasks alone.
func TestRecoverRunningTaskNotLast(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	status := func(task, state string) ledger.Entry {
		return ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: state}
	}
	steps := [][]ledger.Entry{
		{status("t-old", "working"), status("t-old", "input-required")},
		{status("t-new", "working"), status("t-new", "completed")},
		{status("t-old", "working")}, // t-old continued, then the gateway stopped
		{status("t-parked", "working"), status("t-parked", "TASK_STATE_AUTH_REQUIRED")},
	}
	for _, es := range steps {
		if _, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "c", BeginTurn: true, Entries: es}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := r.Recover(t.Context())
	if err != nil || n != 1 || failedCount(t, st, "t-old") != 1 || failedCount(t, st, "t-parked") != 0 {
		t.Fatalf("Recover() = %d, %v; want t-old marked failed once, t-parked left alone", n, err)
	}
	if rts, err := st.RunningTasks(t.Context()); err != nil || len(rts) != 0 {
		t.Errorf("RunningTasks() after Recover = %+v, %v, want none", rts, err)
	}
}

// TestTaskSettledMatchesA2A: the ledger's running-task index settles a task exactly in
// the states a2a calls terminal or interrupted, in both spellings (what Recover folds).
func TestTaskSettledMatchesA2A(t *testing.T) {
	t.Parallel()
	states := []string{"", "bogus", "TASK_STATE_", "TASK_STATE_UNKNOWN", "TASK_STATE_UNSPECIFIED", "TASK_STATE_Completed", "Completed"}
	for _, st := range []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
		a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed, a2a.StateRejected, a2a.StateUnknown} {
		states = append(states, string(st), "TASK_STATE_"+strings.ToUpper(strings.ReplaceAll(string(st), "-", "_")))
	}
	for _, s := range states {
		st, ok := a2a.DecodeState(s)
		if !ok {
			st = a2a.StateUnknown
		}
		if want := st.Terminal() || st.Interrupted(); ledger.TaskSettled(s) != want {
			t.Errorf("ledger.TaskSettled(%q) = %v, a2a folds it to %q (settled %v)", s, !want, st, want)
		}
	}
}

// TestRecoverManyConversations: Recover marks every running task of many conversations,
// recovered side by side, and both running tasks of one conversation (one after the
// other: the second mark uses the epoch the first one bumped).
func TestRecoverManyConversations(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	const convs = 40
	for i := range convs {
		appendRunning(t, st, fmt.Sprintf("many-%d", i), fmt.Sprintf("t-many-%d", i))
	}
	appendRunning(t, st, "two", "t-two-a")
	appendRunning(t, st, "two", "t-two-b")
	n, err := r.Recover(t.Context())
	if err != nil || n != convs+2 {
		t.Fatalf("Recover() = %d, %v, want %d", n, err, convs+2)
	}
	for _, id := range []string{"t-many-0", "t-many-39", "t-two-a", "t-two-b"} {
		if got := failedCount(t, st, id); got != 1 {
			t.Errorf("%s has %d failed statuses, want 1", id, got)
		}
	}
	if rts, _ := st.RunningTasks(t.Context()); len(rts) != 0 {
		t.Errorf("RunningTasks() after Recover = %d tasks, want none", len(rts))
	}
}
