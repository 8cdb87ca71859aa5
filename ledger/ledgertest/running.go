package ledgertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// RunRunning runs the cases of the running-task index (ledger.RunningChanges): open
// returns a new, empty store and reopen closes s and opens the same storage again.
func RunRunning(t *testing.T, open func(t *testing.T) PushStore, reopen func(t *testing.T, s PushStore) PushStore) {
	t.Run("RunningStartedAndEnded", func(t *testing.T) { t.Parallel(); testRunningStartEnd(t, open(t)) })
	t.Run("RunningRefusedChangesNothing", func(t *testing.T) { t.Parallel(); testRunningRefused(t, open(t)) })
	t.Run("RunningOfOneConversation", func(t *testing.T) { t.Parallel(); testConversationRunning(t, open(t)) })
	t.Run("RunningSurvivesReopen", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		testRunningReopen(t, s, func() PushStore { return reopen(t, s) })
	})
}

func runningIDs(t *testing.T, s Store) []string {
	t.Helper()
	rts, err := s.RunningTasks(context.Background())
	if err != nil {
		t.Fatalf("RunningTasks() error = %v", err)
	}
	ids := []string{}
	for _, rt := range rts {
		ids = append(ids, rt.TaskID)
	}
	return ids
}

func wantRunning(t *testing.T, s Store, step string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if diff := cmp.Diff(want, runningIDs(t, s)); diff != "" {
		t.Errorf("%s: RunningTasks() (-want +got):\n%s", step, diff)
	}
}

func taskMsg(task string) ledger.Entry {
	e := msg("go")
	e.TaskID = task
	return e
}

func testRunningStartEnd(t *testing.T, s Store) {
	ctx := context.Background()
	wantRunning(t, s, "empty")
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c1", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t1"), status("t1", "working")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "p", ContextID: "c2", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t2")}}) // submitted: no STATUS yet
	wantRunning(t, s, "started", "t1", "t2")
	rts, err := s.RunningTasks(ctx)
	if err != nil || len(rts) != 2 {
		t.Fatalf("RunningTasks() = %+v, %v", rts, err)
	}
	want := ledger.RunningTask{TaskID: "t2", Key: keyOf(t, s, "p", "c2"), Owner: "p", ContextID: "c2"}
	if diff := cmp.Diff(want, rts[1]); diff != "" {
		t.Errorf("RunningTasks()[1] (-want +got):\n%s", diff)
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c1", Entries: []ledger.Entry{msg("reply"), status("t1", "completed")}})
	wantRunning(t, s, "t1 completed", "t2")
	mustAppend(t, s, ledger.AppendRequest{Owner: "p", ContextID: "c2", Entries: []ledger.Entry{status("t2", "TASK_STATE_INPUT_REQUIRED")}})
	wantRunning(t, s, "t2 parked (v1.0 spelling)")
	// A continued task runs again; a settled task's other entries change nothing.
	mustAppend(t, s, ledger.AppendRequest{Owner: "p", ContextID: "c2", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t2")}})
	wantRunning(t, s, "t2 continued, no STATUS yet")
	mustAppend(t, s, ledger.AppendRequest{Owner: "p", ContextID: "c2", Entries: []ledger.Entry{status("t2", "working")}})
	wantRunning(t, s, "t2 working again", "t2")
	// Started and ended in one append; two tasks of one conversation.
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c1", BeginTurn: true, Entries: []ledger.Entry{
		taskMsg("t3"), status("t3", "working"), status("t3", "rejected"), taskMsg("t4"), status("t4", "nonsense-state")}})
	wantRunning(t, s, "t3 ended in its own append, t4 in an unknown state", "t2", "t4")
	for _, st := range []string{"failed", "canceled", "auth-required", "TASK_STATE_COMPLETED"} {
		mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c1", Entries: []ledger.Entry{status("t4", "working"), status("t4", st)}})
		wantRunning(t, s, "t4 "+st, "t2")
	}
}

func keyOf(t *testing.T, s Store, owner, cid string) string {
	t.Helper()
	c, err := s.Conversation(context.Background(), owner, cid)
	if err != nil {
		t.Fatal(err)
	}
	return c.Key
}

func testRunningRefused(t *testing.T, s Store) {
	ctx := context.Background()
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t1"), status("t1", "working")}})
	// A fenced append (a stale epoch) and an invalid one store nothing, so change nothing.
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", BeginTurn: true, Epoch: res.Epoch, Entries: []ledger.Entry{status("t1", "working")}})
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Epoch: res.Epoch, Entries: []ledger.Entry{status("t1", "failed")}}); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("stale append error = %v, want ErrFenced", err)
	}
	bad := status("t9", "working")
	bad.Kind = "NOPE"
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{status("t1", "failed"), taskMsg("t8"), bad}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("invalid append error = %v, want ErrInvalid", err)
	}
	// A task of another conversation refuses the request.
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "other", Entries: []ledger.Entry{taskMsg("t7"), status("t1", "failed")}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("append with another conversation's task error = %v, want ErrInvalid", err)
	}
	wantRunning(t, s, "after refused appends", "t1")
}

func testRunningReopen(t *testing.T, s Store, reopen func() PushStore) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"a1", "a2", "a3"} {
		e := taskMsg(id)
		e.CreatedAt = base.Add(time.Duration(i) * time.Second)
		mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c-" + id, BeginTurn: true, Entries: []ledger.Entry{e, status(id, "working")}})
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c-a2", Entries: []ledger.Entry{status("a2", "completed")}})
	wantRunning(t, s, "before reopen", "a1", "a3")
	s = reopen()
	wantRunning(t, s, "after reopen", "a1", "a3")
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c-a1", BeginTurn: true, Entries: []ledger.Entry{status("a1", "failed")}})
	wantRunning(t, s, "after reopen and an end", "a3")
}

// testConversationRunning: ConversationRunning returns a conversation's head with the
// running tasks of that conversation only, ordered by task id, and ErrNotFound for a
// conversation that does not exist.
func testConversationRunning(t *testing.T, s Store) {
	ctx := context.Background()
	if _, _, err := s.ConversationRunning(ctx, "o", "none"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("ConversationRunning(missing) error = %v, want ErrNotFound", err)
	}
	if _, _, err := s.ConversationRunning(ctx, "o", ""); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("ConversationRunning(empty contextId) error = %v, want ErrInvalid", err)
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t2"), status("t2", "working")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "other", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t0"), status("t0", "working")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "p", ContextID: "c", BeginTurn: true, Entries: []ledger.Entry{taskMsg("t5")}})
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", BeginTurn: true, Entries: []ledger.Entry{
		taskMsg("t3"), status("t3", "completed"), taskMsg("t1"), status("t1", "working")}})
	c, ids, err := s.ConversationRunning(ctx, "o", "c")
	if err != nil {
		t.Fatalf("ConversationRunning() error = %v", err)
	}
	if diff := cmp.Diff([]string{"t1", "t2"}, ids); diff != "" {
		t.Errorf("ConversationRunning() running (-want +got):\n%s", diff)
	}
	if c.Epoch != res.Epoch || c.ContextID != "c" || c.Owner != "o" || c.LastSeq != 6 {
		t.Errorf("ConversationRunning() head = %+v, want epoch %d, o/c, last seq 6", c, res.Epoch)
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{status("t1", "failed"), status("t2", "input-required")}})
	if _, ids, err := s.ConversationRunning(ctx, "o", "c"); err != nil || len(ids) != 0 {
		t.Errorf("ConversationRunning() after both settled = %v, %v, want none", ids, err)
	}
}
