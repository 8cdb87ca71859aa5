// Package ledgertest is the conformance suite of the ledger's store contract: every
// storage backend (the bbolt Store, ledger/postgres) runs [Run] unchanged.
package ledgertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// Store is the store contract: the operations the gateway needs of a ledger (the union of
// turn.Ledger, conversations.Ledger and prompt.Reader, plus artifacts and Close).
type Store interface {
	Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error)
	Conversation(ctx context.Context, owner, contextID string) (ledger.Conversation, error)
	ConversationsByID(ctx context.Context, contextID string) ([]ledger.Conversation, error)
	List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error)
	Last(ctx context.Context, owner, contextID string, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error)
	Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]ledger.Entry, error)
	TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error)
	TaskIDs(ctx context.Context, owner, contextID string) ([]string, error)
	LoadArtifact(ctx context.Context, ref string) ([]byte, error)
	Inflate(ctx context.Context, entries []ledger.Entry) error
	Verify(ctx context.Context, owner, contextID string) error
	VerifyAll(ctx context.Context) (checked int, err error)
	// RunningTasks lists the running-task index (ledger/running.go).
	RunningTasks(ctx context.Context) ([]ledger.RunningTask, error)
	// ConversationRunning reads a conversation's head and its running tasks together
	// (ledger/running.go).
	ConversationRunning(ctx context.Context, owner, contextID string) (ledger.Conversation, []string, error)
	Close() error
}

// LargePartBytes is the large-part threshold the suite expects open to configure.
const LargePartBytes = 1024

// Run runs the suite; open returns a new, empty store (LargePartBytes set to
// [LargePartBytes]) that the test owns (open registers its Close with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"AppendSeqAndChain", testAppendSeqAndChain},
		{"HashFormat", testHashFormat},
		{"Fencing", testFencing},
		{"Dedup", testDedup},
		{"GroupCommitConcurrent", testConcurrent},
		{"Last", testLast},
		{"RangeAndExport", testRange},
		{"Tasks", testTasks},
		{"ListAndByID", testList},
		{"ListAfterCursor", testListCursor},
		{"Artifacts", testArtifacts},
		{"Recovery", testRecovery},
		{"Validation", testValidation},
		{"TraceIDs", testTraceIDs},
		{"MemorySnapshot", testMemorySnapshot},
		{"NotFound", testNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

func msg(text string) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Visibility: ledger.VisibilityModel,
		Role: ledger.RoleUser, Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}}
}

func status(task, state string) ledger.Entry {
	return ledger.Entry{TaskID: task, Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, State: state}
}

func mustAppend(t *testing.T, s Store, req ledger.AppendRequest) ledger.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), req)
	if err != nil {
		t.Fatalf("Append(%s) error = %v", req.ContextID, err)
	}
	return res
}

func seqs(es []ledger.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func testAppendSeqAndChain(t *testing.T, s Store) {
	ctx := context.Background()
	r1 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", BeginTurn: true, Entries: []ledger.Entry{msg("a"), msg("b")}})
	r2 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "c", Entries: []ledger.Entry{msg("c")}})
	if diff := cmp.Diff([]uint64{1, 2, 3}, seqs(append(r1.Entries, r2.Entries...))); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	if r1.Epoch != 1 || r2.Epoch != 1 {
		t.Errorf("epochs = %d, %d, want 1, 1", r1.Epoch, r2.Epoch)
	}
	if r1.Entries[0].PrevHash != "" || r1.Entries[1].PrevHash != r1.Entries[0].Hash || r2.Entries[0].PrevHash != r1.Entries[1].Hash {
		t.Errorf("hash chain not linked: %+v %+v", r1.Entries, r2.Entries)
	}
	all, err := s.Range(ctx, "o", "c", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(r1.Entries, r2.Entries...), all); diff != "" {
		t.Errorf("Range differs from what Append returned (-want +got):\n%s", diff)
	}
	c, err := s.Conversation(ctx, "o", "c")
	if err != nil {
		t.Fatal(err)
	}
	if c.LastSeq != 3 || c.Entries != 3 || c.Turns != 3 || c.Epoch != 1 || !strings.HasPrefix(c.Key, "v1/") {
		t.Errorf("Conversation = %+v, want lastSeq 3, 3 entries, 3 turns, epoch 1, key v1/…", c)
	}
	if err := s.Verify(ctx, "o", "c"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}

