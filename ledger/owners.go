package ledger

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// The owners list of the file (layout layoutOwners) names every owner that has a
// conversation in it:
//
//	"v1.owners"/
//	    owner → empty
//
// A conversation's key is derived from its owner and contextId (D-2), so with the owners
// known, the conversations opened under one contextId are found by deriving one key per
// owner and reading those heads: ConversationsByID costs one head read per owner (the
// peers of a configuration, "local", the "out:" owners of outbound sends), never a scan
// of the conversations. The list is in the file, so an operator reading a data dir
// offline, or after a peer left the config, finds every conversation.
//
// It replaces, for the conversations it holds, the by-contextId index (byid.go), whose
// key (the hash of the contextId) put every new conversation at a random place of a
// bucket of one key per conversation: each commit that opened conversations rewrote
// about one 16 KiB leaf per new conversation, half the pages of a commit of 25 requests
// that each open one (measured: 42 pages per commit, 21 without the index, with 50,000
// conversations in the file). The commit that opens a conversation of an owner already
// listed writes nothing here; the first conversation of a new owner adds one key to a
// bucket of a few keys.
//
// A file written before the list (layout layoutFormat2) keeps its by-contextId index:
// Open gives it an empty owners list and layout layoutOwners in place, and
// ConversationsByID reads both, so its earlier conversations are found through the index
// and the later ones through their owner.
var bucketOwners = []byte("v1.owners")

// layoutOwners is the task index's bucket sequence of a file with the owners list (a new
// file's); layoutFormat2 is that of one written before it.
const layoutOwners = 4

// registerOwner lists owner, in the transaction that opens one of its conversations, if
// it is not listed yet; recorded in r (nil: not).
func registerOwner(tx *bolt.Tx, r *redo, owner string) error {
	b := wb(tx, r, bucketOwners)
	if b.Bucket == nil {
		return fmt.Errorf("ledger: bucket %s missing", bucketOwners)
	}
	if hasKey(b.Bucket, []byte(owner)) {
		return nil
	}
	return b.Put([]byte(owner), nil)
}

// ownerListed reports whether owner is in tx's owners list.
func ownerListed(tx *bolt.Tx, owner string) bool {
	b := tx.Bucket(bucketOwners)
	return b != nil && hasKey(b, []byte(owner))
}

// keysByOwners returns the keys of the conversations opened under contextID by the
// listed owners, in owner order: one head lookup per owner.
func keysByOwners(tx *bolt.Tx, contextID string) []string {
	b := tx.Bucket(bucketOwners)
	if b == nil {
		return nil
	}
	var keys []string
	_ = b.ForEach(func(owner, _ []byte) error {
		if key := contextid.Key(string(owner), contextID); headBytes(tx, key) != nil {
			keys = append(keys, key)
		}
		return nil
	})
	return keys
}
