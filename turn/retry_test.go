package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/genmap"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// countingAgent echoes the text and counts its turns.
type countingAgent struct{ turns atomic.Int32 }

func (c *countingAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	c.turns.Add(1)
	return agent.Result{}, emit("echo: " + t.Text)
}

// sendID sends text as message id in contextID (taskID: continue that task).
func sendID(ctx context.Context, r *Runner, id, contextID, taskID, text string, immediately bool) (a2a.SendResult, error) {
	return r.SendMessage(ctx, &a2a.SendParams{
		Message: a2a.Message{MessageID: id, ContextID: contextID, TaskID: taskID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}},
		Config:  a2a.SendConfig{ReturnImmediately: immediately},
	})
}

// streamID streams text as message id in contextID.
func streamID(ctx context.Context, r *Runner, id, contextID, text string) (a2a.Stream, error) {
	return r.SendStreamingMessage(ctx, &a2a.SendParams{Message: a2a.Message{MessageID: id, ContextID: contextID,
		Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}})
}

// lastSeq is the conversation's last seq.
func lastSeq(t *testing.T, st *ledger.Store, contextID string) uint64 {
	t.Helper()
	c, err := st.Conversation(t.Context(), "local", contextID)
	if err != nil {
		t.Fatal(err)
	}
	return c.LastSeq
}

// drain reads s to its end (readAll's hang guard) and closes it.
func drain(t *testing.T, s a2a.Stream) []a2a.Event {
	t.Helper()
	defer s.Close()
	return readAll(t, s, nil)
}

func TestRetriedSendAnsweredWithItsTask(t *testing.T) {
	t.Parallel()
	ag := &countingAgent{}
	r, st := newRunner(t, ag)
	first, err := sendID(localCtx(t), r, "r1", "retry", "", "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	seq := lastSeq(t, st, "retry")
	again, err := sendID(localCtx(t), r, "r1", "retry", "", "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	if again.Task.ID != first.Task.ID || again.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("retry answered task %s %s, want %s completed", again.Task.ID, again.Task.Status.State, first.Task.ID)
	}
	if got := artifactText(again.Task); got != "echo: hello" {
		t.Fatalf("retry's task holds %q, want the first turn's reply", got)
	}
	if n := ag.turns.Load(); n != 1 {
		t.Fatalf("the agent ran %d turns, want 1", n)
	}
	if got := lastSeq(t, st, "retry"); got != seq {
		t.Fatalf("the retry stored entries: last seq %d, want %d", got, seq)
	}
	// The stream of a retry is the task's snapshot, and ends.
	s, err := streamID(localCtx(t), r, "r1", "retry", "hello")
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, s)
	if len(evs) != 1 || evs[0].Task == nil || evs[0].Task.ID != first.Task.ID || evs[0].Task.Status.State != a2a.StateCompleted {
		t.Fatalf("retried stream = %+v, want the completed task's snapshot alone", evs)
	}
	if n := ag.turns.Load(); n != 1 || lastSeq(t, st, "retry") != seq {
		t.Fatalf("the retried stream ran a turn or stored entries (%d turns)", n)
	}
}

