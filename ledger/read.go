package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// Conversation summarizes one conversation from its metadata (no entry is read).
type Conversation struct {
	Key          string // storage key, contextid.Key(Owner, ContextID)
	ContextID    string // the original contextId, exactly as the peer sent it
	Owner        string
	CreatedAt    time.Time
	LastActivity time.Time
	LastSeq      uint64
	Epoch        uint64
	Entries      int
	Turns        int // USER_MESSAGE entries that are MODEL_VISIBLE
	Tasks        int
	LastTaskID   string // the task most recently seen for the first time
}

func (m *metaRecord) conversation(key string) Conversation {
	return Conversation{
		Key:          key,
		ContextID:    m.ContextID,
		Owner:        m.Owner,
		CreatedAt:    m.CreatedAt,
		LastActivity: m.LastActivity,
		LastSeq:      m.LastSeq,
		Epoch:        m.Epoch,
		Entries:      m.Counters.Entries,
		Turns:        m.Counters.Turns,
		Tasks:        m.Counters.Tasks,
		LastTaskID:   m.LastTaskID,
	}
}

// convKey validates owner and contextID and returns the conversation's storage key.
func convKey(owner, contextID string) (string, error) {
	if err := validateOwner(owner); err != nil {
		return "", err
	}
	if err := contextid.Validate(contextID); err != nil {
		return "", contextIDError(err)
	}
	return contextid.Key(owner, contextID), nil
}

// openConv returns the head of a conversation inside tx: [ErrNotFound] if it has none, a
// [*ChainError] if it does not decode.
func openConv(tx *bolt.Tx, key string) (metaRecord, error) {
	m, _, err := readHead(tx, key)
	return m, err
}

// Conversation returns the summary of the conversation that owner opened under contextID.
// Errors: [ErrNotFound] if it has no entries; [ErrInvalid] for an invalid owner or
// contextId; a [ChainError] if its metadata is unreadable; [ErrClosed] after Close.
func (s *Store) Conversation(ctx context.Context, owner, contextID string) (Conversation, error) {
	key, err := convKey(owner, contextID)
	if err != nil {
		return Conversation{}, err
	}
	var c Conversation
	err = s.convView(ctx, key, contextID, owner, func(tx *bolt.Tx) error {
		m, err := openConv(tx, key)
		if err != nil {
			return err
		}
		c = m.conversation(key)
		return nil
	})
	return c, err
}

// Last returns the newest n entries of the conversation for which keep (nil = every entry)
// returns true, oldest first. It reads backwards from the newest entry and stops after n
// matches, so its cost depends on n and the filter, not on the conversation's length. n == 0
// returns no entries (never "all"). keep runs inside a read transaction: it must not call
// the Store. Errors: [ErrNotFound] if the conversation does not exist; [ErrInvalid] for a
// negative n or an invalid owner or contextId; [ErrChainBroken] for an undecodable entry;
// [ErrClosed] after Close.
func (s *Store) Last(ctx context.Context, owner, contextID string, n int, keep func(*Entry) bool) ([]Entry, error) {
	return s.LastBefore(ctx, owner, contextID, 0, n, keep)
}