// testHashFormat recomputes every stored hash with the frozen format (sha256 of prevHash
// and encoding/json of the entry without its hash) and checks the frozen entry of
// ledger/testdata with the exported checker.
func testHashFormat(t *testing.T, s Store) {
	e := msg("x <y> & \u2028")
	e.Metadata = json.RawMessage(`{ "a" : [1, 2] }`)
	e.Parts = append(e.Parts, ledger.Part{Kind: ledger.PartFile, Raw: []byte{0, 0xff}, Filename: "b"})
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "h", Entries: []ledger.Entry{e, msg("second")}})
	got, err := s.Range(context.Background(), "o", "h", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for _, e := range got {
		want := e.Hash
		e.Hash = ""
		b, _ := json.Marshal(e)
		sum := sha256.Sum256(append([]byte(prev), b...))
		if hex.EncodeToString(sum[:]) != want || e.PrevHash != prev {
			t.Errorf("seq %d: hash %s is not sha256(prevHash ‖ canonical JSON)", e.Seq, want)
		}
		prev = want
	}
	if diff := cmp.Diff(res.Entries, got); diff != "" {
		t.Errorf("read back differs (-append +read):\n%s", diff)
	}
}

func testFencing(t *testing.T, s Store) {
	ctx := context.Background()
	r1 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "f", BeginTurn: true, Entries: []ledger.Entry{msg("1")}})
	r2 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "f", BeginTurn: true, Entries: []ledger.Entry{msg("2")}})
	if r2.Epoch != r1.Epoch+1 {
		t.Fatalf("BeginTurn epoch %d after %d", r2.Epoch, r1.Epoch)
	}
	_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "f", Epoch: r1.Epoch, Entries: []ledger.Entry{msg("stale")}})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("stale epoch: err = %v, want ErrFenced", err)
	}
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "f", Epoch: r2.Epoch, Entries: []ledger.Entry{msg("ok")}})
	// Compare-and-bump: of two BeginTurn appends expecting the same epoch, one wins.
	r3 := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "f", BeginTurn: true, Epoch: r2.Epoch, Entries: []ledger.Entry{msg("won")}})
	if r3.Epoch != r2.Epoch+1 {
		t.Errorf("compare-and-bump epoch = %d, want %d", r3.Epoch, r2.Epoch+1)
	}
	_, err = s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "f", BeginTurn: true, Epoch: r2.Epoch, Entries: []ledger.Entry{msg("lost")}})
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("second compare-and-bump: err = %v, want ErrFenced", err)
	}
	c, _ := s.Conversation(ctx, "o", "f")
	if c.LastSeq != 4 || c.Epoch != r3.Epoch {
		t.Errorf("lastSeq %d epoch %d, want 4, %d (the fenced appends stored nothing)", c.LastSeq, c.Epoch, r3.Epoch)
	}
}

// testConcurrent appends from many goroutines to a few conversations: every append is
// acknowledged, seqs are gap-free and every chain verifies.
func testConcurrent(t *testing.T, s Store) {
	ctx := context.Background()
	const workers, each = 16, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				_, err := s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: fmt.Sprintf("g%d", w%3),
					Entries: []ledger.Entry{msg(fmt.Sprintf("%d-%d", w, i))}})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Append error = %v", err)
	}
	total := 0
	for i := range 3 {
		es, err := s.Range(ctx, "o", fmt.Sprintf("g%d", i), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range es {
			if e.Seq != uint64(j+1) {
				t.Fatalf("g%d: entry %d has seq %d", i, j, e.Seq)
			}
		}
		total += len(es)
	}
	if total != workers*each {
		t.Errorf("stored %d entries, want %d", total, workers*each)
	}
	if n, err := s.VerifyAll(ctx); n != 3 || err != nil {
		t.Errorf("VerifyAll() = %d, %v, want 3, nil", n, err)
	}
}