func TestRetryNeedsTheSameMessage(t *testing.T) {
	t.Parallel()
	ag := &countingAgent{}
	r, _ := newRunner(t, ag)
	first, err := sendID(localCtx(t), r, "r1", "same-id", "", "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	// The same messageId with other text is a new message.
	other, err := sendID(localCtx(t), r, "r1", "same-id", "", "goodbye", false)
	if err != nil || other.Task.ID == first.Task.ID || artifactText(other.Task) != "echo: goodbye" {
		t.Fatalf("same id, other text = %+v, %v; want a new task", other.Task, err)
	}
	// Only the latest message is a retry: r1 "hello" is no longer it.
	third, err := sendID(localCtx(t), r, "r1", "same-id", "", "hello", false)
	if err != nil || third.Task.ID == first.Task.ID {
		t.Fatalf("an older message sent again = %+v, %v; want a new task", third.Task, err)
	}
	// The same message in another context is another message.
	elsewhere, err := sendID(localCtx(t), r, "r1", "other-context", "", "hello", false)
	if err != nil || elsewhere.Task.ID == third.Task.ID {
		t.Fatalf("the message in another context = %+v, %v; want a new task", elsewhere.Task, err)
	}
	if n := ag.turns.Load(); n != 4 {
		t.Fatalf("the agent ran %d turns, want 4", n)
	}
}

func TestRetryWhileItsTurnRuns(t *testing.T) {
	t.Parallel()
	ag := newBlockingAgent()
	r, st := newRunner(t, ag)
	first, err := sendID(localCtx(t), r, "r1", "running", "", "hello", true)
	if err != nil {
		t.Fatal(err)
	}
	<-ag.started
	// Asked to return at once: the task as it stands, not CONTEXT_BUSY.
	now, err := sendID(localCtx(t), r, "r1", "running", "", "hello", true)
	if err != nil || now.Task.ID != first.Task.ID || now.Task.Status.State != a2a.StateWorking {
		t.Fatalf("retry while running = %+v, %v; want task %s working", now.Task, err, first.Task.ID)
	}
	// Another message is still refused as busy.
	if _, err := sendID(localCtx(t), r, "r2", "running", "", "other", true); !errors.Is(err, a2a.ErrContextBusy) {
		t.Fatalf("another message while running = %v, want CONTEXT_BUSY", err)
	}
	stream, err := streamID(localCtx(t), r, "r1", "running", "hello")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res a2a.SendResult
		err error
	}
	blocking := make(chan result, 1)
	go func() {
		res, err := sendID(WithPeer(context.Background(), "local"), r, "r1", "running", "", "hello", false)
		blocking <- result{res, err}
	}()
	close(ag.release)
	got := <-blocking
	if got.err != nil || got.res.Task.ID != first.Task.ID || got.res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("blocking retry = %+v, %v; want task %s completed", got.res.Task, got.err, first.Task.ID)
	}
	evs := drain(t, stream)
	if len(evs) == 0 || evs[0].Task == nil || evs[0].Task.ID != first.Task.ID {
		t.Fatalf("retried stream began with %+v, want the task's snapshot", evs)
	}
	if last := evs[len(evs)-1]; last.Status == nil || last.Status.Status.State != a2a.StateCompleted {
		t.Fatalf("retried stream ended with %+v, want the completed status", last)
	}
	// One turn: the user message once, and no audit of a refused retry.
	entries, err := st.Range(t.Context(), "local", "running", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	users, audits := 0, 0
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindUserMessage:
			users++
		case ledger.KindAudit:
			audits++
		}
	}
	if users != 1 || audits != 1 { // the audit is r2's CONTEXT_BUSY
		t.Fatalf("conversation holds %d user messages and %d audits, want 1 and 1", users, audits)
	}
}

func TestRetryOfAContinuation(t *testing.T) {
	t.Parallel()
	turns := 0
	r, _ := newRunner(t, weatherAgent(&turns))
	first, err := sendID(localCtx(t), r, "q1", "cont", "", "weather?", false)
	if err != nil || first.Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("first send = %+v, %v", first.Task, err)
	}
	// Streamed again, the parked task is its snapshot, and the stream ends there, as the
	// stream it repeats did (not followed into a next turn that may never come).
	s, err := streamID(localCtx(t), r, "q1", "cont", "weather?")
	if err != nil {
		t.Fatal(err)
	}
	if evs := drain(t, s); len(evs) != 1 || evs[0].Task == nil || evs[0].Task.Status.State != a2a.StateInputRequired {
		t.Fatalf("retried stream of a parked task = %+v, want its input-required snapshot alone", evs)
	}
	done, err := sendID(localCtx(t), r, "a1", "", first.Task.ID, "Paris", false)
	if err != nil || done.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("follow-up = %+v, %v", done.Task, err)
	}
	// The follow-up sent again names a completed task: answered with it, not refused.
	again, err := sendID(localCtx(t), r, "a1", "", first.Task.ID, "Paris", false)
	if err != nil || again.Task.ID != first.Task.ID || again.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("retried follow-up = %+v, %v; want the completed task", again.Task, err)
	}
	if turns != 2 {
		t.Fatalf("the agent ran %d turns, want 2", turns)
	}
	// A new message to the completed task is still refused.
	if _, err := sendID(localCtx(t), r, "a2", "", first.Task.ID, "Paris", false); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("new message to a completed task = %v, want UNSUPPORTED_OPERATION", err)
	}
}

