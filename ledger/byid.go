package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// The by-contextId index finds every conversation opened under one contextId, whoever
// owns it, without reading the other conversations:
//
//	"v1.byid"/
//	    sha256(contextId) ‖ conversation key   → empty
//
// The raw contextId is never part of a key (D-1): its hash is, fixed-length, so that the
// keys of one contextId sort together and a prefix scan lists its conversations.
//
// The file lists its owners instead (owners.go), which finds the conversations of a
// contextId by probing the keys derived from each owner, offline too, and spares each new
// conversation a write at a random place of this index. The index holds only the
// conversations opened before the file had the list (layout layoutFormat2, and format 1
// before it, which indexed every conversation when it created it); it is no longer
// written, and ConversationsByID reads both. A file without it gets it built at Open from
// the heads (setUpByID).
var bucketByID = []byte("v1.byid")

// byIDPrefix returns the index prefix of contextID: its SHA-256.
func byIDPrefix(contextID string) []byte {
	h := sha256.Sum256([]byte(contextID))
	return h[:]
}

// byIDKey returns the index key of the conversation at convKey opened under contextID.
func byIDKey(contextID, convKey string) []byte {
	return append(byIDPrefix(contextID), convKey...)
}

// setUpByID creates the by-contextId index if it is missing and fills it from the heads
// (each names its contextId). A conversation whose head does not decode or does not hash
// to its key is left out, as List leaves it out.
func setUpByID(tx *bolt.Tx) error {
	if tx.Bucket(bucketByID) != nil {
		return nil
	}
	idx, err := tx.CreateBucket(bucketByID)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketByID, err)
	}
	for _, key := range headKeys(tx) {
		m, _, err := readHead(tx, key)
		if err != nil || contextid.Key(m.Owner, m.ContextID) != key {
			continue
		}
		if err := idx.Put(byIDKey(m.ContextID, key), nil); err != nil {
			return err
		}
	}
	return nil
}

// ConversationsByID returns every conversation opened under contextID, whatever its owner,
// ordered by owner. It reads the by-contextId index, the head of contextID's conversation
// for each listed owner (owners.go), and the heads of those conversations only, never the
// others. No conversation is not an error (an empty
// slice). Errors: [ErrInvalid] (a [*FieldError] on "contextId") for an invalid contextId; a
// [ChainError] for a listed conversation whose metadata is unreadable or names another
// contextId; [ErrClosed] after Close.
func (s *Store) ConversationsByID(ctx context.Context, contextID string) ([]Conversation, error) {
	if err := contextid.Validate(contextID); err != nil {
		return nil, contextIDError(err)
	}
	var out []Conversation
	err := s.view(ctx, func(tx *bolt.Tx) error {
		keys, err := keysByID(tx, contextID)
		if err != nil {
			return err
		}
		for _, key := range keys {
			m, err := openConv(tx, key)
			if err != nil {
				return err
			}
			if m.ContextID != contextID {
				return &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner,
					Reason: fmt.Sprintf("the by-contextId index lists it under another contextId (%q)", contextID)}
			}
			out = append(out, m.conversation(key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Conversation) int { return strings.Compare(a.Owner, b.Owner) })
	return out, nil
}

// keysByID returns the keys of the conversations opened under contextID: those the
// by-contextId index lists and those of the listed owners, each once.
func keysByID(tx *bolt.Tx, contextID string) ([]string, error) {
	idx := tx.Bucket(bucketByID)
	if idx == nil {
		return nil, fmt.Errorf("ledger: bucket %s missing", bucketByID)
	}
	var keys []string
	prefix := byIDPrefix(contextID)
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, string(k[len(prefix):]))
	}
	keys = append(keys, keysByOwners(tx, contextID)...)
	slices.Sort(keys)
	return slices.Compact(keys), nil
}
