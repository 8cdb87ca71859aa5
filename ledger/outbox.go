package ledger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The push indexes of the bbolt Store (push.go), written in the transaction of the
// Append that stores the entries they point to:
//
//	"v1.push.configs"/
//	    owner ‖ 0x00 ‖ taskId ‖ 0x00 ‖ configId   → conversation key ‖ seq: the live config's entry
//	"v1.push.pending"/
//	    conversation key ‖ seq                     → pendingState (JSON): a pending outbox entry
//
// Owners and task ids hold no control characters, so a peer's configs, and a task's,
// sort together under a prefix. Both are derived from the entries: a file without them
// (written before push existed) gets them empty at Open, which is exact since such a file
// holds no push entries.
var (
	bucketPushConfigs = []byte("v1.push.configs")
	bucketPushPending = []byte("v1.push.pending")
)

// emptyPushConfigs reports whether the push config index of the file is empty.
func emptyPushConfigs(db *bolt.DB) bool {
	empty := false
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketPushConfigs); b != nil {
			k, _ := b.Cursor().First()
			empty = k == nil
		}
		return nil
	})
	return empty
}

// setUpPush creates the push indexes if they are missing.
func setUpPush(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketPushConfigs, bucketPushPending} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

func pushConfigPrefix(owner, taskID string) []byte {
	b := append([]byte(owner), 0)
	if taskID != "" {
		b = append(append(b, taskID...), 0)
	}
	return b
}

func pushPointer(key string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(key), seq)
}

// splitPointer is the inverse of pushPointer.
func splitPointer(b []byte) (key string, seq uint64, ok bool) {
	if len(b) <= 8 {
		return "", 0, false
	}
	return string(b[:len(b)-8]), binary.BigEndian.Uint64(b[len(b)-8:]), true
}

// putPush applies the push index operations of the stored entries (see [PushOps]).
func putPush(tx *bolt.Tx, r *redo, key string, entries []Entry) error {
	ops := PushOps(key, entries)
	if len(ops) == 0 {
		return nil
	}
	configs, pending := wb(tx, r, bucketPushConfigs), wb(tx, r, bucketPushPending)
	if configs.Bucket == nil || pending.Bucket == nil {
		return fmt.Errorf("ledger: push index buckets missing")
	}
	for _, op := range ops {
		if err := applyPushOp(configs, pending, &op); err != nil {
			return fmt.Errorf("push index: %w", err)
		}
	}
	return nil
}

func applyPushOp(configs, pending wbucket, op *PushOp) error {
	ptr := pushPointer(op.ConvKey, op.Seq)
	switch op.Op {
	case PushConfigPut:
		return configs.Put(append(pushConfigPrefix(op.Owner, op.TaskID), op.ConfigID...), ptr)
	case PushConfigDelete:
		return configs.Delete(append(pushConfigPrefix(op.Owner, op.TaskID), op.ConfigID...))
	case PushOutboxAdd:
		v, _ := json.Marshal(pendingState{TaskID: op.TaskID, Created: op.Created})
		return pending.Put(ptr, v)
	case PushAttemptRetry:
		old := pending.Get(ptr)
		if old == nil {
			return nil // already final: a late attempt changes nothing
		}
		var st pendingState
		if err := json.Unmarshal(old, &st); err != nil {
			return err
		}
		st.Attempts, st.NextAt = op.Attempts, op.NextAt
		v, _ := json.Marshal(st)
		return pending.Put(ptr, v)
	case PushAttemptFinal:
		return pending.Delete(ptr)
	}
	return nil
}

// salvagePush rebuilds, in a salvage's copy, the push indexes of the conversation at key
// from its copied entries (stored, from seq 1), so that its configs and pending deliveries
// survive the salvage.
func salvagePush(tx *bolt.Tx, key string, stored [][]byte) error {
	var entries []Entry
	for _, v := range stored {
		if !bytes.Contains(v, []byte(`"kind":"PUSH_`)) {
			continue
		}
		var e Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("push entry of %s: %w", key, err)
		}
		entries = append(entries, e)
	}
	return putPush(tx, nil, key, entries)
}

// readPointed reads the entry a push index points to: the entry at seq of its
// conversation, found through the conversation's sparse seq index (at most seqIndexEvery
// records read).
func readPointed(tx *bolt.Tx, ptr []byte) (Entry, error) {
	key, seq, ok := splitPointer(ptr)
	if !ok {
		return Entry{}, fmt.Errorf("ledger: push index: bad pointer %x", ptr)
	}
	if seq == 0 {
		return Entry{}, &ChainError{Key: key, Reason: "a push index names entry 0"}
	}
	es, err := rangeEntries(tx, key, seq-1, 1)
	if errors.Is(err, ErrNotFound) || (err == nil && len(es) == 0) {
		return Entry{}, &ChainError{Key: key, Reason: fmt.Sprintf("a push index names entry %d, which does not exist", seq)}
	}
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// PushConfigs returns the PUSH_CONFIG entries of owner's task taskID that are live (set
// and not deleted since), ordered by config id. It reads the config index and those
// entries only. Errors: [ErrClosed] after Close; a [*ChainError] for an index that points
// to no entry.
func (s *Store) PushConfigs(ctx context.Context, owner, taskID string) ([]Entry, error) {
	if s.noPushConfigs.Load() {
		// No config was ever stored in this file: answer without a read transaction (the
		// turn asks at each of its appends).
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.isClosed() {
			return nil, ErrClosed
		}
		return nil, nil
	}
	var out []Entry
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPushConfigs).Cursor()
		prefix := pushConfigPrefix(owner, taskID)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			e, err := readPointed(tx, v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// PushConfigCount returns how many live push configs owner has, over all its tasks.
func (s *Store) PushConfigCount(ctx context.Context, owner string) (int, error) {
	n := 0
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketPushConfigs).Cursor()
		prefix := pushConfigPrefix(owner, "")
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

// PendingPush returns up to limit (≤ 0: all) pending outbox entries, oldest first (per
// task in seq order), with their delivery state. It reads the pending index and those
// entries only: the work is proportional to what is pending.
func (s *Store) PendingPush(ctx context.Context, limit int) ([]PendingPush, error) {
	type item struct {
		ptr []byte
		st  pendingState
	}
	var out []PendingPush
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var items []item
		err := tx.Bucket(bucketPushPending).ForEach(func(k, v []byte) error {
			it := item{ptr: bytes.Clone(k)}
			if err := json.Unmarshal(v, &it.st); err != nil {
				return fmt.Errorf("ledger: push pending index: %w", err)
			}
			items = append(items, it)
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(items, func(a, b item) int {
			return cmp.Or(a.st.Created.Compare(b.st.Created), cmp.Compare(a.st.TaskID, b.st.TaskID), bytes.Compare(a.ptr, b.ptr))
		})
		if limit > 0 && len(items) > limit {
			items = items[:limit]
		}
		for _, it := range items {
			e, err := readPointed(tx, it.ptr)
			if err != nil {
				return err
			}
			out = append(out, PendingPush{Entry: e, Attempts: it.st.Attempts, NextAt: it.st.NextAt})
		}
		return nil
	})
	return out, err
}
