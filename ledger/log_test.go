package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// format2Opts is testOpts (the name the log's tests have always used).
var format2Opts = Options{NoSync: true}

// logPos returns the log position of entry seq of conversation key in tx.
func logPos(t *testing.T, tx *bolt.Tx, key string, seq uint64) uint64 {
	t.Helper()
	m, last, err := readHead(tx, key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := openLog(tx, key, &m, last)
	if err != nil {
		t.Fatal(err)
	}
	pos, err := l.seek(seq)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// TestLog_UpgradedReadsEqual appends the same interleaved requests to a store and to a
// format-1 file (writeFormat1), which Open upgrades, and compares every read of the two:
// Range and LastBefore at every bound (across the sparse index's seqs), Last with a
// filter, TaskEntries, TaskIDs, List, Conversation, ConversationsByID.
func TestLog_UpgradedReadsEqual(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := func() func() time.Time {
		start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		n := 0
		return func() time.Time { n++; return start.Add(time.Duration(n/3) * time.Second) } // ties
	}
	opts := func() Options { return Options{NoSync: true, NoGroupCommit: true, Now: clock(), LargePartBytes: 64} }
	ids := []string{"a", "b", "c", "d"}
	fill := func(s *Store) {
		for i := range 150 {
			id := ids[i%len(ids)]
			if i%7 == 0 {
				id = "a"
			}
			es := numbered(fmt.Sprintf("%s%d", id, i), 1+i%3)
			es[0].TaskID = fmt.Sprintf("task-%s-%d", id, i/10)
			if i%11 == 0 {
				es[0].Parts[0].Text += string(bytes.Repeat([]byte("L"), 100)) // an artifact
			}
			for j := range es {
				es[j].ID = fmt.Sprintf("id-%d-%d", i, j)
				es[j].CreatedAt = time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
			}
			mustAppend(t, s, "local", id, es...)
		}
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeFormat1(t, path, opts(), fill)
	s1 := mustOpenPath(t, path, opts()) // upgrades the format-1 file
	s2 := mustOpen(t, opts())
	fill(s2)
	same := func(what string, f func(s *Store) (any, error)) {
		t.Helper()
		a, errA := f(s1)
		b, errB := f(s2)
		if !reflect.DeepEqual(a, b) || (errA == nil) != (errB == nil) {
			t.Fatalf("%s: upgraded = %v, %v; appended = %v, %v", what, a, errA, b, errB)
		}
	}
	c, _ := s2.Conversation(ctx, "local", "a")
	if c.Entries < 2*seqIndexEvery {
		t.Fatalf("conversation a has %d entries, want more than %d", c.Entries, 2*seqIndexEvery)
	}
	for _, id := range ids {
		same("Conversation "+id, func(s *Store) (any, error) { return s.Conversation(ctx, "local", id) })
		same("TaskIDs "+id, func(s *Store) (any, error) { return s.TaskIDs(ctx, "local", id) })
	}
	for after := uint64(0); after <= uint64(c.Entries)+1; after++ {
		for _, limit := range []int{0, 1, 5, 40} {
			same(fmt.Sprintf("Range(%d, %d)", after, limit), func(s *Store) (any, error) { return s.Range(ctx, "local", "a", after, limit) })
		}
		same(fmt.Sprintf("LastBefore(%d)", after), func(s *Store) (any, error) { return s.LastBefore(ctx, "local", "a", after, 7, nil) })
	}
	keep := func(e *Entry) bool { return e.TaskID == "task-a-3" }
	same("Last filtered", func(s *Store) (any, error) { return s.Last(ctx, "local", "a", 3, keep) })
	same("Last 0", func(s *Store) (any, error) { return s.Last(ctx, "local", "a", 0, nil) })
	for i := range 15 {
		task := fmt.Sprintf("task-b-%d", i)
		same("TaskEntries "+task, func(s *Store) (any, error) {
			c, es, err := s.TaskEntries(ctx, task)
			return []any{c, es}, err
		})
	}
	for _, limit := range []int{0, 1, 2, 3, 4} {
		same(fmt.Sprintf("List(%d)", limit), func(s *Store) (any, error) { return s.List(ctx, ListOptions{Limit: limit}) })
	}
	same("ConversationsByID", func(s *Store) (any, error) { return s.ConversationsByID(ctx, "c") })
	for i, s := range []*Store{s1, s2} {
		if n, err := s.VerifyAll(ctx); n != 4 || err != nil {
			t.Errorf("store %d: VerifyAll() = %d, %v, want 4, nil", i+1, n, err)
		}
	}
}

// TestLog2_Tampering checks that Verify finds every kind of edit of a format-2 file.
func TestLog2_Tampering(t *testing.T) {
	t.Parallel()
	key := contextid.Key("local", "c")
	entry := func(tx *bolt.Tx, seq uint64) (*bolt.Bucket, []byte) {
		return tx.Bucket(bucketLog), encodeSeq(logPos(t, tx, key, seq))
	}
	replace := func(old, new string) func(t *testing.T, tx *bolt.Tx) {
		return func(t *testing.T, tx *bolt.Tx) {
			b, k := entry(tx, 3)
			if err := b.Put(k, []byte(replaceOnce(t, string(b.Get(k)), old, new))); err != nil {
				t.Fatal(err)
			}
		}
	}
	head := func(f func(m *metaRecord)) func(t *testing.T, tx *bolt.Tx) {
		return func(t *testing.T, tx *bolt.Tx) {
			m, pos, err := readHead(tx, key)
			if err != nil {
				t.Fatal(err)
			}
			f(&m)
			if err := tx.Bucket(bucketRecent).Put([]byte(key), appendHead(nil, &m, pos)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		tamper  func(t *testing.T, tx *bolt.Tx)
		wantSeq uint64
	}{
		{"edited text", replace(`"text":"m-3"`, `"text":"m-X"`), 3},
		{"removed entry", func(t *testing.T, tx *bolt.Tx) {
			b, k := entry(tx, 3)
			if err := b.Delete(k); err != nil {
				t.Fatal(err)
			}
		}, 3},
		{"swapped entries", func(t *testing.T, tx *bolt.Tx) {
			b, k2 := entry(tx, 2)
			_, k3 := entry(tx, 3)
			a, c := bytes.Clone(b.Get(k2)), bytes.Clone(b.Get(k3))
			if b.Put(k2, c) != nil || b.Put(k3, a) != nil {
				t.Fatal("put failed")
			}
		}, 3},
		{"garbage value", func(t *testing.T, tx *bolt.Tx) {
			b, k := entry(tx, 3)
			if err := b.Put(k, []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}, 3},
		{"entry of another conversation", func(t *testing.T, tx *bolt.Tx) {
			b, k := entry(tx, 2)
			v := b.Get(encodeSeq(logPos(t, tx, contextid.Key("local", "other"), 2)))
			rec, _ := decodeLogRecord(v)
			if err := b.Put(k, appendLogRecord(nil, convHash(key), 2, logPos(t, tx, key, 1), rec.entry)); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"truncated tail", func(t *testing.T, tx *bolt.Tx) {
			b, k := entry(tx, 5)
			if err := b.Delete(k); err != nil {
				t.Fatal(err)
			}
		}, 5},
		{"task index entry removed", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Delete(taskKey("t", 4)); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"task index points elsewhere", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Put(taskKey("t", 4), encodeSeq(logPos(t, tx, key, 3))); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"task moved to another conversation", func(t *testing.T, tx *bolt.Tx) {
			if err := tx.Bucket(bucketTasks).Put([]byte("t"), []byte(contextid.Key("local", "other"))); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"head last task", head(func(m *metaRecord) { m.LastTaskID = "" }), 0},
		{"head counters", head(func(m *metaRecord) { m.Counters.Turns = 4 }), 0},
		{"head last hash", head(func(m *metaRecord) { m.LastHash = "00" }), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "l.db")
			s, err := Open(path, format2Opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			entries := numbered("m", 5)
			entries[3].TaskID = "t"
			mustAppend(t, s, "local", "c", entries[:2]...)
			mustAppend(t, s, "local", "other", numbered("o", 2)...)
			mustAppend(t, s, "local", "c", entries[2:]...)
			if err := s.Verify(t.Context(), "local", "c"); err != nil {
				t.Fatalf("Verify() before tampering error = %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tamperFile(t, path, func(tx *bolt.Tx) { tt.tamper(t, tx) })

			s = mustOpenPath(t, path, format2Opts)
			err = s.Verify(t.Context(), "local", "c")
			var ce *ChainError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChainBroken) {
				t.Fatalf("Verify() error = %v, want a *ChainError wrapping ErrChainBroken", err)
			}
			if ce.Seq != tt.wantSeq || ce.ContextID != "c" || ce.Owner != "local" || ce.Key != key {
				t.Errorf("ChainError = %+v, want seq %d of contextId c owner local", ce, tt.wantSeq)
			}
			n, err := s.VerifyAll(t.Context())
			if n != 2 || !errors.Is(err, ErrChainBroken) {
				t.Errorf("VerifyAll() = %d, %v, want 2 checked and ErrChainBroken", n, err)
			}
			if err := s.Verify(t.Context(), "local", "other"); err != nil {
				t.Errorf("Verify(other) error = %v, want nil", err)
			}
		})
	}
}

// tamperFile runs f in a write transaction on the closed ledger file at path.
func tamperFile(t *testing.T, path string, f func(tx *bolt.Tx)) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { f(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLog2_SparseIndexTampered checks that Verify checks the sparse index, and that a
// conversation whose first use finds a damaged entry is quarantined.
func TestLog2_SparseIndexTampered(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(path, format2Opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "local", "c", numbered("m", 3*seqIndexEvery)...)
	mustAppend(t, s, "local", "d", numbered("d", 3)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	key := contextid.Key("local", "c")
	tamperFile(t, path, func(tx *bolt.Tx) {
		if err := tx.Bucket(bucketSeqIdx).Put(seqIdxKey(convHash(key), 2*seqIndexEvery), encodeSeq(1)); err != nil {
			t.Fatal(err)
		}
		pos := logPos(t, tx, contextid.Key("local", "d"), 2)
		v := bytes.Clone(tx.Bucket(bucketLog).Get(encodeSeq(pos)))
		v[len(v)-80] ^= 1 // inside the hash
		if err := tx.Bucket(bucketLog).Put(encodeSeq(pos), v); err != nil {
			t.Fatal(err)
		}
	})
	s = mustOpenPath(t, path, format2Opts)
	var ce *ChainError
	if err := s.Verify(t.Context(), "local", "c"); !errors.As(err, &ce) || ce.Seq != 2*seqIndexEvery {
		t.Errorf("Verify(c) error = %v, want a ChainError at seq %d", err, 2*seqIndexEvery)
	}
	if _, err := s.Last(t.Context(), "local", "d", 1, nil); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Last(d) error = %v, want ErrQuarantined (its first use checks its bytes)", err)
	}
}

// TestLog2_Checkpoint writes more heads than "v1.heads.recent" keeps: a commit moves them
// to "v1.heads", and reads, appends and List see every conversation before and after a
// reopen.
func TestLog2_Checkpoint(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "l.db")
	opts := Options{NoSync: true, Now: fakeClock()}
	s := mustOpenPath(t, path, opts)
	n := recentMax + recentMax/2
	for i := range n {
		mustAppend(t, s, "local", fmt.Sprintf("c-%d", i), userMsg("one"))
	}
	mustAppend(t, s, "local", "c-0", userMsg("two"))
	count := func(s *Store) (recent, heads int) {
		_ = s.db.View(func(tx *bolt.Tx) error {
			recent, heads = tx.Bucket(bucketRecent).Stats().KeyN, tx.Bucket(bucketHeads).Stats().KeyN
			return nil
		})
		return recent, heads
	}
	if recent, heads := count(s); recent > recentMax || heads < recentMax {
		t.Errorf("recent %d heads %d, want at most %d recent after a checkpoint", recent, heads, recentMax)
	}
	check := func(s *Store) {
		t.Helper()
		list, err := s.List(ctx, ListOptions{})
		if err != nil || len(list) != n || list[0].ContextID != "c-0" || list[0].Entries != 2 {
			t.Fatalf("List() = %d conversations (first %+v), %v; want %d, c-0 first with 2 entries", len(list), list[0], err, n)
		}
		if got, err := s.Last(ctx, "local", "c-0", 5, nil); err != nil || len(got) != 2 {
			t.Fatalf("Last(c-0) = %v, %v", got, err)
		}
		if checked, err := s.VerifyAll(ctx); checked != n || err != nil {
			t.Fatalf("VerifyAll() = %d, %v, want %d, nil", checked, err, n)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, opts)
	check(s)
}

// TestLog2_ListPages checks List with a limit against the whole listing, with ties of
// LastActivity, an owner filter, and conversations moving to the front.
func TestLog2_ListPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var tick int
	now := func() time.Time {
		tick++
		return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(tick/4) * time.Second)
	}
	s := mustOpen(t, Options{NoSync: true, NoGroupCommit: true, Now: now})
	for i := range 40 {
		owner := []string{"a", "b"}[i%2]
		mustAppend(t, s, owner, fmt.Sprintf("c-%d", i%13), userMsg("x"))
	}
	for _, owner := range []string{"", "a", "b"} {
		all, err := s.List(ctx, ListOptions{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		for limit := 1; limit <= len(all)+1; limit++ {
			got, err := s.List(ctx, ListOptions{Owner: owner, Limit: limit})
			if err != nil || !reflect.DeepEqual(got, all[:min(limit, len(all))]) {
				t.Fatalf("List(owner %q, limit %d) = %v, %v, want the first %d of %v", owner, limit, got, err, limit, all)
			}
		}
	}
}

// TestLog2_RefusedRequestFailsAlone: a conversation whose head does not decode refuses
// its append; the other appends of the batch commit.
func TestLog2_RefusedRequestFailsAlone(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, format2Opts)
	mustAppend(t, s, "local", "d", userMsg("x"))
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecent).Put([]byte(contextid.Key("local", "d")), []byte{headVersion, 1})
	}); err != nil {
		t.Fatal(err)
	}
	s.checked = checkedSet{} // forget the check: the next use checks again
	if _, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "d", Entries: []Entry{userMsg("y")}}); !errors.Is(err, ErrChainBroken) {
		t.Errorf("Append(d) error = %v, want ErrChainBroken", err)
	}
	mustAppend(t, s, "local", "e", userMsg("z"))
}
