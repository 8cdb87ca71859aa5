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

// convBucket returns the bucket of a conversation inside tx, or ErrNotFound.
func convBucket(tx *bolt.Tx, key string) (*bolt.Bucket, error) {
	if conv := tx.Bucket([]byte(key)); conv != nil {
		return conv, nil
	}
	return nil, ErrNotFound
}

// openConv returns the bucket and metadata of a conversation inside tx.
// In a format-2 file the bucket is nil: the conversation's head gives the metadata.
func openConv(tx *bolt.Tx, key string) (*bolt.Bucket, metaRecord, error) {
	if isFormat2(tx) {
		m, _, err := readHead2(tx, key)
		return nil, m, err
	}
	conv := tx.Bucket([]byte(key))
	if conv == nil {
		return nil, metaRecord{}, ErrNotFound
	}
	m, err := readMeta(conv)
	if err != nil {
		return nil, m, &ChainError{Key: key, Reason: err.Error()}
	}
	return conv, m, nil
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
		_, m, err := openConv(tx, key)
		if err != nil {
			return err
		}
		c = m.conversation(key)
		return nil
	})
	return c, err
}

// ListOptions filters [Store.List].
type ListOptions struct {
	Owner string // only this owner's conversations; "" = every owner
	Limit int    // at most this many; 0 = all
	// After, when set, continues a listing after the conversation it names: only the
	// conversations that come after it in the listing order (LastActivity older, or equal
	// with a greater key) are listed. The conversation need not exist any more. Nil: from
	// the newest.
	After *ListCursor
}

// ListCursor is a position in the listing order of [Store.List]: a conversation's
// LastActivity and key (a listed Conversation's, see [Conversation.Cursor]).
type ListCursor struct {
	LastActivity time.Time
	Key          string
}

// Cursor returns c's position in the listing order.
func (c *Conversation) Cursor() *ListCursor {
	return &ListCursor{LastActivity: c.LastActivity, Key: c.Key}
}

// Before reports whether c comes after the cursor in the listing order (newest
// LastActivity first, ties by key), so that a listing continued after the cursor holds it.
// A nil cursor comes before everything.
func (cur *ListCursor) Before(c *Conversation) bool {
	if cur == nil {
		return true
	}
	if !c.LastActivity.Equal(cur.LastActivity) {
		return c.LastActivity.Before(cur.LastActivity)
	}
	return c.Key > cur.Key
}

