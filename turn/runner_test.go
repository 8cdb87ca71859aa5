package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/prompt"
	"github.com/a2a-gateway/gateway/redact"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// funcAgent is a test agent.
type funcAgent func(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error)

func (f funcAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	return f(ctx, t, emit)
}

// localCtx is tb's context with the caller a transport without peer tokens names
// (contextid.LocalOwner): the Runner refuses a request without a caller (WithPeer).
func localCtx(tb testing.TB) context.Context { return WithPeer(tb.Context(), contextid.LocalOwner) }

func openLedger(t *testing.T, path string) *ledger.Store {
	t.Helper()
	st, err := ledger.Open(path, ledger.Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("ledger.Open() error = %v", err)
	}
	return st
}

func newRunner(t *testing.T, ag agent.Agent) (*Runner, *ledger.Store) {
	t.Helper()
	return newRunnerWith(t, Config{}, locking.NewLocal(), ag)
}

// newRunnerWith is newRunner with the given config and locker.
func newRunnerWith(t *testing.T, cfg Config, locks Locker, ag agent.Agent) (*Runner, *ledger.Store) {
	t.Helper()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	r := New(cfg, st, locks, ag, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	return r, st
}

func send(ctx context.Context, r *Runner, contextID, taskID, text string) (a2a.SendResult, error) {
	return r.SendMessage(ctx, &a2a.SendParams{Message: a2a.Message{
		// The id is made from the text, but never holds a credential the text has (an
		// id that looks like one is refused).
		MessageID: "m-" + redact.Text(text), ContextID: contextID, TaskID: taskID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart(text)},
	}})
}

// weatherAgent asks "which city?" (input-required) at its first turn and answers
// "weather in <text>" after; turns counts its turns.
func weatherAgent(turns *int) agent.Agent {
	return funcAgent(func(ctx context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
		*turns++
		if *turns == 1 {
			return agent.Result{InputRequired: true}, emit("which city?")
		}
		return agent.Result{}, emit("weather in " + tu.Text)
	})
}

func TestInputRequiredContinues(t *testing.T) {
	t.Parallel()
	turns := 0
	r, _ := newRunner(t, weatherAgent(&turns))
	res, err := send(localCtx(t), r, "c1", "", "weather?")
	if err != nil || res.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v; want input-required", res.Task, err)
	}
	if m := res.Task.Status.Message; m == nil || m.Text() != "which city?" {
		t.Fatalf("input-required status message = %+v", m)
	}
	res2, err := send(localCtx(t), r, "", res.Task.ID, "Paris")
	if err != nil {
		t.Fatalf("follow-up error = %v", err)
	}
	if res2.Task.ID != res.Task.ID || res2.Task.ContextID != "c1" || res2.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("follow-up task = %s ctx %s state %s; want same task, inferred context, completed", res2.Task.ID, res2.Task.ContextID, res2.Task.Status.State)
	}
	if len(res2.Task.History) != 4 || len(res2.Task.Artifacts) != 2 {
		t.Fatalf("continued task history %d artifacts %d, want 4 and 2", len(res2.Task.History), len(res2.Task.Artifacts))
	}
	// Now terminal: a further follow-up is -32004.
	if _, err := send(localCtx(t), r, "", res.Task.ID, "more"); !errors.Is(err, a2a.ErrUnsupportedOperation) || errors.Is(err, a2a.ErrContextBusy) {
		t.Fatalf("follow-up to completed task error = %v, want ErrUnsupportedOperation", err)
	}
}

// blockingAgent emits one chunk, then blocks until released or canceled.
type blockingAgent struct {
	started chan struct{}
	release chan struct{}
}

