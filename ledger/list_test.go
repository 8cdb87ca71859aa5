package ledger

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// tieClock returns a Now func that advances one second every third call, so that
// conversations share LastActivity values.
func tieClock() func() time.Time {
	var n int64
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time { n++; return start.Add(time.Duration(n/3) * time.Second) }
}

// listOwners are the owners the List tests write for.
var listOwners = []string{"a", "b"}

// appendRound appends one entry to each of n conversations, conversation i of owner
// i%2: count new ones from next, the rest existing ones picked by r from the first next.
func appendRound(t *testing.T, s *Store, r *rand.Rand, next *int, n, newOnes int) {
	t.Helper()
	for i := range n {
		c := *next
		if i >= newOnes && *next > 0 {
			c = r.IntN(*next)
		} else {
			*next++
		}
		mustAppend(t, s, listOwners[c%2], fmt.Sprintf("c-%d", c), userMsg("x"))
	}
}

// wantListing reads every head of s and returns owner's listing ("": every owner).
func wantListing(t *testing.T, s *Store, owner string) []Conversation {
	t.Helper()
	var out []Conversation
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, key := range headKeys(tx) {
			m, _, err := readHead(tx, key)
			if err != nil {
				return err
			}
			if owner == "" || m.Owner == owner {
				out = append(out, m.conversation(key))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sortConversations(out)
	return out
}

// checkListing compares List (whole, cut at limits, and page by page with the cursor)
// with the listing read from every head, for each owner.
func checkListing(t *testing.T, s *Store, limits ...int) {
	t.Helper()
	ctx := t.Context()
	for _, owner := range append([]string{""}, listOwners...) {
		want := wantListing(t, s, owner)
		got, err := s.List(ctx, ListOptions{Owner: owner})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("List(owner %q) = %d conversations, %v; want %d:\ngot  %v\nwant %v", owner, len(got), err, len(want), got, want)
		}
		for _, limit := range limits {
			var pages []Conversation
			var after *ListCursor
			for {
				page, err := s.List(ctx, ListOptions{Owner: owner, Limit: limit, After: after})
				if err != nil {
					t.Fatal(err)
				}
				if after == nil && !reflect.DeepEqual(page, want[:min(limit, len(want))]) {
					t.Fatalf("List(owner %q, limit %d) = %v, want %v", owner, limit, page, want[:min(limit, len(want))])
				}
				pages = append(pages, page...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].Cursor()
			}
			if !reflect.DeepEqual(pages, want) {
				t.Fatalf("List(owner %q) in pages of %d = %v, want %v", owner, limit, pages, want)
			}
		}
	}
}

// activityIndex returns the keys of the activity index of s.
func activityIndex(t *testing.T, s *Store) [][]byte {
	t.Helper()
	var keys [][]byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketActivity).ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
	})
	return keys
}

// checkIndexInvariant checks that the activity index holds exactly one key per head of
// "v1.heads", with its LastActivity.
func checkIndexInvariant(t *testing.T, s *Store) {
	t.Helper()
	var want [][]byte
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketHeads).ForEach(func(k, v []byte) error {
			m, _, err := decodeHead(v)
			want = append(want, activityKey(m.LastActivity, string(k)))
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, bytes.Compare)
	if got := activityIndex(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("activity index holds %d keys, want %d (one per head of v1.heads)", len(got), len(want))
	}
}

// recentHeads returns how many heads "v1.heads.recent" of s holds.
func recentHeads(s *Store) (n int64) {
	_ = s.db.View(func(tx *bolt.Tx) error { n = countRecent(tx); return nil })
	return n
}

// TestList2_AcrossCheckpoints lists while conversations are new (in
// "v1.heads.recent"), checkpointed (in "v1.heads"), and active again after a checkpoint
// (in both, the index key of the older head), across several checkpoints, with ties.
func TestList2_AcrossCheckpoints(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, Options{NoSync: true, NoGroupCommit: true, Now: tieClock()})
	r := rand.New(rand.NewPCG(1, 2))
	next, checkpoints := 0, 0
	for round := range 8 {
		before := recentHeads(s)
		appendRound(t, s, r, &next, 110, 70)
		if recentHeads(s) < before {
			checkpoints++
		}
		checkIndexInvariant(t, s)
		limits := []int{5, 64}
		if round%4 == 3 {
			limits = append(limits, 1)
		}
		checkListing(t, s, limits...)
	}
	if checkpoints < 2 || recentHeads(s) == 0 {
		t.Fatalf("%d checkpoints, %d recent heads at the end; want at least 2 and some", checkpoints, recentHeads(s))
	}
}