// List returns the conversations of the current namespace, newest LastActivity first (ties
// by key), with their original contextIds, from the newest or after opts.After. A format-2
// file reads its activity index from that position and stops after Limit conversations
// (a page costs its size, wherever it starts); a format-1 file reads every conversation's
// metadata. Top-level buckets outside the namespace (other
// versions, legacy names) are skipped unread, as is a quarantined conversation or a bucket
// whose metadata is unreadable or does not hash to its name (logged at Warn;
// [Store.VerifyAll] reports it). Errors: a [*ChainError] when the file's own tree of
// conversations is damaged;
// [ErrInvalid] for a negative Limit; [ErrClosed] after Close.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]Conversation, error) {
	if opts.Limit < 0 {
		return nil, invalidField("limit", "negative")
	}
	type skipped struct{ key, reason string }
	var (
		out  []Conversation
		skip []skipped
	)
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, rootTree)
		if isFormat2(tx) {
			out, err = s.list2(tx, opts, func(key, reason string) { skip = append(skip, skipped{key, reason}) })
			return err
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			key := string(name)
			if !contextid.IsCurrentKey(key) {
				return nil
			}
			if s.quarantined(key) != nil {
				skip = append(skip, skipped{key, "quarantined"})
				return nil
			}
			m, err := safeReadMeta(key, b)
			if err != nil {
				skip = append(skip, skipped{key, err.Error()})
				return nil
			}
			if contextid.Key(m.Owner, m.ContextID) != key {
				skip = append(skip, skipped{key, "metadata does not hash to the key"})
				return nil
			}
			if c := m.conversation(key); (opts.Owner == "" || m.Owner == opts.Owner) && opts.After.Before(&c) {
				out = append(out, c)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for _, sk := range skip { // logged after the transaction: no I/O but bbolt inside one
		s.logger.WarnContext(ctx, "conversation skipped in listing", "key", sk.key, "reason", sk.reason)
	}
	sortConversations(out)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
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
		if isFormat2(tx) {
			if n > 0 {
				out, err = lastBefore2(tx, key, beforeSeq, n, keep)
			} else {
				_, _, err = readHead2(tx, key)
			}
			return err
		}
		conv, err := convBucket(tx, key)
		if err != nil || n == 0 {
			return err
		}
		out, err = lastBefore1(conv, key, beforeSeq, n, keep)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// lastBefore1 is LastBefore in the format-1 bucket conv of conversation key, newest
// first.
func lastBefore1(conv *bolt.Bucket, key string, beforeSeq uint64, n int, keep func(*Entry) bool) ([]Entry, error) {
	var out []Entry
	c := conv.Cursor()
	k, v := lastEntry(c)
	if beforeSeq > 0 {
		if k, _ = c.Seek(entryKey(beforeSeq)); k == nil {
			k, v = lastEntry(c)
		} else {
			k, v = c.Prev()
		}
	}
	for ; isEntryKey(k) && len(out) < n; k, v = c.Prev() {
		var e Entry
		if err := decodeEntry(key, k, v, &e); err != nil {
			return nil, err
		}
		if keep == nil || keep(&e) {
			out = append(out, e)
		}
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
		if isFormat2(tx) {
			out, err = range2(tx, key, afterSeq, limit)
			return err
		}
		conv, err := convBucket(tx, key)
		if err != nil {
			return err
		}
		if afterSeq == ^uint64(0) {
			return nil
		}
		c := conv.Cursor()
		for k, v := c.Seek(entryKey(afterSeq + 1)); isEntryKey(k) && (limit == 0 || len(out) < limit); k, v = c.Next() {
			var e Entry
			if err := decodeEntry(key, k, v, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
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
		b, m, err := openConv(tx, key)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return &ChainError{Key: key, Reason: fmt.Sprintf("task %q is indexed to a missing conversation", taskID)}
			}
			return err
		}
		conv = m.conversation(key)
		if b == nil { // format 2
			out, err = taskEntries2(tx, key, &m, idx, taskID)
			return err
		}
		prefix := taskPrefix(taskID)
		c := idx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			_, seq, ok := splitTaskKey(k)
			ek := entryKey(seq)
			v := b.Get(ek)
			if !ok || v == nil {
				return &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Seq: seq,
					Reason: fmt.Sprintf("task %q indexes a missing entry", taskID)}
			}
			var e Entry
			if err := decodeEntry(key, ek, v, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return Conversation{}, nil, s.damaged(ctx, err, conv.ContextID, conv.Owner)
	}
	return conv, out, nil
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
		_, m, err := openConv(tx, key)
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

// safeReadMeta is readMeta, with a bbolt panic (a damaged page of the conversation)
// returned as an error.
func safeReadMeta(key string, b *bolt.Bucket) (m metaRecord, err error) {
	defer recoverDamage(&err, key)
	return readMeta(b)
}

// isEntryKey reports whether k lies in the entries' key range of a conversation bucket.
func isEntryKey(k []byte) bool { return len(k) > 0 && k[0] == prefixEntry }

// lastEntry moves c to the newest entry of its conversation bucket and returns it (a key
// outside the entries' range if there is none).
func lastEntry(c *bolt.Cursor) (k, v []byte) {
	if k, _ = c.Seek([]byte{prefixEntry + 1}); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// decodeEntry decodes the stored entry v at key k of conversation key into e (a copy: e
// aliases no bbolt memory).
func decodeEntry(key string, k, v []byte, e *Entry) error {
	seq, ok := entrySeq(k)
	if !ok {
		return &ChainError{Key: key, Reason: fmt.Sprintf("malformed entry key %x", k)}
	}
	if reason := entryBytesFault(v); reason != "" {
		return &ChainError{Key: key, Seq: seq, Reason: reason}
	}
	if err := decodeStored(v, e); err != nil {
		return &ChainError{Key: key, Seq: seq, Reason: fmt.Sprintf("entry unreadable: %v", err)}
	}
	if e.Seq != seq {
		return &ChainError{Key: key, Seq: seq, Reason: fmt.Sprintf("entry says seq %d", e.Seq)}
	}
	return nil
}
