package ledger

import (
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestCheckedSet: the set holds at most two generations of max keys; a key in use stays
// in it through any number of generations; one unused for a whole generation is
// forgotten.
func TestCheckedSet(t *testing.T) {
	t.Parallel()
	c := checkedSet{Max: 4}
	if c.Has("a") {
		t.Fatal("an empty set has a")
	}
	c.Put("a", struct{}{})
	for i := range 100 {
		c.Put(fmt.Sprint("k", i), struct{}{})
		if !c.Has("a") { // in use: moved to the newer generation whenever it was in the older
			t.Fatalf("after %d other keys the set forgot a, which is used after each", i+1)
		}
		if n := c.Len(); n > 2*4 {
			t.Fatalf("after %d keys the set holds %d; want at most 8", i+2, n)
		}
	}
	if c.Has("k0") {
		t.Error("k0, unused through many generations, is still remembered")
	}
	if !c.Has("k99") {
		t.Error("the last key added is not remembered")
	}
	var z checkedSet // the zero value: checkedMax per generation
	for i := range checkedMax + 10 {
		z.Put(fmt.Sprint(i), struct{}{})
	}
	if n := z.Len(); n != checkedMax+10 { // one full generation, then a second
		t.Errorf("the zero value holds %d keys; want %d", n, checkedMax+10)
	}
	if !z.Has("0") {
		t.Error("the zero value forgot its first key within two generations")
	}
}

// TestStoreForgetsUnusedChecks: a Store that meets many conversations keeps a bounded
// number of checked keys, and checks a conversation it forgot again at its next use: an
// entry damaged after the first check is found then.
func TestStoreForgetsUnusedChecks(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, format2Opts)
	s.checked = checkedSet{Max: 8}
	mustAppend(t, s, "local", "first", userMsg("checked, then forgotten"))
	for i := range 40 {
		mustAppend(t, s, "local", fmt.Sprint("conv-", i), userMsg("x"))
		if n := s.checked.Len(); n > 16 {
			t.Fatalf("after %d conversations the Store remembers %d checks; want at most 16", i+2, n)
		}
	}
	// Edit the forgotten conversation's stored entry (its head stays good): only the check
	// of its entries finds that.
	key := contextid.Key("local", "first")
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b, k := tx.Bucket(bucketLog), encodeSeq(logPos(t, tx, key, 1))
		return b.Put(k, []byte(replaceOnce(t, string(b.Get(k)), "then forgotten", "then EDITED")))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), AppendRequest{Owner: "local", ContextID: "first", Entries: []Entry{userMsg("y")}}); !errors.Is(err, ErrChainBroken) {
		t.Errorf("Append to the forgotten, now damaged conversation = %v; want ErrChainBroken (checked again)", err)
	}
}