// TestList2_StaleKeys: index keys that do not match their conversation's head (older or
// newer, of conversations in "v1.heads" or in "v1.heads.recent") are never listed, so
// List holds no duplicate and keeps its order.
func TestList2_StaleKeys(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, Options{NoSync: true, NoGroupCommit: true, Now: tieClock()})
	r := rand.New(rand.NewPCG(3, 4))
	next := 0
	appendRound(t, s, r, &next, recentMax+60, recentMax+30)
	if recentHeads(s) == 0 {
		t.Fatal("no recent heads")
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketActivity)
		for i, key := range headKeys(tx) {
			m, _, err := readHead(tx, key)
			if err != nil {
				return err
			}
			shift := time.Duration(1+i%5) * time.Second
			if i%2 == 0 {
				shift = -shift
			}
			if err := idx.Put(activityKey(m.LastActivity.Add(shift), key), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkListing(t, s, 1, 7, 100)
}

// TestList2_OpenAfterCrash copies a file with heads in "v1.heads.recent" (no Close ran)
// and opens the copy: Open checkpoints, the index holds the moved heads, List is the
// writer's.
func TestList2_OpenAfterCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustOpenPath(t, filepath.Join(dir, "l.db"), Options{NoSync: true, NoGroupCommit: true, Now: tieClock()})
	r := rand.New(rand.NewPCG(5, 6))
	next := 0
	appendRound(t, s, r, &next, recentMax+1, recentMax+1) // a checkpoint
	appendRound(t, s, r, &next, 80, 40)
	if recentHeads(s) == 0 {
		t.Fatal("no recent heads")
	}
	checkListing(t, s, 9)
	want := map[string][]Conversation{}
	for _, owner := range append([]string{""}, listOwners...) {
		want[owner] = wantListing(t, s, owner)
	}
	copyFile(t, filepath.Join(dir, "l.db"), filepath.Join(dir, "crashed.db"))

	c := mustOpenPath(t, filepath.Join(dir, "crashed.db"), Options{NoSync: true})
	if n := recentHeads(c); n != 0 || c.recentN.Load() != 0 {
		t.Errorf("after Open: %d recent heads (counted %d), want 0", n, c.recentN.Load())
	}
	checkIndexInvariant(t, c)
	for owner, w := range want {
		if got := wantListing(t, c, owner); !reflect.DeepEqual(got, w) {
			t.Fatalf("heads of owner %q after the crash differ", owner)
		}
	}
	checkListing(t, c, 9)
}

// TestList2_EarlierBuildFile: a file of an earlier build, whose index holds the key of
// every head (those of "v1.heads.recent" too, and not the older "v1.heads" heads of
// those conversations), lists right as it is and after the Open that checkpoints it.
func TestList2_EarlierBuildFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "l.db")
	s := mustOpenPath(t, path, Options{NoSync: true, NoGroupCommit: true, Now: tieClock()})
	r := rand.New(rand.NewPCG(7, 8))
	next := 0
	appendRound(t, s, r, &next, recentMax+1, recentMax+1)
	appendRound(t, s, r, &next, 90, 30)
	err := s.db.Update(func(tx *bolt.Tx) error { // the earlier build's index
		idx, heads := tx.Bucket(bucketActivity), tx.Bucket(bucketHeads)
		return tx.Bucket(bucketRecent).ForEach(func(k, v []byte) error {
			if old, ok := headActivity(heads.Get(k)); ok {
				if err := idx.Delete(activityKey(old, string(k))); err != nil {
					return err
				}
			}
			at, _ := headActivity(v)
			return idx.Put(activityKey(at, string(k)), nil)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	checkListing(t, s, 4, 50)
	copyFile(t, path, filepath.Join(dir, "copy.db"))
	c := mustOpenPath(t, filepath.Join(dir, "copy.db"), Options{NoSync: true})
	if n := recentHeads(c); n != 0 {
		t.Errorf("after Open: %d recent heads, want 0", n)
	}
	checkIndexInvariant(t, c)
	checkListing(t, c, 4, 50)
}

// TestAppend2_LeavesActivityIndex: an append, to an existing conversation or a new one,
// does not write the activity index (its tree's root page stays), and List has it first.
func TestAppend2_LeavesActivityIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "l.db")
	opts := Options{NoSync: true, NoGroupCommit: true, Now: fakeClock()}
	s, err := Open(path, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustAppend(t, s, "local", fmt.Sprintf("c-%d", i), userMsg("x"))
	}
	if err := s.Close(); err != nil { // checkpoints
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, opts)
	root := func() (r any) {
		_ = s.db.View(func(tx *bolt.Tx) error { r = tx.Bucket(bucketActivity).Root(); return nil })
		return r
	}
	rootBefore, keysBefore := root(), activityIndex(t, s)
	if len(keysBefore) != 200 {
		t.Fatalf("activity index holds %d keys, want 200", len(keysBefore))
	}
	for _, id := range []string{"c-7", "new", "c-7"} {
		mustAppend(t, s, "local", id, userMsg("y"))
		if r := root(); r != rootBefore || !reflect.DeepEqual(activityIndex(t, s), keysBefore) {
			t.Fatalf("append to %s wrote the activity index (root %v, was %v)", id, r, rootBefore)
		}
		list, err := s.List(t.Context(), ListOptions{Limit: 1})
		if err != nil || len(list) != 1 || list[0].ContextID != id {
			t.Fatalf("List(limit 1) = %v, %v, want %s", list, err, id)
		}
	}
	checkListing(t, s, 3)
}

// BenchmarkList2_FullRecent: a page of 20 by last activity while "v1.heads.recent" holds
// recentMax heads (List reads them all) and the index 10,000 conversations.
func BenchmarkList2_FullRecent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "l.db")
	makeIdle(b, path, 10_000)
	s := mustOpenPath(b, path, Options{NoSync: true})
	for i := range recentMax {
		mustAppend(b, s, "local", fmt.Sprintf("idle-%d", i*37), userMsg("x"))
	}
	if n := recentHeads(s); n != recentMax {
		b.Fatalf("%d recent heads, want %d", n, recentMax)
	}
	for b.Loop() {
		if page, err := s.List(b.Context(), ListOptions{Limit: 20}); err != nil || len(page) != 20 {
			b.Fatalf("List = %d, %v", len(page), err)
		}
	}
}