func testLast(t *testing.T, s Store) {
	ctx := context.Background()
	for i := range 10 {
		e := msg(fmt.Sprint(i))
		if i%2 == 1 {
			e = status("", "working")
		}
		mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "l", Entries: []ledger.Entry{e}})
	}
	tests := []struct {
		before uint64
		n      int
		keep   func(*ledger.Entry) bool
		want   []uint64
	}{
		{0, 3, nil, []uint64{8, 9, 10}},
		{0, 0, nil, []uint64{}},
		{0, 100, nil, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{0, 2, func(e *ledger.Entry) bool { return e.Kind == ledger.KindUserMessage }, []uint64{7, 9}},
		{5, 2, nil, []uint64{3, 4}},
		{5, 10, func(e *ledger.Entry) bool { return e.Kind == ledger.KindUserMessage }, []uint64{1, 3}},
	}
	for _, tt := range tests {
		got, err := s.LastBefore(ctx, "o", "l", tt.before, tt.n, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
			t.Errorf("LastBefore(%d, %d) (-want +got):\n%s", tt.before, tt.n, diff)
		}
	}
	if got, _ := s.Last(ctx, "o", "l", 1, nil); len(got) != 1 || got[0].Seq != 10 {
		t.Errorf("Last(1) = %v, want seq 10", seqs(got))
	}
	if _, err := s.Last(ctx, "o", "l", -1, nil); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("Last(-1) error = %v, want ErrInvalid", err)
	}
}

func testRange(t *testing.T, s Store) {
	ctx := context.Background()
	for i := range 5 {
		mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "r", Entries: []ledger.Entry{msg(fmt.Sprint(i))}})
	}
	tests := []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 0, []uint64{1, 2, 3, 4, 5}},
		{2, 0, []uint64{3, 4, 5}},
		{2, 2, []uint64{3, 4}},
		{5, 0, []uint64{}},
		{^uint64(0), 0, []uint64{}},
	}
	for _, tt := range tests {
		got, err := s.Range(ctx, "o", "r", tt.after, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
			t.Errorf("Range(%d, %d) (-want +got):\n%s", tt.after, tt.limit, diff)
		}
	}
	if _, err := s.Range(ctx, "o", "r", 0, -1); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("Range(limit -1) error = %v, want ErrInvalid", err)
	}
}

func testTasks(t *testing.T, s Store) {
	ctx := context.Background()
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "t", BeginTurn: true, Entries: []ledger.Entry{msg("hi"), status("t1", "working")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "t", Entries: []ledger.Entry{status("t1", "completed")}})
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "t", BeginTurn: true, Entries: []ledger.Entry{status("t2", "working")}})
	conv, es, err := s.TaskEntries(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if conv.ContextID != "t" || conv.Owner != "o" || conv.Tasks != 2 || conv.LastTaskID != "t2" {
		t.Errorf("TaskEntries conversation = %+v", conv)
	}
	if diff := cmp.Diff([]uint64{2, 3}, seqs(es)); diff != "" {
		t.Errorf("TaskEntries(t1) seqs (-want +got):\n%s", diff)
	}
	ids, err := s.TaskIDs(ctx, "o", "t")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"t1", "t2"}, ids); diff != "" {
		t.Errorf("TaskIDs (-want +got):\n%s", diff)
	}
	if _, _, err := s.TaskEntries(ctx, "nope"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("TaskEntries(unknown) error = %v, want ErrNotFound", err)
	}
	_, err = s.Append(ctx, ledger.AppendRequest{Owner: "o", ContextID: "other", Entries: []ledger.Entry{status("t1", "x")}})
	var fe *ledger.FieldError
	if !errors.As(err, &fe) || fe.Field != "taskId" {
		t.Errorf("a task of another conversation: err = %v, want a *FieldError on taskId", err)
	}
	if _, err := s.Conversation(ctx, "o", "other"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("the refused append created its conversation: %v", err)
	}
}