func TestRetryComparesWhatIsStored(t *testing.T) {
	t.Parallel()
	ag := &countingAgent{}
	r, _ := newRunner(t, ag)
	// A credential is stored redacted; the retry's text is compared redacted too.
	secret := "my key is sk-proj-" + strings.Repeat("a1B2", 12)
	first, err := sendID(localCtx(t), r, "s1", "stored", "", secret, false)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sendID(localCtx(t), r, "s1", "stored", "", secret, false)
	if err != nil || again.Task.ID != first.Task.ID {
		t.Fatalf("retry of a redacted message = %+v, %v; want task %s", again.Task, err, first.Task.ID)
	}
	// A part over the large-part threshold is stored in the artifact store by its hash.
	big := strings.Repeat("long text ", 8<<10)
	bigFirst, err := sendID(localCtx(t), r, "b1", "stored", "", big, false)
	if err != nil {
		t.Fatal(err)
	}
	bigAgain, err := sendID(localCtx(t), r, "b1", "stored", "", big, false)
	if err != nil || bigAgain.Task.ID != bigFirst.Task.ID {
		t.Fatalf("retry of a large message = %+v, %v; want task %s", bigAgain.Task, err, bigFirst.Task.ID)
	}
	if n := ag.turns.Load(); n != 2 {
		t.Fatalf("the agent ran %d turns, want 2", n)
	}
}

// artifactText is the text of a task's artifacts.
func artifactText(t *a2a.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// countingLedger counts the reads and the checked appends a retry check makes.
type countingLedger struct {
	*ledger.Store
	lastBefore atomic.Int32
	dedup      atomic.Int32
}

func (c *countingLedger) LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error) {
	c.lastBefore.Add(1)
	return c.Store.LastBefore(ctx, owner, contextID, beforeSeq, n, keep)
}

func (c *countingLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	if req.Dedup {
		c.dedup.Add(1)
	}
	return c.Store.Append(ctx, req)
}

// failFirstAgent fails its first turn and echoes after that.
type failFirstAgent struct{ countingAgent }

func (f *failFirstAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	if f.turns.Load() == 0 {
		f.turns.Add(1)
		return agent.Result{}, errors.New("upstream down")
	}
	return f.countingAgent.Reply(ctx, t, emit)
}

// TestSentAgainAfterAFailure: the same message sent again after its task failed (the
// status says "send the message again") runs again; sent again after that task
// completed, it is a retry.
func TestSentAgainAfterAFailure(t *testing.T) {
	t.Parallel()
	ag := &failFirstAgent{}
	r, _ := newRunner(t, ag)
	first, err := sendID(localCtx(t), r, "m1", "again", "", "hello", false)
	if err != nil || first.Task.Status.State != a2a.StateFailed {
		t.Fatalf("first send = %+v, %v; want a failed task", first.Task, err)
	}
	second, err := sendID(localCtx(t), r, "m1", "again", "", "hello", false)
	if err != nil || second.Task.ID == first.Task.ID || second.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("sent again = %+v, %v; want a new task, completed", second.Task, err)
	}
	third, err := sendID(localCtx(t), r, "m1", "again", "", "hello", false)
	if err != nil || third.Task.ID != second.Task.ID {
		t.Fatalf("retry = %+v, %v; want task %s", third.Task, err, second.Task.ID)
	}
	if n := ag.turns.Load(); n != 2 {
		t.Fatalf("the agent ran %d turns, want 2", n)
	}
}

