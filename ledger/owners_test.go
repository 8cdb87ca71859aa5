package ledger

import (
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// bucketKeys returns the keys of top-level bucket name of the closed ledger file at path.
func bucketKeys(t *testing.T, path string, name []byte) []string {
	t.Helper()
	var keys []string
	editFile(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(name)
		if b == nil {
			t.Fatalf("bucket %s missing", name)
		}
		return b.ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	return keys
}

// byIDOwners returns the owners of ConversationsByID(contextID), in its order.
func byIDOwners(t *testing.T, s *Store, contextID string) []string {
	t.Helper()
	convs, err := s.ConversationsByID(t.Context(), contextID)
	if err != nil {
		t.Fatalf("ConversationsByID(%q): %v", contextID, err)
	}
	var owners []string
	for _, c := range convs {
		if c.ContextID != contextID {
			t.Errorf("ConversationsByID(%q) returned a conversation of %q", contextID, c.ContextID)
		}
		owners = append(owners, c.Owner)
	}
	return owners
}

// TestOwners_NewConversationsWriteNoIndexKey: in a format-2 file, opening a conversation
// lists its owner once and writes no by-contextId index key; ConversationsByID finds every
// conversation of a contextId through the owners, and nothing of another contextId.
func TestOwners_NewConversationsWriteNoIndexKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := mustOpenPath(t, path, Options{})
	for _, owner := range []string{"q", "p", "local"} {
		for _, id := range []string{"x", "y", "tenant/a"} {
			mustAppend(t, s, owner, id, userMsg(owner+" "+id))
		}
	}
	mustAppend(t, s, "p", "tenanta", userMsg("p tenanta"))
	if got, want := byIDOwners(t, s, "x"), []string{"local", "p", "q"}; !slices.Equal(got, want) {
		t.Errorf("ConversationsByID(x) owners = %v, want %v", got, want)
	}
	if got, want := byIDOwners(t, s, "tenanta"), []string{"p"}; !slices.Equal(got, want) {
		t.Errorf("ConversationsByID(tenanta) owners = %v, want %v", got, want)
	}
	if got := byIDOwners(t, s, "nobody"); len(got) != 0 {
		t.Errorf("ConversationsByID(nobody) owners = %v, want none", got)
	}
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 10 {
		t.Errorf("VerifyAll = %d, %v; want 10, nil", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := bucketKeys(t, path, bucketOwners), []string{"local", "p", "q"}; !slices.Equal(got, want) {
		t.Errorf("owners list = %v, want %v", got, want)
	}
	if got := bucketKeys(t, path, bucketByID); len(got) != 0 {
		t.Errorf("by-contextId index has %d keys, want none in a file with the owners list", len(got))
	}
}

// TestOwners_FileWrittenBeforeTheList: a format-2 file of layout layoutFormat2 (by-contextId
// index, no owners list) opens with an empty owners list and layout layoutOwners; its
// earlier conversations are found through the index, the later ones through their owner,
// each once, and VerifyAll passes.
func TestOwners_FileWrittenBeforeTheList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := mustOpenPath(t, path, Options{})
	mustAppend(t, s, "p", "x", userMsg("p x"))
	mustAppend(t, s, "q", "x", userMsg("q x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// As the build before the owners list left it.
	editFile(t, path, func(tx *bolt.Tx) error {
		for _, owner := range []string{"p", "q"} {
			if err := tx.Bucket(bucketByID).Put(byIDKey("x", contextid.Key(owner, "x")), nil); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket(bucketOwners); err != nil {
			return err
		}
		return tx.Bucket(bucketTasks).SetSequence(layoutFormat2)
	})

	s = mustOpenPath(t, path, Options{})
	if v := layoutOf(t, s); v != layoutOwners {
		t.Fatalf("layout after Open = %d, want %d (the owners list)", v, layoutOwners)
	}
	if got, want := byIDOwners(t, s, "x"), []string{"p", "q"}; !slices.Equal(got, want) {
		t.Errorf("ConversationsByID(x) in the earlier file = %v, want %v", got, want)
	}
	mustAppend(t, s, "r", "x", userMsg("r x"))   // a new owner
	mustAppend(t, s, "p", "y", userMsg("p y"))   // p listed now: its x is found both ways
	mustAppend(t, s, "q", "x", userMsg("again")) // an earlier conversation: q stays unlisted
	if got, want := byIDOwners(t, s, "x"), []string{"p", "q", "r"}; !slices.Equal(got, want) {
		t.Errorf("ConversationsByID(x) = %v, want %v", got, want)
	}
	if n, err := s.VerifyAll(t.Context()); err != nil || n != 4 {
		t.Errorf("VerifyAll = %d, %v; want 4, nil", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := bucketKeys(t, path, bucketOwners), []string{"p", "r"}; !slices.Equal(got, want) {
		t.Errorf("owners list = %v, want %v", got, want)
	}
	editFile(t, path, func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketTasks).Sequence(); v != layoutOwners {
			t.Errorf("layout after Open = %d, want %d", v, layoutOwners)
		}
		return nil
	})
}

// layoutOf returns the layout of s's file: its task index's bucket sequence.
func layoutOf(t *testing.T, s *Store) uint64 {
	t.Helper()
	var v uint64
	if err := s.db.View(func(tx *bolt.Tx) error { v = tx.Bucket(bucketTasks).Sequence(); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}