func testList(t *testing.T, s Store) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range []struct{ owner, cid string }{{"a", "x"}, {"b", "x"}, {"a", "y"}, {"a", "z"}} {
		e := msg("m")
		e.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		mustAppend(t, s, ledger.AppendRequest{Owner: r.owner, ContextID: r.cid, Entries: []ledger.Entry{e}})
	}
	all, err := s.List(ctx, ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("List() = %d conversations, want 4", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].LastActivity.After(all[i-1].LastActivity) {
			t.Errorf("List() not newest first at %d", i)
		}
	}
	mine, _ := s.List(ctx, ledger.ListOptions{Owner: "a", Limit: 2})
	if len(mine) != 2 || mine[0].Owner != "a" || mine[1].Owner != "a" {
		t.Errorf("List(owner a, limit 2) = %+v", mine)
	}
	if _, err := s.List(ctx, ledger.ListOptions{Limit: -1}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("List(limit -1) error = %v, want ErrInvalid", err)
	}
	byID, err := s.ConversationsByID(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 2 || byID[0].Owner != "a" || byID[1].Owner != "b" {
		t.Errorf("ConversationsByID(x) = %+v, want owners a, b", byID)
	}
	if none, err := s.ConversationsByID(ctx, "nobody"); err != nil || len(none) != 0 {
		t.Errorf("ConversationsByID(nobody) = %v, %v, want none", none, err)
	}
}

func testArtifacts(t *testing.T, s Store) {
	ctx := context.Background()
	big := strings.Repeat("0123456789", LargePartBytes/5)
	raw := []byte(strings.Repeat("r", LargePartBytes+1))
	e := msg(big)
	e.Parts = append(e.Parts, ledger.Part{Kind: ledger.PartFile, Raw: raw}, ledger.Part{Kind: ledger.PartText, Text: big})
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "art", Entries: []ledger.Entry{e}})
	p := res.Entries[0].Parts
	sum := sha256.Sum256([]byte(big))
	if p[0].ArtifactRef != "sha256:"+hex.EncodeToString(sum[:]) || p[0].Text != "" || p[0].Size != int64(len(big)) || p[2].ArtifactRef != p[0].ArtifactRef {
		t.Fatalf("large text part stored as %+v, want a content-addressed reference", p[0])
	}
	got, err := s.LoadArtifact(ctx, p[1].ArtifactRef)
	if err != nil || string(got) != string(raw) {
		t.Errorf("LoadArtifact = %d bytes, %v", len(got), err)
	}
	es, _ := s.Range(ctx, "o", "art", 0, 0)
	if err := s.Inflate(ctx, es); err != nil {
		t.Fatal(err)
	}
	if es[0].Parts[0].Text != big || string(es[0].Parts[1].Raw) != string(raw) {
		t.Errorf("Inflate did not restore the content")
	}
	if _, err := s.LoadArtifact(ctx, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("LoadArtifact(missing) error = %v, want ErrNotFound", err)
	}
	if _, err := s.LoadArtifact(ctx, "md5:x"); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("LoadArtifact(malformed) error = %v, want ErrInvalid", err)
	}
	if err := s.Verify(ctx, "o", "art"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}

// testRecovery checks what turn.Runner.Recover reads: List's LastTaskID, TaskEntries of
// it, and a BeginTurn append marking it failed.
func testRecovery(t *testing.T, s Store) {
	ctx := context.Background()
	mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "run", BeginTurn: true, Entries: []ledger.Entry{msg("go"), status("task-r", "working")}})
	convs, err := s.List(ctx, ledger.ListOptions{})
	if err != nil || len(convs) != 1 || convs[0].LastTaskID != "task-r" {
		t.Fatalf("List() = %+v, %v, want one conversation with LastTaskID task-r", convs, err)
	}
	_, es, err := s.TaskEntries(ctx, "task-r")
	if err != nil || len(es) != 1 || es[len(es)-1].State != "working" {
		t.Fatalf("TaskEntries = %+v, %v", es, err)
	}
	res := mustAppend(t, s, ledger.AppendRequest{Owner: "o", ContextID: "run", BeginTurn: true, Entries: []ledger.Entry{status("task-r", "failed")}})
	if res.Epoch != 2 {
		t.Errorf("recovery epoch = %d, want 2", res.Epoch)
	}
	if _, es, _ := s.TaskEntries(ctx, "task-r"); len(es) != 2 || es[1].State != "failed" {
		t.Errorf("after recovery the task's entries are %+v", es)
	}
}

