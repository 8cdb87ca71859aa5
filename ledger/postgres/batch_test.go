package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/postgres"
)

// TestBatchRefusalsLeaveNoTrace: refused requests (fenced, or naming another
// conversation's task) committed in the same batches as accepted ones are refused, write
// nothing (not even the head row of a conversation they would have created), and the
// accepted ones still commit with gap-free seqs and the right totals.
func TestBatchRefusalsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := openURL(t, url)
	ctx := context.Background()
	owned := text("owned")
	owned.TaskID = "t-owned"
	if _, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "owner", Entries: []ledger.Entry{owned}}); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var req ledger.AppendRequest
			var want error
			switch i % 3 {
			case 0: // accepted, all to one conversation
				req = ledger.AppendRequest{Owner: "o", ContextID: "shared", Entries: []ledger.Entry{text(fmt.Sprint(i))}}
			case 1: // fenced: a conversation that does not exist has epoch 0
				req = ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("fenced%d", i), Epoch: 7, Entries: []ledger.Entry{text("x")}}
				want = ledger.ErrFenced
			default: // another conversation's task
				e := text("x")
				e.TaskID = "t-owned"
				req = ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("thief%d", i), Entries: []ledger.Entry{e}}
			}
			_, err := s.Append(ctx, req)
			var fe *ledger.FieldError
			switch {
			case i%3 == 0 && err != nil:
				t.Errorf("append %d: %v", i, err)
			case want != nil && !errors.Is(err, want):
				t.Errorf("append %d = %v, want %v", i, err, want)
			case i%3 == 2 && !errors.As(err, &fe):
				t.Errorf("append %d = %v, want a *ledger.FieldError", i, err)
			}
		})
	}
	wg.Wait()
	conn := connect(t, url)
	var convs, entries, lastSeq, total int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM conversations`).Scan(&convs); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM entries`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT last_seq, entries FROM conversations WHERE context_id = 'shared'`).Scan(&lastSeq, &total); err != nil {
		t.Fatal(err)
	}
	accepted := int64((n + 2) / 3)
	if convs != 2 || entries != accepted+1 || lastSeq != accepted || total != accepted {
		t.Errorf("stored %d conversations, %d entries, shared head at seq %d with %d entries; want 2, %d, %d, %d",
			convs, entries, lastSeq, total, accepted+1, accepted, accepted)
	}
	if st := s.Stats(); st.Commits >= n {
		t.Logf("no batch carried two appends (%+v): the refusals were not mixed into shared commits", st)
	}
}

// TestBatchReplansAfterConflict: a batch whose new conversation another transaction
// creates first (the other committer, or another instance) conflicts on the head row's
// key, commits nothing, and is planned again from the heads as they are then: its eight
// appends land in one more transaction, after the other's head, instead of falling back
// to one transaction each.
func TestBatchReplansAfterConflict(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	s := openURL(t, url)
	ctx := context.Background()
	key := contextid.Key("o", "c")
	other := connect(t, url)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	if _, err := tx.Exec(ctx, `INSERT INTO conversations (key, context_id, owner, created_at, last_activity, last_seq, last_hash, epoch, entries, turns, tasks, last_task_id)
		VALUES ($1, 'c', 'o', $2, $2, 0, '', 0, 0, 0, 0, '')`, key, now); err != nil {
		t.Fatal(err)
	}
	var reqs []ledger.AppendRequest
	for i := range 8 {
		reqs = append(reqs, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{text(fmt.Sprint("m", i))}})
	}
	type result struct {
		errs []error
		err  error
	}
	done := make(chan result, 1)
	go func() { errs, err := postgres.CommitBatch(s, reqs); done <- result{errs, err} }()
	watch := connect(t, url)
	testutil.WaitFor(t, "the batch waiting on the other transaction's new head", func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, err := range r.errs {
		if err != nil {
			t.Errorf("append %d: %v", i, err)
		}
	}
	if st := s.Stats(); st.Commits != 1 || st.Appends != 8 {
		t.Errorf("Stats() = %+v; want the 8 appends in 1 commit (planned again), not one commit each", st)
	}
	es, err := s.Range(ctx, "o", "c", 0, 0)
	if err != nil || len(es) != 8 || es[0].Seq != 1 || es[7].Seq != 8 {
		t.Fatalf("Range = %d entries, %v; want seqs 1..8", len(es), err)
	}
	if err := s.Verify(ctx, "o", "c"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}

// TestBatchDedup: the Dedup check of a batch sees what the batch itself appended before
// the request (a repeat within the batch is refused) and what was stored before it, and
// so does a request committed alone.
func TestBatchDedup(t *testing.T) {
	t.Parallel()
	s := openURL(t, pgtest.Database(t))
	user := func(ctx, task, id, s string) ledger.AppendRequest {
		e := text(s)
		e.TaskID, e.MessageID = task, id
		return ledger.AppendRequest{Owner: "o", ContextID: ctx, BeginTurn: true, Dedup: true, Entries: []ledger.Entry{e}}
	}
	if _, err := s.Append(context.Background(), user("stored", "t1", "m1", "hello")); err != nil {
		t.Fatal(err)
	}
	errs, err := postgres.CommitBatch(s, []ledger.AppendRequest{
		user("stored", "t2", "m1", "hello"), // repeats the stored latest message
		user("new", "t3", "m3", "hi"),       // a new conversation
		user("new", "t4", "m3", "hi"),       // repeats the one before it in this batch
		user("new", "t5", "m5", "hi"),       // another message
	})
	if err != nil {
		t.Fatal(err)
	}
	wantTask := []string{"t1", "", "t3", ""}
	for i, err := range errs {
		var repeat *ledger.RepeatError
		switch {
		case wantTask[i] == "" && err != nil:
			t.Errorf("request %d: %v, want it appended", i, err)
		case wantTask[i] != "" && (!errors.As(err, &repeat) || repeat.TaskID != wantTask[i]):
			t.Errorf("request %d: %v, want a *ledger.RepeatError naming %s", i, err, wantTask[i])
		}
	}
	var repeat *ledger.RepeatError
	if err := postgres.CommitAlone(s, user("new", "t6", "m5", "hi")); !errors.As(err, &repeat) || repeat.TaskID != "t5" {
		t.Errorf("alone, a repeat: %v, want a *ledger.RepeatError naming t5", err)
	}
	if err := postgres.CommitAlone(s, user("new", "t7", "m5", "hi!")); err != nil {
		t.Errorf("alone, another message: %v", err)
	}
	for ctx, want := range map[string]uint64{"stored": 1, "new": 3} {
		if c, err := s.Conversation(context.Background(), "o", ctx); err != nil || c.LastSeq != want {
			t.Errorf("conversation %s: last seq %d (%v), want %d", ctx, c.LastSeq, err, want)
		}
	}
}
