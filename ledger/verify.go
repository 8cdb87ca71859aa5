package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/conversations/contextid"
)

// Verify walks the conversation's hash chain from seq 1: every key is the entry's seq and
// the seqs have no gap, every entry names this conversation's contextId and owner and its
// own seq, every PrevHash is the previous entry's Hash ("" for seq 1), every Hash is
// recomputed from the entry, every artifact an entry references is stored and matches its
// digest, the task index holds every entry of a task, points the task to this conversation
// and links it to the task whose first entry came before its own, and the metadata (last
// seq and hash, counters, last task) agrees with the entries and hashes to the bucket's
// key. It reads the whole conversation.
// Errors: a [*ChainError] (wrapping [ErrChainBroken]) naming the first failing seq;
// [ErrNotFound] if the conversation does not exist; [ErrInvalid] for an invalid owner or
// contextId; [ErrClosed] after Close.
func (s *Store) Verify(ctx context.Context, owner, contextID string) error {
	key, err := convKey(owner, contextID)
	if err != nil {
		return err
	}
	return s.view(ctx, func(tx *bolt.Tx) error {
		conv := tx.Bucket([]byte(key))
		if conv == nil {
			return ErrNotFound
		}
		return verifyConv(ctx, tx, key, conv)
	})
}

// VerifyAll verifies every conversation of the current namespace, each in its own read
// transaction, and returns how many it checked. Errors: the [errors.Join] of every
// conversation's [*ChainError]; ctx.Err() if ctx is done between conversations (with the
// ChainErrors found so far); [ErrClosed] after Close.
func (s *Store) VerifyAll(ctx context.Context) (checked int, err error) {
	var keys []string
	err = s.view(ctx, func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if contextid.IsCurrentKey(string(name)) {
				keys = append(keys, string(name))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	var broken []error
	for _, key := range keys {
		err := s.view(ctx, func(tx *bolt.Tx) error {
			conv := tx.Bucket([]byte(key))
			if conv == nil {
				return nil // gone since the listing: nothing is ever deleted, so not expected
			}
			return verifyConv(ctx, tx, key, conv)
		})
		var ce *ChainError
		switch {
		case errors.As(err, &ce):
			broken = append(broken, err)
		case err != nil:
			return checked, errors.Join(append(broken, err)...)
		}
		checked++
	}
	return checked, errors.Join(broken...)
}

// verifyCheckEvery is how many entries verifyConv checks between looks at ctx.
const verifyCheckEvery = 1024

func verifyConv(ctx context.Context, tx *bolt.Tx, key string, conv *bolt.Bucket) error {
	artifacts := tx.Bucket(bucketArtifacts)
	m, err := readMeta(conv)
	if err != nil {
		return &ChainError{Key: key, Reason: err.Error()}
	}
	fail := func(seq uint64, format string, args ...any) error {
		return &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
	if got := contextid.Key(m.Owner, m.ContextID); got != key {
		return fail(0, "metadata (contextId %q, owner %q) hashes to %s, not to the bucket's key", m.ContextID, m.Owner, got)
	}
	taskIndex := tx.Bucket(bucketTasks)
	var (
		want     uint64 = 1
		prev     string
		n        int
		turns    int
		tasks    = map[string]bool{}
		lastTask string // the task whose first entry came last so far
	)
	c := conv.Cursor()
	for k, v := c.Seek(entryPrefix); isEntryKey(k); k, v = c.Next() {
		if n++; n%verifyCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seq, ok := entrySeq(k)
		if !ok {
			return fail(want, "malformed key %x", k)
		}
		if seq != want {
			return fail(want, "seq %d missing (next stored seq is %d)", want, seq)
		}
		var e Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fail(seq, "entry unreadable: %v", err)
		}
		switch {
		case e.Seq != seq:
			return fail(seq, "entry says seq %d", e.Seq)
		case e.ContextID != m.ContextID || e.Owner != m.Owner:
			return fail(seq, "entry belongs to contextId %q owner %q", e.ContextID, e.Owner)
		case e.PrevHash != prev:
			return fail(seq, "prevHash %q, previous entry's hash is %q", e.PrevHash, prev)
		}
		stored := e.Hash
		e.Hash = ""
		canonical, err := json.Marshal(&e)
		if err != nil {
			return fail(seq, "entry cannot be re-encoded: %v", err)
		}
		if h := chainHash(e.PrevHash, canonical); h != stored {
			return fail(seq, "hash %q does not match the entry (recomputed %q)", stored, h)
		}
		if e.Kind == KindUserMessage && e.Visibility == VisibilityModel {
			turns++
		}
		if e.TaskID != "" {
			var head []byte
			if taskIndex != nil {
				head = taskIndex.Get([]byte(e.TaskID))
			}
			owner, before := splitTaskHead(head)
			if owner != key {
				return fail(seq, "task %q: the task index does not point to this conversation", e.TaskID)
			}
			if !hasKey(taskIndex, taskKey(e.TaskID, seq)) {
				return fail(seq, "task %q: entry missing from the task index", e.TaskID)
			}
			if !tasks[e.TaskID] { // the task's first entry
				if before != lastTask {
					return fail(seq, "task %q: the task index says task %q came before it, the entries say %q", e.TaskID, before, lastTask)
				}
				tasks[e.TaskID], lastTask = true, e.TaskID
			}
		}
		for j, p := range e.Parts {
			if p.ArtifactRef == "" {
				continue
			}
			if reason := checkArtifact(artifacts, p.ArtifactRef); reason != "" {
				return fail(seq, "parts[%d]: %s", j, reason)
			}
		}
		prev = stored
		want++
	}
	last := want - 1
	switch {
	case m.LastSeq != last:
		return fail(last+1, "metadata says lastSeq %d, the entries end at %d", m.LastSeq, last)
	case m.LastHash != prev:
		return fail(last, "metadata says lastHash %q, the last entry's hash is %q", m.LastHash, prev)
	case m.Counters.Entries != int(last):
		return fail(0, "metadata counts %d entries, %d are stored", m.Counters.Entries, last)
	case m.Counters.Turns != turns:
		return fail(0, "metadata counts %d turns, the entries hold %d", m.Counters.Turns, turns)
	case m.Counters.Tasks != len(tasks):
		return fail(0, "metadata counts %d tasks, the entries name %d", m.Counters.Tasks, len(tasks))
	case m.LastTaskID != lastTask:
		return fail(0, "metadata says the last task is %q, the entries say %q", m.LastTaskID, lastTask)
	}
	return nil
}

// hasKey reports whether b holds key k (whatever its value, even empty).
func hasKey(b *bolt.Bucket, k []byte) bool {
	got, _ := b.Cursor().Seek(k)
	return bytes.Equal(got, k)
}

// checkArtifact returns why the artifact ref names is missing or corrupt ("" if sound).
func checkArtifact(artifacts *bolt.Bucket, ref string) string {
	digest, ok := parseRef(ref)
	if !ok {
		return fmt.Sprintf("malformed artifactRef %q", ref)
	}
	var v []byte
	if artifacts != nil {
		v = artifacts.Get([]byte(digest))
	}
	if v == nil {
		return fmt.Sprintf("artifact %s missing", ref)
	}
	if sum := sha256.Sum256(v); hex.EncodeToString(sum[:]) != digest {
		return fmt.Sprintf("artifact %s content does not match its digest", ref)
	}
	return ""
}