func testValidation(t *testing.T, s Store) {
	ctx := context.Background()
	long := strings.Repeat("x", 257)
	bad := msg("m")
	bad.Kind = "NOPE"
	tests := []struct {
		name  string
		req   ledger.AppendRequest
		entry int
		field string
	}{
		{"no owner", ledger.AppendRequest{ContextID: "v", Entries: []ledger.Entry{msg("m")}}, -1, "owner"},
		{"no contextId", ledger.AppendRequest{Owner: "o", Entries: []ledger.Entry{msg("m")}}, -1, "contextId"},
		{"no entries", ledger.AppendRequest{Owner: "o", ContextID: "v"}, -1, "entries"},
		{"bad kind", ledger.AppendRequest{Owner: "o", ContextID: "v", Entries: []ledger.Entry{msg("m"), bad}}, 1, "kind"},
		{"long messageId", ledger.AppendRequest{Owner: "o", ContextID: "v", Entries: []ledger.Entry{{Kind: ledger.KindAudit, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityAudit, MessageID: long}}}, 0, "messageId"},
	}
	for _, tt := range tests {
		_, err := s.Append(ctx, tt.req)
		var fe *ledger.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ledger.ErrInvalid) || fe.Entry != tt.entry || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want a *FieldError on entries[%d].%s", tt.name, err, tt.entry, tt.field)
		}
	}
	if convs, _ := s.List(ctx, ledger.ListOptions{}); len(convs) != 0 {
		t.Errorf("refused appends stored %d conversations", len(convs))
	}
}

func testNotFound(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.Conversation(ctx, "o", "none"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Conversation error = %v, want ErrNotFound", err)
	}
	if _, err := s.Range(ctx, "o", "none", 0, 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Range error = %v, want ErrNotFound", err)
	}
	if _, err := s.Last(ctx, "o", "none", 1, nil); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Last error = %v, want ErrNotFound", err)
	}
	if err := s.Verify(ctx, "o", "none"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Verify error = %v, want ErrNotFound", err)
	}
	if _, err := s.Conversation(ctx, "", "none"); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("Conversation(no owner) error = %v, want ErrInvalid", err)
	}
}

// testListCursor pages a listing with ListOptions.After: every page continues where the
// previous one ended, ties of LastActivity are ordered by key, the owner filter holds,
// and a cursor whose conversation has moved since still continues.
func testListCursor(t *testing.T, s Store) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 11 {
		e := msg("m")
		e.CreatedAt = base.Add(time.Duration(i/3) * time.Minute) // ties: three per minute
		owner := []string{"a", "b"}[i%2]
		mustAppend(t, s, ledger.AppendRequest{Owner: owner, ContextID: fmt.Sprintf("c%02d", i), Entries: []ledger.Entry{e}})
	}
	for _, owner := range []string{"", "a", "b"} {
		all, err := s.List(ctx, ledger.ListOptions{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, 4, 20} {
			var got []ledger.Conversation
			var after *ledger.ListCursor
			for range 20 {
				page, err := s.List(ctx, ledger.ListOptions{Owner: owner, Limit: size, After: after})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if len(page) < size {
					break
				}
				after = page[len(page)-1].Cursor()
			}
			if diff := cmp.Diff(all, got); diff != "" {
				t.Errorf("owner %q, pages of %d (-all +paged):\n%s", owner, size, diff)
			}
		}
	}
	all, _ := s.List(ctx, ledger.ListOptions{})
	cur := all[4].Cursor()
	rest, err := s.List(ctx, ledger.ListOptions{After: cur})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[5:], rest); diff != "" {
		t.Errorf("List(after the 5th) (-want +got):\n%s", diff)
	}
	// The 5th conversation moves to the front; the cursor still continues from where it was.
	mustAppend(t, s, ledger.AppendRequest{Owner: all[4].Owner, ContextID: all[4].ContextID, Entries: []ledger.Entry{msg("later")}})
	if rest2, _ := s.List(ctx, ledger.ListOptions{After: cur}); !cmp.Equal(all[5:], rest2) {
		t.Errorf("List(after a cursor whose conversation moved) = %d conversations, want %d", len(rest2), len(all)-5)
	}
	if none, _ := s.List(ctx, ledger.ListOptions{After: &ledger.ListCursor{LastActivity: base.Add(-time.Hour), Key: "v1/"}}); len(none) != 0 {
		t.Errorf("List(after the oldest) = %d conversations, want none", len(none))
	}
}