func newBlockingAgent() *blockingAgent {
	return &blockingAgent{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blockingAgent) Reply(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
	if err := emit("partial "); err != nil {
		return agent.Result{}, err
	}
	b.started <- struct{}{}
	select {
	case <-b.release:
		return agent.Result{}, emit("done")
	case <-ctx.Done():
		return agent.Result{}, ctx.Err()
	}
}

func TestBusyContextAndCancel(t *testing.T) {
	t.Parallel()
	ag := newBlockingAgent()
	r, st := newRunner(t, ag)
	res, err := r.SendMessage(localCtx(t), &a2a.SendParams{
		Message: a2a.Message{MessageID: "m1", ContextID: "busy", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("first")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ag.started
	_, err = send(localCtx(t), r, "busy", "", "second")
	var ae *a2a.Error
	if !errors.Is(err, a2a.ErrContextBusy) || !errors.As(err, &ae) || ae.Metadata["taskId"] != res.Task.ID || ae.Metadata["contextId"] != "busy" {
		t.Fatalf("second send error = %v, want CONTEXT_BUSY naming task %s", err, res.Task.ID)
	}
	if a2a.ToRPCError(err).Code != -32004 || a2a.ToRPCError(err).Reason != "CONTEXT_BUSY" {
		t.Fatalf("busy maps to %+v", a2a.ToRPCError(err))
	}
	// The rejected request is audit-only: not in the task, recorded as AUDIT (written off
	// the request path, so wait for it).
	var last []ledger.Entry
	testutil.Until(testutil.Deadline(t), func() bool { // short of it, the count below says so
		if last, err = st.Last(t.Context(), "local", "busy", 10, nil); err != nil {
			t.Fatal(err)
		}
		return last[len(last)-1].Kind == ledger.KindAudit
	})
	audits := 0
	for _, e := range last {
		if e.Kind == ledger.KindAudit && e.Visibility == ledger.VisibilityAudit {
			audits++
		}
		if e.Kind == ledger.KindUserMessage && strings.Contains(a2aText(e), "second") {
			t.Fatalf("rejected message entered the conversation: %+v", e)
		}
	}
	if audits != 1 {
		t.Fatalf("audit entries = %d, want 1", audits)
	}
	// Cancel the running task: it ends CANCELED with the partial reply kept; cancel again is idempotent.
	got, err := r.CancelTask(localCtx(t), &a2a.TaskIDParams{ID: res.Task.ID})
	if err != nil || got.Status.State != a2a.StateCanceled {
		t.Fatalf("CancelTask = %+v, %v; want canceled", got, err)
	}
	if len(got.Artifacts) != 1 || a2a.PartsText(got.Artifacts[0].Parts) != "partial " {
		t.Fatalf("canceled task artifacts = %+v, want the partial reply", got.Artifacts)
	}
	again, err := r.CancelTask(localCtx(t), &a2a.TaskIDParams{ID: res.Task.ID})
	if err != nil || again.Status.State != a2a.StateCanceled {
		t.Fatalf("second CancelTask = %v, %v; want the canceled task again", again, err)
	}
	// The context is free again.
	close(ag.release)
	if res, err := send(localCtx(t), r, "busy", "", "third"); err != nil || res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("send after cancel = %v, %v", res, err)
	}
}

func a2aText(e ledger.Entry) string {
	var b strings.Builder
	for _, p := range e.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func TestDetachedFromRequest(t *testing.T) {
	t.Parallel()
	ag := newBlockingAgent()
	r, _ := newRunner(t, ag)
	ctx, cancel := context.WithCancel(localCtx(t))
	var wg sync.WaitGroup
	var sendErr error
	wg.Go(func() { _, sendErr = send(ctx, r, "detach", "", "go") })
	<-ag.started
	cancel() // the client goes away
	wg.Wait()
	if !errors.Is(sendErr, context.Canceled) {
		t.Fatalf("send error = %v, want context.Canceled", sendErr)
	}
	close(ag.release)
	// The turn finishes anyway and is recorded.
	testutil.WaitFor(t, "the turn to finish", func() bool { return r.Running() == 0 })
	list, err := r.ListTasks(localCtx(t), &a2a.ListTasksParams{ContextID: "detach", PageSize: 10, IncludeArtifacts: true})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Status.State != a2a.StateCompleted || a2a.PartsText(list.Tasks[0].Artifacts[0].Parts) != "partial done" {
		t.Fatalf("after disconnect: %+v, %v; want the turn completed", list, err)
	}
}

func TestInvalidInputStoresNothing(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	for _, tc := range []struct {
		name, ctxID, text string
	}{
		{"control char", "a\nb", "hi"},
		{"too long", strings.Repeat("x", 257), "hi"},
		{"empty text", "ok", "   "},
	} {
		_, err := send(localCtx(t), r, tc.ctxID, "", tc.text)
		if !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%s: error = %v, want ErrInvalidParams", tc.name, err)
		}
	}
	if _, err := send(localCtx(t), r, "ok", "no-such-task", "hi"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown taskId error = %v, want ErrTaskNotFound", err)
	}
	_ = r.Close(t.Context()) // drains the audit queue: nothing may be written after this
	convs, err := st.List(t.Context(), ledger.ListOptions{})
	if err != nil || len(convs) != 0 {
		t.Fatalf("conversations after bad input = %v, %v; want none", convs, err)
	}
}

func TestCloseFailsRunningTurnsAndRecover(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st := openLedger(t, path)
	ag := newBlockingAgent()
	r := New(Config{}, st, locking.NewLocal(), ag, slog.New(slog.DiscardHandler))
	res, err := r.SendMessage(localCtx(t), &a2a.SendParams{
		Message: a2a.Message{MessageID: "m1", ContextID: "shut", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ag.started
	ctx, cancel := context.WithTimeout(localCtx(t), 50*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close() error = %v, want deadline exceeded", err)
	}
	if _, err := send(localCtx(t), r, "other", "", "x"); !errors.Is(err, a2a.ErrUnavailable) {
		t.Fatalf("send after Close error = %v, want ErrUnavailable", err)
	}
	r2 := New(Config{}, st, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
	got, err := r2.GetTask(localCtx(t), &a2a.GetTaskParams{ID: res.Task.ID})
	if err != nil || got.Status.State != a2a.StateFailed {
		t.Fatalf("task after shutdown = %+v, %v; want failed", got, err)
	}
	if n, err := r2.Recover(t.Context()); err != nil || n != 0 {
		t.Fatalf("Recover() = %d, %v; want nothing left to recover", n, err)
	}
	_ = r2.Close(t.Context())
	_ = st.Close()
}

func TestRecoverMarksInterruptedTurnsFailed(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	// What a crash mid-turn leaves: the inbound message and a "working" status.
	_, err := st.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "crashed", BeginTurn: true, Entries: []ledger.Entry{
		{TaskID: "t-crash", Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel, Role: ledger.RoleUser, MessageID: "m", Parts: []ledger.Part{{Kind: ledger.PartText, Text: "hi"}}},
		{TaskID: "t-crash", Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, State: "working"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.Recover(t.Context()); err != nil || n != 1 {
		t.Fatalf("Recover() = %d, %v; want 1", n, err)
	}
	got, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: "t-crash"})
	if err != nil || got.Status.State != a2a.StateFailed || got.Status.Message == nil {
		t.Fatalf("recovered task = %+v, %v; want failed with a message", got, err)
	}
	if n, _ := r.Recover(t.Context()); n != 0 {
		t.Fatalf("second Recover() = %d, want 0", n)
	}
}

// TestBusyWaitPolicy runs in a synctest bubble (fake clock; bbolt in a temp dir, no
// network): a send to a busy context waits until the running task ends, and gives up
// with CONTEXT_BUSY at exactly BusyWait when it does not.
func TestBusyWaitPolicy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const busyWait, cancelAfter = 2 * time.Second, 100 * time.Millisecond
		ag := newBlockingAgent()
		st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
		r := New(Config{BusyWait: busyWait}, st, locking.NewLocal(), ag, slog.New(slog.DiscardHandler))
		defer func() { close(ag.release); _ = r.Close(context.Background()); _ = st.Close() }()
		first, err := r.SendMessage(localCtx(t), &a2a.SendParams{
			Message: a2a.Message{MessageID: "m1", ContextID: "wait", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("one")}},
			Config:  a2a.SendConfig{ReturnImmediately: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		<-ag.started
		// The second send waits; the first is canceled 100ms (of the bubble's clock) later,
		// which frees the context.
		time.AfterFunc(cancelAfter, func() {
			_, _ = r.CancelTask(WithPeer(context.Background(), contextid.LocalOwner), &a2a.TaskIDParams{ID: first.Task.ID})
		})
		start := time.Now()
		res, err := r.SendMessage(localCtx(t), &a2a.SendParams{
			Message: a2a.Message{MessageID: "m2", ContextID: "wait", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("two")}},
			Config:  a2a.SendConfig{ReturnImmediately: true},
		})
		if err != nil || res.Task.ID == first.Task.ID {
			t.Fatalf("waiting send = %v, %v; want a new task after the first ended", res.Task, err)
		}
		if d := time.Since(start); d != cancelAfter {
			t.Fatalf("waiting send returned after %v, want %v: when the first task ended", d, cancelAfter)
		}
		<-ag.started
		// A bound shorter than the running turn still ends in CONTEXT_BUSY, at the bound.
		r.leases.busyWait = 50 * time.Millisecond
		start = time.Now()
		_, err = send(localCtx(t), r, "wait", "", "three")
		if d := time.Since(start); !errors.Is(err, a2a.ErrContextBusy) || d != r.leases.busyWait {
			t.Fatalf("send with a short wait = %v after %v, want CONTEXT_BUSY after %v", err, d, r.leases.busyWait)
		}
	})
}

// TestRejectedContentIsAudited: an empty message to an existing conversation, and a
// follow-up to a finished task, are recorded audit-only and never enter the conversation.
func TestRejectedContentIsAudited(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	res, err := send(localCtx(t), r, "kept", "", "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(localCtx(t), r, "kept", "", "  "); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("empty message error = %v", err)
	}
	if _, err := send(localCtx(t), r, "kept", res.Task.ID, "late follow-up"); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("follow-up to a completed task error = %v", err)
	}
	_ = r.Close(t.Context())
	all, err := st.Last(t.Context(), "local", "kept", 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, e := range all {
		if e.Kind == ledger.KindAudit {
			if e.Visibility != ledger.VisibilityAudit {
				t.Fatalf("audit entry %d is %s", e.Seq, e.Visibility)
			}
			reasons[metaString(e.Metadata, "rejected")] = true
		}
		if e.Kind == ledger.KindUserMessage && a2aText(e) != "first" {
			t.Fatalf("rejected text entered the conversation: %+v", e)
		}
	}
	if !reasons["EMPTY_MESSAGE"] || !reasons["TASK_TERMINAL"] {
		t.Fatalf("audit reasons = %v, want EMPTY_MESSAGE and TASK_TERMINAL", reasons)
	}
	c, _ := st.Conversation(t.Context(), "local", "kept")
	if c.Turns != 1 {
		t.Fatalf("turns = %d, want 1", c.Turns)
	}
}

// heldByUnknown is a Locker whose keys are always held by a holder it cannot name (a
// Redis lease that expired between the failed SET NX and the GET of its holder).
type heldByUnknown struct{}

func (heldByUnknown) Acquire(_ context.Context, key, _ string) (*locking.Lease, error) {
	return nil, &locking.HeldError{Key: key}
}
func (heldByUnknown) Wait(context.Context, string) error             { return nil }
func (heldByUnknown) Holder(context.Context, string) (string, error) { return "", nil }

// countingObserver counts Busy calls.
type countingObserver struct {
	noObserver
	busy atomic.Int64
}

func (o *countingObserver) Busy() { o.busy.Add(1) }

// A busy refusal whose holder is unknown says "another task is running" and names no task.
func TestBusyHolderUnknown(t *testing.T) {
	t.Parallel()
	obs := &countingObserver{}
	r, _ := newRunnerWith(t, Config{Observe: obs}, heldByUnknown{}, agent.Echo{})
	_, err := send(localCtx(t), r, "c", "", "hello")
	var ae *a2a.Error
	if !errors.Is(err, a2a.ErrContextBusy) || !errors.As(err, &ae) {
		t.Fatalf("send error = %v, want CONTEXT_BUSY", err)
	}
	if !strings.Contains(ae.Message, "another task is running") || strings.Contains(ae.Message, "task  is") {
		t.Errorf("message %q, want one that names no empty task id", ae.Message)
	}
	if _, ok := ae.Metadata["taskId"]; ok || ae.Metadata["contextId"] != "c" {
		t.Errorf("metadata %v, want the contextId and no taskId", ae.Metadata)
	}
	if n := obs.busy.Load(); n != 1 {
		t.Errorf("Busy observed %d times, want 1", n)
	}
}

// A CancelTask refused with CONTEXT_BUSY (the task is parked while another task holds its
// conversation's lease) is recorded as an audit-only entry naming both tasks; it changes
// neither task.
func TestCancelRefusedAsBusyIsAudited(t *testing.T) {
	t.Parallel()
	locks := locking.NewLocal()
	r, st := newRunnerWith(t, Config{}, locks, funcAgent(func(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
		return agent.Result{InputRequired: true}, emit("which city?")
	}))
	res, err := send(localCtx(t), r, "parked", "", "weather?")
	if err != nil || res.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("send = %+v, %v; want input-required", res.Task, err)
	}
	// Another task (say, on another instance) holds the conversation's lease.
	held, err := locks.Acquire(t.Context(), contextid.Key("local", "parked"), "task-elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.CancelTask(localCtx(t), &a2a.TaskIDParams{ID: res.Task.ID})
	if !errors.Is(err, a2a.ErrContextBusy) {
		t.Fatalf("CancelTask error = %v, want CONTEXT_BUSY", err)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	var audit *ledger.Entry
	testutil.Until(testutil.Deadline(t), func() bool { // short of it, the check below says so
		last, err := st.Last(t.Context(), "local", "parked", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := last[len(last)-1]; e.Kind == ledger.KindAudit {
			audit = &e
		}
		return audit != nil
	})
	if audit == nil {
		t.Fatal("no audit entry for the refused cancel")
	}
	var meta map[string]string
	if err := json.Unmarshal(audit.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rejected": "CONTEXT_BUSY", "method": "CancelTask", "taskId": res.Task.ID, "runningTaskId": "task-elsewhere"}
	if diff := cmp.Diff(want, meta); diff != "" || audit.Visibility != ledger.VisibilityAudit || audit.TaskID != "" {
		t.Errorf("audit entry %+v; metadata (-want +got):\n%s", audit, diff)
	}
	got, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: res.Task.ID})
	if err != nil || got.Status.State != a2a.StateInputRequired || len(got.History) != len(res.Task.History) {
		t.Fatalf("task after the refused cancel = %+v, %v; want it unchanged (input-required)", got, err)
	}
}

// A relay's upstream task left waiting for input is handed to the next turn only (and to
// its replay); the upstream contextId stays for every later turn.
func TestUpstreamTaskHandedToTheNextTurnOnly(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []agent.Turn
	results := []agent.Result{
		{InputRequired: true, UpstreamContextID: "up-ctx", UpstreamTaskID: "up-task"},
		{UpstreamContextID: "up-ctx"},
		{UpstreamContextID: "up-ctx"},
	}
	r, st := newRunner(t, funcAgent(func(ctx context.Context, tu agent.Turn, emit agent.Emit) (agent.Result, error) {
		mu.Lock()
		n := len(seen)
		seen = append(seen, tu)
		mu.Unlock()
		return results[n], emit(fmt.Sprintf("reply %d", n))
	}))
	first, err := send(localCtx(t), r, "relayed", "", "weather?")
	if err != nil || first.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v; want input-required", first.Task, err)
	}
	if _, err := send(localCtx(t), r, "", first.Task.ID, "Paris"); err != nil {
		t.Fatal(err)
	}
	if _, err := send(localCtx(t), r, "relayed", "", "thanks"); err != nil {
		t.Fatal(err)
	}
	want := []struct{ ctx, task string }{{"", ""}, {"up-ctx", "up-task"}, {"up-ctx", ""}}
	for i, w := range want {
		if seen[i].UpstreamContextID != w.ctx || seen[i].UpstreamTaskID != w.task {
			t.Errorf("turn %d got upstream context %q task %q, want %q %q", i, seen[i].UpstreamContextID, seen[i].UpstreamTaskID, w.ctx, w.task)
		}
	}
	_, entries, err := st.TaskEntries(t.Context(), first.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := prompt.Replay(t.Context(), st, r.cfg.Policy, "local", "relayed", entries[len(entries)-1].Seq)
	if err != nil || replayed.UpstreamTask != "up-task" || replayed.Upstream != "up-ctx" {
		t.Fatalf("Replay(second turn) = %+v, %v; want the upstream task it was handed", replayed, err)
	}
}

// upstreamAgent asks for input, as a relay whose upstream task waits, and records the
// upstream tasks it is asked to cancel.
type upstreamAgent struct {
	upstreamTask string // "" : a reply that leaves nothing waiting upstream
	mu           sync.Mutex
	canceled     []string
}

func (a *upstreamAgent) Reply(_ context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
	return agent.Result{InputRequired: true, UpstreamContextID: "up-ctx", UpstreamTaskID: a.upstreamTask}, emit("which city?")
}

func (a *upstreamAgent) CancelUpstream(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.canceled = append(a.canceled, id)
	return nil
}

// Canceling a task parked on INPUT_REQUIRED cancels the upstream task its relay left
// waiting, and only that one.
func TestCancelParkedTaskCancelsUpstream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, upstreamTask string
		want               []string
	}{
		{name: "upstream task waiting", upstreamTask: "up-task-1", want: []string{"up-task-1"}},
		{name: "nothing waiting upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ag := &upstreamAgent{upstreamTask: tc.upstreamTask}
			r, _ := newRunner(t, ag)
			res, err := send(localCtx(t), r, "relayed", "", "weather?")
			if err != nil || res.Task.Status.State != a2a.StateInputRequired {
				t.Fatalf("send = %+v, %v; want input-required", res.Task, err)
			}
			got, err := r.CancelTask(localCtx(t), &a2a.TaskIDParams{ID: res.Task.ID})
			if err != nil || got.Status.State != a2a.StateCanceled {
				t.Fatalf("CancelTask = %+v, %v; want canceled", got, err)
			}
			ag.mu.Lock()
			defer ag.mu.Unlock()
			if diff := cmp.Diff(tc.want, ag.canceled); diff != "" {
				t.Errorf("upstream tasks canceled (-want +got):\n%s", diff)
			}
		})
	}
}
