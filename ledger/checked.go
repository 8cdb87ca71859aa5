package ledger

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/genmap"
)

// checkedMax is how many conversation keys one generation of the Store's checkedSet holds:
// with two generations, at most 2 × 65,536 keys (18 MiB of heap measured at that cap).
const checkedMax = genmap.DefaultMax

// checkedSet is the conversations checkOnce passed, so that a conversation is checked
// before its first use, not at every use. It is bounded, so that a gateway that meets
// millions of conversations does not keep a key for each (it kept one per conversation
// used since Open, ~230 bytes each, in a sync.Map): two generations of at most Max keys;
// when the newer one is full, the older one is dropped and a new one begun. A key found in
// the older generation moves to the newer one, so a conversation in use stays checked; one
// left unused through a whole generation is checked again at its next use, which costs a
// check and weakens nothing. The zero value is empty with checkedMax keys per generation
// (tests lower Max).
type checkedSet = genmap.Map[struct{}]

// checkOnce runs quickCheck on conversation key in tx the first time the Store uses the
// conversation (a read or an append), so that no damaged entry is served or appended to
// even when no read has met it, without a check of every conversation at Open. (The
// Store's memory of what passed is bounded, checkedSet: a conversation unused for long
// is checked again.)
func (s *Store) checkOnce(tx *bolt.Tx, key string) error {
	if s.checked.Has(key) {
		return nil
	}
	if err := quickCheck(tx, key); err != nil {
		return err
	}
	s.checked.Put(key, struct{}{})
	return nil
}

// quickCheck checks conversation key in tx from its stored bytes alone: its head reads
// and hashes to key, and walking back from it every entry matches its own hash
// (entryHashes) and the link of the one after it (or the head's last hash), down to seq
// 1. It costs a hash of the conversation's bytes, no decoding. A missing conversation
// passes. Errors: a [*ChainError].
func quickCheck(tx *bolt.Tx, key string) error {
	m, lastPos, err := readHead(tx, key)
	switch {
	case err == ErrNotFound:
		return nil
	case err != nil:
		return err
	case contextid.Key(m.Owner, m.ContextID) != key:
		return &ChainError{Key: key, Reason: "head does not hash to the key"}
	}
	l, err := openLog(tx, key, &m, lastPos)
	if err != nil {
		return err
	}
	r := newEntryReader(key, nil)
	defer r.release()
	want := []byte(m.LastHash) // then each entry's prevHash, aliasing the transaction
	err = l.back(m.LastSeq, func(seq uint64, rec logRecord) (bool, error) {
		prev, hash, ok := r.linkHashes(rec.entry)
		switch {
		case !ok:
			fault := entryBytesFault(rec.entry)
			if fault == "" {
				fault = "hash does not match the entry's bytes"
			}
			return false, &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Seq: seq, Reason: fault}
		case !bytes.Equal(hash, want):
			return false, &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Seq: seq,
				Reason: fmt.Sprintf("hash %q, the next entry (or the head) links to %q", hash, want)}
		}
		want = prev
		return true, nil
	})
	if err == nil && len(want) != 0 {
		err = &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Seq: 1, Reason: "the first entry has a prevHash"}
	}
	return err
}
