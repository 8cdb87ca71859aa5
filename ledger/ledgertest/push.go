package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
)

// PushStore is a Store with the push indexes (ledger/push.go).
type PushStore interface {
	Store
	PushConfigs(ctx context.Context, owner, taskID string) ([]ledger.Entry, error)
	PushConfigCount(ctx context.Context, owner string) (int, error)
	PendingPush(ctx context.Context, limit int) ([]ledger.PendingPush, error)
}

// RunPush runs the push cases: open returns a new, empty store and reopen closes s and
// opens the same storage again (the test owns both).
func RunPush(t *testing.T, open func(t *testing.T) PushStore, reopen func(t *testing.T, s PushStore) PushStore) {
	t.Run("PushConfigs", func(t *testing.T) { t.Parallel(); testPushConfigs(t, open(t)) })
	t.Run("PushRefusedStoresNothing", func(t *testing.T) { t.Parallel(); testPushRefused(t, open(t)) })
	t.Run("PushPendingSurvivesReopen", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		testPushPending(t, s, func() PushStore { return reopen(t, s) })
	})
}

func pushEntry(kind ledger.Kind, task string, rec any) ledger.Entry {
	b, _ := json.Marshal(rec)
	return ledger.Entry{TaskID: task, Kind: kind, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, Metadata: b}
}

// PushConfigEntry, PushOutboxEntry and PushAttemptEntry build push entries for tests.
func PushConfigEntry(task string, c ledger.PushConfig) ledger.Entry {
	return pushEntry(ledger.KindPushConfig, task, c)
}

func PushOutboxEntry(task, configID string) ledger.Entry {
	return pushEntry(ledger.KindPushOutbox, task, ledger.PushOutbox{ConfigID: configID, URL: "https://example.com/hook",
		ContentType: "application/json", Body: json.RawMessage(`{"kind":"status-update"}`)})
}

func PushAttemptEntry(task string, outboxSeq uint64, attempt int, final bool) ledger.Entry {
	a := ledger.PushAttempt{OutboxSeq: outboxSeq, Attempt: attempt, Outcome: "retry", Final: final, Status: 500, Error: "HTTP 500"}
	if final {
		a.Outcome, a.Status, a.Error = "delivered", 200, ""
	} else {
		a.NextAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return pushEntry(ledger.KindPushAttempt, task, a)
}

func configIDs(t *testing.T, es []ledger.Entry) []string {
	t.Helper()
	var out []string
	for i := range es {
		var c ledger.PushConfig
		if err := ledger.PushRecord(&es[i], &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.ID+"="+c.URL)
	}
	return out
}

func testPushConfigs(t *testing.T, s PushStore) {
	ctx := context.Background()
	set := func(task, id, url string) ledger.Entry {
		return PushConfigEntry(task, ledger.PushConfig{ID: id, Dialect: "1.0", URL: url})
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pc", Entries: []ledger.Entry{
		status("t1", "working"), set("t1", "a", "https://a"), set("t1", "b", "https://b"), set("t2", "a", "https://c")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pc", Entries: []ledger.Entry{
		set("t1", "a", "https://a2"), // replaces
		PushConfigEntry("t1", ledger.PushConfig{ID: "b", Deleted: true}),
		PushConfigEntry("t1", ledger.PushConfig{ID: "zz", Deleted: true}), // deleting nothing is fine
	}})
	got, err := s.PushConfigs(ctx, "o", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if ids := configIDs(t, got); len(ids) != 1 || ids[0] != "a=https://a2" {
		t.Errorf("t1 configs = %v, want [a=https://a2]", ids)
	}
	if other, _ := s.PushConfigs(ctx, "p", "t1"); len(other) != 0 {
		t.Errorf("another owner sees %d configs of t1", len(other))
	}
	if n, err := s.PushConfigCount(ctx, "o"); err != nil || n != 2 {
		t.Errorf("PushConfigCount(o) = %d, %v; want 2", n, err)
	}
}

