package ledger

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestGroupCommit_Concurrent runs 64 writers on distinct conversations with real fsync:
// every acknowledged entry is stored, and appends share commits.
func TestGroupCommit_Concurrent(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 64, 10
	s := mustOpen(t, Options{}) // fsync on: commits take long enough for appends to queue up
	ctx := t.Context()
	acked := make([][]Entry, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: fmt.Sprintf("w-%d", w),
					Entries: []Entry{userMsg(fmt.Sprintf("w%d-%d", w, i))}})
				if err != nil {
					errs[w] = err
					return
				}
				acked[w] = append(acked[w], res.Entries...)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Append() errors: %v", err)
	}
	for w := range writers {
		got, err := s.Range(ctx, "local", fmt.Sprintf("w-%d", w), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(acked[w], got); diff != "" {
			t.Errorf("writer %d: stored entries differ from acknowledged ones (-acked +stored):\n%s", w, diff)
		}
	}
	st := s.Stats()
	if st.Appends != writers*perWriter || st.Requests != writers*perWriter {
		t.Errorf("Stats() = %+v, want %d appends and requests", st, writers*perWriter)
	}
	if st.Commits >= st.Appends {
		t.Errorf("Stats() = %+v, want fewer commits than appends", st)
	}
	t.Logf("%d appends in %d commits (%.1f per commit)", st.Appends, st.Commits, st.AppendsPerCommit())
	if n, err := s.VerifyAll(ctx); n != writers || err != nil {
		t.Errorf("VerifyAll() = %d, %v, want %d, nil", n, err, writers)
	}
}

// TestGroupCommit_SameConversation: concurrent appends to one conversation get distinct,
// gap-free seqs and a valid chain.
func TestGroupCommit_SameConversation(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c",
					Entries: numbered(fmt.Sprintf("w%d-%d", w, i), 1+i%3)}); err != nil {
					t.Errorf("Append() error = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Verify(ctx, "local", "c"); err != nil {
		t.Errorf("Verify() error = %v", err)
	}
	c, err := s.Conversation(ctx, "local", "c")
	if err != nil || c.LastSeq != 16*(7*1+7*2+6*3) {
		t.Errorf("Conversation() = %+v, %v, want lastSeq %d", c, err, 16*(7+14+18))
	}
}

// TestGroupCommit_RefusedRequestFailsAlone commits one batch directly: the requests refused
// inside the transaction (stale epoch, a task of another conversation, a conversation whose
// stored head is corrupt) fail alone, the others commit together, in queue order, in
// one commit.
func TestGroupCommit_RefusedRequestFailsAlone(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	ctx := t.Context()
	withTask := func(e Entry, id string) Entry { e.TaskID = id; return e }
	mustAppend(t, s, "local", "owner-of-t", withTask(userMsg("t"), "t"))
	mustAppend(t, s, "local", "d", userMsg("d1"))
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecent).Put([]byte(contextid.Key("local", "d")), []byte("{corrupt"))
	}); err != nil {
		t.Fatal(err)
	}

	reqs := []AppendRequest{
		{Owner: "local", ContextID: "a", BeginTurn: true, Entries: []Entry{userMsg("a1")}},
		{Owner: "local", ContextID: "b", Epoch: 7, Entries: []Entry{userMsg("fenced")}},
		{Owner: "local", ContextID: "a", Epoch: 1, Entries: []Entry{agentMsg("a2")}}, // sees the epoch set by the first request
		{Owner: "local", ContextID: "c", Entries: []Entry{withTask(userMsg("steal"), "t")}},
		{Owner: "local", ContextID: "b", Entries: []Entry{userMsg("b1")}},
		{Owner: "local", ContextID: "d", Entries: []Entry{userMsg("d2")}},
		{Owner: "local", ContextID: "a", Entries: []Entry{userMsg("a3")}},
	}
	batch := make([]*pending, len(reqs))
	for i := range reqs {
		p, err := s.prepare(&reqs[i])
		if err != nil {
			t.Fatalf("prepare(%d) error = %v", i, err)
		}
		batch[i] = &pending{req: p, done: make(chan outcome, 1)}
	}
	before := s.Stats()
	s.commitBatch(batch)
	after := s.Stats()

	wantErr := []error{nil, ErrFenced, nil, ErrInvalid, nil, ErrChainBroken, nil}
	for i, p := range batch {
		out := <-p.done
		if wantErr[i] == nil && out.err != nil || wantErr[i] != nil && !errors.Is(out.err, wantErr[i]) {
			t.Errorf("request %d error = %v, want %v", i, out.err, wantErr[i])
		}
	}
	if got := after.Commits - before.Commits; got != 1 {
		t.Errorf("commits = %d, want 1", got)
	}
	if got := after.Rejected - before.Rejected; got != 3 {
		t.Errorf("rejected = %d, want 3", got)
	}
	for _, tt := range []struct {
		id   string
		want []string
	}{
		{"a", []string{"a1", "a2", "a3"}},
		{"b", []string{"b1"}},
	} {
		got, err := s.Range(ctx, "local", tt.id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
			t.Errorf("conversation %s (-want +got):\n%s", tt.id, diff)
		}
	}
	if _, err := s.Conversation(ctx, "local", "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Conversation(c) error = %v, want %v (refused requests leave nothing)", err, ErrNotFound)
	}
	if _, err := s.Range(ctx, "local", "d", 0, 0); !errors.Is(err, ErrChainBroken) {
		t.Errorf("Range(d) error = %v, want ErrChainBroken (its head, the way to its entries, is corrupt)", err)
	}
	// a, b and owner-of-t verify; d's corrupt head is reported.
	if n, err := s.VerifyAll(ctx); n != 4 || !errors.Is(err, ErrChainBroken) {
		t.Errorf("VerifyAll() = %d, %v, want 4 and ErrChainBroken for d", n, err)
	}
}

// TestGroupCommit_AllRefused: a batch in which every request is refused commits nothing.
func TestGroupCommit_AllRefused(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	_, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "a", Epoch: 3, Entries: []Entry{userMsg("x")}})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("Append() error = %v, want %v", err, ErrFenced)
	}
	if st := s.Stats(); st.Commits != 0 || st.Rejected != 1 {
		t.Errorf("Stats() = %+v, want no commit and one rejected", st)
	}
}