// LastBefore is [Store.Last] over the entries with seq < beforeSeq (0: no bound): what Last
// returned at the moment the entry beforeSeq was about to be appended. It is how a turn's
// history is rebuilt later (replay).
func (s *Store) LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*Entry) bool) ([]Entry, error) {
	key, err := convKey(owner, contextID)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalidField("n", "negative")
	}
	var out []Entry
	err = s.convView(ctx, key, contextID, owner, func(tx *bolt.Tx) (err error) {
		if n == 0 {
			_, err = openConv(tx, key)
			return err
		}
		out, err = lastBefore(tx, key, beforeSeq, n, keep)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// lastBefore is LastBefore's read: the newest n entries with seq < beforeSeq (0: no
// bound) that keep accepts, newest first. keep must not retain the
// entry it is given: a refused one's place is reused.
func lastBefore(tx *bolt.Tx, key string, beforeSeq uint64, n int, keep func(*Entry) bool) ([]Entry, error) {
	m, lastPos, err := readHead(tx, key)
	if err != nil {
		return nil, err
	}
	return lastBeforeHead(tx, key, m, lastPos, beforeSeq, n, keep)
}

// lastBeforeHead is lastBefore from the conversation's head m (its last entry at
// lastPos), read already.
func lastBeforeHead(tx *bolt.Tx, key string, m metaRecord, lastPos, beforeSeq uint64, n int, keep func(*Entry) bool) ([]Entry, error) {
	l, err := openLog(tx, key, &m, lastPos)
	if err != nil {
		return nil, err
	}
	from := m.LastSeq
	if beforeSeq > 0 && beforeSeq <= m.LastSeq {
		from = beforeSeq - 1
	}
	r := newEntryReader(key, &m)
	defer r.release()
	out := make([]Entry, 0, min(uint64(n), from, 1024))
	err = l.back(from, func(seq uint64, rec logRecord) (bool, error) {
		out = append(out, Entry{})
		e := &out[len(out)-1]
		if err := r.decode(seq, rec.entry, e); err != nil {
			return false, err
		}
		if keep != nil && !keep(e) {
			out = out[:len(out)-1]
		}
		return len(out) < n, nil
	})
	if err != nil || len(out) == 0 {
		return nil, err // no entries: nil
	}
	return out, nil
}

// Range returns the entries with seq > afterSeq in ascending order, at most limit of them
// (0 = all). Errors: [ErrNotFound] if the conversation does not exist; [ErrInvalid] for a
// negative limit or an invalid owner or contextId; [ErrChainBroken] for an undecodable
// entry; [ErrClosed] after Close.
func (s *Store) Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]Entry, error) {
	key, err := convKey(owner, contextID)
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, invalidField("limit", "negative")
	}
	var out []Entry
	err = s.convView(ctx, key, contextID, owner, func(tx *bolt.Tx) (err error) {
		out, err = rangeEntries(tx, key, afterSeq, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rangeEntries is Range's read: entries afterSeq+1 .. afterSeq+limit (limit 0: all),
// ascending.
func rangeEntries(tx *bolt.Tx, key string, afterSeq uint64, limit int) ([]Entry, error) {
	m, lastPos, err := readHead(tx, key)
	if err != nil || afterSeq >= m.LastSeq {
		return nil, err
	}
	l, err := openLog(tx, key, &m, lastPos)
	if err != nil {
		return nil, err
	}
	end := m.LastSeq
	if limit > 0 && uint64(limit) < m.LastSeq-afterSeq {
		end = afterSeq + uint64(limit)
	}
	r := newEntryReader(key, &m)
	defer r.release()
	out := make([]Entry, end-afterSeq)
	err = l.back(end, func(seq uint64, rec logRecord) (bool, error) {
		if err := r.decode(seq, rec.entry, &out[seq-afterSeq-1]); err != nil {
			return false, err
		}
		return seq > afterSeq+1, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TaskEntries returns the conversation a task belongs to and every entry of the task in seq
// order, found through the task index (no scan of the conversation). Access control is the
// caller's: compare Conversation.Owner with the caller's identity. Errors: [ErrNotFound] if
// no entry carries taskID; [ErrChainBroken] if the index and the entries disagree;
// [ErrClosed] after Close.
func (s *Store) TaskEntries(ctx context.Context, taskID string) (Conversation, []Entry, error) {
	if taskID == "" {
		return Conversation{}, nil, ErrNotFound
	}
	var (
		conv Conversation
		out  []Entry
		key  string
	)
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer func() { recoverDamage(&err, key) }()
		idx := tx.Bucket(bucketTasks)
		if idx == nil {
			return ErrNotFound
		}
		head := idx.Get([]byte(taskID))
		if head == nil {
			return ErrNotFound
		}
		key, _ = splitTaskHead(head)
		if err := s.quarantined(key); err != nil {
			return err
		}
		if err := s.checkOnce(tx, key); err != nil {
			return err
		}
		m, err := openConv(tx, key)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return &ChainError{Key: key, Reason: fmt.Sprintf("task %q is indexed to a missing conversation", taskID)}
			}
			return err
		}
		conv = m.conversation(key)
		out, err = taskEntries(tx, key, &m, idx, taskID)
		return err
	})
	if err != nil {
		return Conversation{}, nil, s.damaged(ctx, err, conv.ContextID, conv.Owner)
	}
	return conv, out, nil
}

// taskEntries is TaskEntries' read: the entries of taskID, in seq order, that the task
// index idx places in the log (conversation key, whose head is m), read with one cursor
// and one entry reader.
func taskEntries(tx *bolt.Tx, key string, m *metaRecord, idx *bolt.Bucket, taskID string) ([]Entry, error) {
	type place struct{ seq, pos uint64 }
	var buf [16]place
	places := buf[:0]
	prefix := taskPrefix(taskID)
	c := idx.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		seq, _ := decodeSeq(k[len(prefix):])
		pos, ok := posValue(v)
		if !ok {
			return nil, &ChainError{Key: key, Seq: seq, Reason: "malformed task index value"}
		}
		places = append(places, place{seq, pos})
	}
	out := make([]Entry, len(places))
	l := &convLog{key: key, hash: convHash(key), log: tx.Bucket(bucketLog)}
	r := newEntryReader(key, m)
	defer r.release()
	for i, p := range places {
		rec, err := l.record(p.pos, p.seq)
		if err != nil {
			return nil, err
		}
		if err := r.decode(p.seq, rec.entry, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TaskIDs returns the tasks of the conversation in creation order (by their first entry).
// It follows the task index from the conversation's last task to each task's predecessor,
// reading one key per task. Errors: [ErrNotFound] if the conversation does not exist;
// [ErrInvalid] for an invalid owner or contextId; a [ChainError] if the conversation's
// metadata is unreadable or the task index disagrees with it; [ErrClosed] after Close.
func (s *Store) TaskIDs(ctx context.Context, owner, contextID string) ([]string, error) {
	key, err := convKey(owner, contextID)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = s.convView(ctx, key, contextID, owner, func(tx *bolt.Tx) error {
		m, err := openConv(tx, key)
		if err != nil {
			return err
		}
		ids, err = taskChain(tx.Bucket(bucketTasks), key, &m)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// taskChain returns the tasks of conversation key (metadata m) in creation order, following
// the previous-task links of the task index back from m.LastTaskID.
func taskChain(idx *bolt.Bucket, key string, m *metaRecord) ([]string, error) {
	ids := []string{}
	for id := m.LastTaskID; id != ""; {
		if len(ids) == m.Counters.Tasks {
			return nil, &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner,
				Reason: fmt.Sprintf("the task index links more than the %d tasks the metadata counts", m.Counters.Tasks)}
		}
		var head []byte
		if idx != nil {
			head = idx.Get([]byte(id))
		}
		conv, prev := splitTaskHead(head)
		if conv != key {
			return nil, &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner,
				Reason: fmt.Sprintf("task %q: the task index does not point to this conversation", id)}
		}
		ids = append(ids, id)
		id = prev
	}
	slices.Reverse(ids)
	return ids, nil
}

// LoadArtifact returns a copy of the content stored under ref ("sha256:<hex>"). Errors:
// [ErrInvalid] for a malformed ref; [ErrNotFound] if nothing is stored under it;
// [ErrClosed] after Close.
func (s *Store) LoadArtifact(ctx context.Context, ref string) ([]byte, error) {
	digest, ok := parseRef(ref)
	if !ok {
		return nil, invalidField("artifactRef", "%q is not sha256:<64 hex>", ref)
	}
	var out []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketArtifacts)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(digest))
		if v == nil {
			return fmt.Errorf("artifact %s: %w", ref, ErrNotFound)
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// Inflate puts the stored content back into every part of entries that has an
// ArtifactRef: Text for text parts, Raw for file parts. ArtifactRef and Size stay, so the
// entries still show where the content came from. Errors: [ErrNotFound] (naming the ref) if
// an artifact is missing; [ErrInvalid] for a malformed ref; [ErrClosed] after Close. On error
// the entries may be partly inflated.
func (s *Store) Inflate(ctx context.Context, entries []Entry) error {
	return s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketArtifacts)
		for i := range entries {
			for j := range entries[i].Parts {
				p := &entries[i].Parts[j]
				if p.ArtifactRef == "" {
					continue
				}
				digest, ok := parseRef(p.ArtifactRef)
				if !ok {
					return invalidEntry(i, fmt.Sprintf("parts[%d].artifactRef", j), "%q is not sha256:<64 hex>", p.ArtifactRef)
				}
				var v []byte
				if b != nil {
					v = b.Get([]byte(digest))
				}
				if v == nil {
					return fmt.Errorf("artifact %s: %w", p.ArtifactRef, ErrNotFound)
				}
				if contentField(p.Kind) == "raw" {
					p.Raw = bytes.Clone(v)
				} else {
					p.Text = string(v)
				}
			}
		}
		return nil
	})
}