func testPushRefused(t *testing.T, s PushStore) {
	ctx := context.Background()
	r := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pr", BeginTurn: true, Entries: []ledger.Entry{status("t", "working")}})
	// Fenced: nothing stored, no outbox item, no config.
	_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "pr", Epoch: r.Epoch + 5, Entries: []ledger.Entry{
		status("t", "completed"), PushOutboxEntry("t", "a"), PushConfigEntry("t", ledger.PushConfig{ID: "a", URL: "https://a"})}})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("fenced append: err = %v, want ErrFenced", err)
	}
	// Invalid push records are refused at validation.
	bad := []ledger.Entry{
		pushEntry(ledger.KindPushOutbox, "t", ledger.PushOutbox{ConfigID: "a"}), // no url, body
		pushEntry(ledger.KindPushOutbox, "", ledger.PushOutbox{ConfigID: "a", URL: "u", ContentType: "c", Body: json.RawMessage(`{}`)}),
		pushEntry(ledger.KindPushConfig, "t", map[string]any{"id": "a", "url": "u", "extra": 1}),
		pushEntry(ledger.KindPushAttempt, "t", ledger.PushAttempt{Outcome: "retry", Attempt: 1}), // no outboxSeq
	}
	for i, e := range bad {
		_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "pr", Entries: []ledger.Entry{PushOutboxEntry("t", "a"), e}})
		if !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("bad[%d]: err = %v, want ErrInvalid", i, err)
		}
	}
	wrongTrust := PushOutboxEntry("t", "a")
	wrongTrust.Visibility = ledger.VisibilityModel
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "pr", Entries: []ledger.Entry{wrongTrust}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("model-visible outbox entry: err = %v, want ErrInvalid", err)
	}
	if p, err := s.PendingPush(ctx, 0); err != nil || len(p) != 0 {
		t.Errorf("pending after refused appends = %d, %v; want none", len(p), err)
	}
	if c, _ := s.PushConfigs(ctx, "o", "t"); len(c) != 0 {
		t.Errorf("configs after refused appends = %d; want none", len(c))
	}
	if c, _ := s.Conversation(ctx, "o", "pr"); c.LastSeq != 1 {
		t.Errorf("lastSeq = %d, want 1", c.LastSeq)
	}
}

func testPushPending(t *testing.T, s PushStore, reopen func() PushStore) {
	ctx := context.Background()
	r1 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pp", Entries: []ledger.Entry{
		status("t", "working"), PushOutboxEntry("t", "a")}})
	r2 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pp", Entries: []ledger.Entry{
		status("t", "completed"), PushOutboxEntry("t", "a")}})
	first, second := r1.Entries[1], r2.Entries[1]
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pp", Entries: []ledger.Entry{PushAttemptEntry("t", first.Seq, 1, false)}})

	s = reopen()
	p, err := s.PendingPush(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || p[0].Entry.ID != first.ID || p[1].Entry.ID != second.ID {
		t.Fatalf("pending after reopen = %+v, want the two outbox entries in order", p)
	}
	if p[0].Attempts != 1 || !p[0].NextAt.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) || p[1].Attempts != 0 {
		t.Errorf("delivery state = (%d, %v), (%d); want (1, 2030-01-01), (0)", p[0].Attempts, p[0].NextAt, p[1].Attempts)
	}
	if lim, _ := s.PendingPush(ctx, 1); len(lim) != 1 || lim[0].Entry.ID != first.ID {
		t.Errorf("PendingPush(limit 1) = %d items, want the oldest", len(lim))
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pp", Entries: []ledger.Entry{PushAttemptEntry("t", first.Seq, 2, true)}})
	p, _ = s.PendingPush(ctx, 0)
	if len(p) != 1 || p[0].Entry.ID != second.ID {
		t.Fatalf("pending after the final attempt = %d items, want only the second", len(p))
	}
	// A late retry of a final delivery does not bring it back.
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "pp", Entries: []ledger.Entry{PushAttemptEntry("t", first.Seq, 3, false)}})
	if p, _ = s.PendingPush(ctx, 0); len(p) != 1 {
		t.Errorf("pending after a late attempt = %d, want 1", len(p))
	}
}

// RunReopened runs the suites that reopen a store (RunPush, RunRunning) against a backend
// given as where a new store lives (place: a file path, a database URL) and how to open
// the store at a place (openAt; it registers the store's Close as a cleanup).
func RunReopened[S PushStore](t *testing.T, place func(t *testing.T) string, openAt func(t *testing.T, place string) S) {
	places := map[PushStore]string{}
	var mu sync.Mutex
	open := func(t *testing.T) PushStore {
		p := place(t)
		s := openAt(t, p)
		mu.Lock()
		places[s] = p
		mu.Unlock()
		return s
	}
	reopen := func(t *testing.T, s PushStore) PushStore {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		p := places[s]
		mu.Unlock()
		return openAt(t, p)
	}
	RunPush(t, open, reopen)
	RunRunning(t, open, reopen)
}