// TestRetryCheckOnlyWhenItMayRepeat: the echo agent reads no history, so no send reads
// the conversation; the append of a message the Runner does not know to be new checks it
// (Dedup): a conversation it has not stored a message in, and the same messageId again.
// A repeat answers with the first task and runs no turn.
func TestRetryCheckOnlyWhenItMayRepeat(t *testing.T) {
	t.Parallel()
	_, st := newRunner(t, &countingAgent{})
	led := &countingLedger{Store: st}
	r := New(Config{}, led, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	tasks := map[string]string{}
	step := func(id, text string, wantChecks, wantTurns int32) {
		t.Helper()
		led.lastBefore.Store(0)
		led.dedup.Store(0)
		res, err := sendID(localCtx(t), r, id, "reads", "", text, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := led.lastBefore.Load(); n != 0 {
			t.Fatalf("send %s %q read the conversation %d times, want 0", id, text, n)
		}
		if n := led.dedup.Load(); n != wantChecks {
			t.Fatalf("send %s %q made %d checked appends, want %d", id, text, n, wantChecks)
		}
		if conv, err := st.Conversation(t.Context(), "local", "reads"); err != nil || int32(conv.Turns) != wantTurns {
			t.Fatalf("after send %s %q the conversation holds %d turns (%v), want %d", id, text, conv.Turns, err, wantTurns)
		}
		if first, ok := tasks[id+text]; ok && wantChecks == 1 && first != res.Task.ID {
			t.Fatalf("retry of %s %q answered task %s, want %s", id, text, res.Task.ID, first)
		}
		tasks[id+text] = res.Task.ID
	}
	step("m1", "one", 1, 1)   // not remembered: checked in the append (nothing to read: a new conversation)
	step("m2", "two", 0, 2)   // another messageId than the latest: no check
	step("m3", "three", 0, 3) //
	step("m3", "three", 1, 3) // the latest messageId again: checked, a retry, no turn
	step("m3", "other", 1, 4) // the latest messageId, other text: checked, a new message
}

// TestRetryOverASharedStore: over a shared store another instance stores messages too, so
// the Runner reads even when it remembers another latest messageId.
func TestRetryOverASharedStore(t *testing.T) {
	t.Parallel()
	ag := &countingAgent{}
	locks := locking.NewLocal()
	a, st := newRunnerWith(t, Config{SharedStore: true}, locks, ag)
	b := New(Config{SharedStore: true}, st, locks, ag, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if _, err := sendID(localCtx(t), a, "m1", "shared", "", "one", false); err != nil {
		t.Fatal(err)
	}
	second, err := sendID(localCtx(t), b, "m2", "shared", "", "two", false)
	if err != nil {
		t.Fatal(err)
	}
	// The store announces every append to every instance (server's followStore).
	conv, err := st.Conversation(t.Context(), "local", "shared")
	if err != nil {
		t.Fatal(err)
	}
	a.Announce(t.Context(), "local", "shared", conv.LastSeq, conv.LastSeq, conv.Epoch)
	again, err := sendID(localCtx(t), a, "m2", "shared", "", "two", false)
	if err != nil || again.Task.ID != second.Task.ID {
		t.Fatalf("retry through the other instance = %+v, %v; want task %s", again.Task, err, second.Task.ID)
	}
	if n := ag.turns.Load(); n != 2 {
		t.Fatalf("the agent ran %d turns, want 2", n)
	}
}

func TestLatestSeenBounded(t *testing.T) {
	t.Parallel()
	l := latestSeen{genmap.Map[seenMessage]{Max: latestSeenMax}}
	l.Put("kept", seenMessage{id: "m-kept", epoch: 1})
	for i := range latestSeenMax - 1 {
		l.Put(fmt.Sprint("a", i), seenMessage{id: "m", epoch: 1})
	}
	// A full generation: the next put begins a new one; "kept" is in the older.
	l.Put("b0", seenMessage{id: "m", epoch: 1})
	if m, ok := l.Get("kept"); !ok || m.id != "m-kept" { // found, and moved to the newer one
		t.Fatalf("get(kept) = %q, %v; want m-kept", m.id, ok)
	}
	for i := range latestSeenMax {
		l.Put(fmt.Sprint("c", i), seenMessage{id: "m", epoch: 1})
	}
	if l.Has("a0") {
		t.Fatal("a key unused for two generations is still remembered")
	}
	if !l.Has("kept") {
		t.Fatal("a key used in the last generation was forgotten")
	}
	if n := l.Len(); n > 2*latestSeenMax {
		t.Fatalf("holds %d keys, want at most %d", n, 2*latestSeenMax)
	}
}

// TestLatestSeenAnnounced: an announced append in the remembered turn's epoch keeps the
// remembered message; one in a newer epoch, or without one, forgets it.
func TestLatestSeenAnnounced(t *testing.T) {
	t.Parallel()
	var l latestSeen
	l.Put("k", seenMessage{id: "m1", epoch: 3})
	l.announced("k", 3) // this Runner's own turn: its reply, its chunks
	if m, ok := l.Get("k"); !ok || m.id != "m1" {
		t.Fatalf("after an append in the same epoch: get = %q, %v; want m1", m.id, ok)
	}
	l.announced("k", 4) // another instance began a turn
	if l.Has("k") {
		t.Fatal("an append in a newer epoch left the message remembered")
	}
	l.Put("k", seenMessage{id: "m2", epoch: 5})
	l.announced("k", 0) // an instance of an earlier build names no epoch
	if l.Has("k") {
		t.Fatal("an append without an epoch left the message remembered")
	}
}
