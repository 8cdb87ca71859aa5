package ledger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

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
// by key), with their original contextIds, from the newest or after opts.After. It reads
// the activity index from that position and stops after Limit conversations (a page costs
// its size, wherever it starts; see listFrom). Keys outside the namespace (other versions,
// legacy names) are skipped unread, as is a quarantined conversation or one whose head is
// unreadable or does not hash to its key (logged at Warn; [Store.VerifyAll] reports it).
// Errors: a [*ChainError] when the file's own tree or the activity index is damaged;
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
		out, err = s.listFrom(tx, opts, func(key, reason string) { skip = append(skip, skipped{key, reason}) })
		return err
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

// listFrom is List's read. It merges two streams, newest first: the
// conversations whose head is in "v1.heads.recent" (the whole bucket is read, it is
// small; a head is decoded in full only when the merge reaches it), and the activity
// index from its newest end, which indexes the heads of "v1.heads" (see log.go). It
// stops when limit (0: all) conversations of owner ("": any) are found and the next one
// is older than the last found: the page holds every tie of its last LastActivity (List
// sorts the ties by key and cuts at limit).
func (s *Store) listFrom(tx *bolt.Tx, opts ListOptions, skip func(key, reason string)) ([]Conversation, error) {
	idx := tx.Bucket(bucketActivity)
	if idx == nil {
		return nil, &ChainError{Key: string(bucketActivity), Reason: "the activity index is missing"}
	}
	recent := recentByActivity(tx, opts.After, skip)
	a := &activityScan{s: s, tx: tx, opts: opts, skip: skip, c: idx.Cursor()}
	a.k = startActivity(a.c, opts.After)
	var out []Conversation
	for {
		at := a.peek()
		fromRecent := len(recent) > 0 && (at == nil || bytes.Compare(recent[0].at[:], at) >= 0)
		if fromRecent {
			at = recent[0].at[:]
		}
		if at == nil {
			return out, nil
		}
		if opts.Limit > 0 && len(out) >= opts.Limit && !bytes.Equal(at, activityKey(out[len(out)-1].LastActivity, "")) {
			return out, nil
		}
		var c Conversation
		ok := false
		if fromRecent {
			c, ok = s.recentListed(recent[0], opts.Owner, skip)
			recent = recent[1:]
		} else {
			c, ok = a.next()
		}
		if ok {
			out = append(out, c)
		}
	}
}

// recentHead is a head of "v1.heads.recent" as listFrom merges it: at is its LastActivity
// as the activity index spells it.
type recentHead struct {
	key, v []byte
	at     [8]byte
}

// recentByActivity returns the heads of "v1.heads.recent" that come after the cursor
// after (nil: all), newest first (ties by key, descending, as the activity index reads
// backwards). A head whose LastActivity does not decode has no place in the listing: it
// is reported to skip on the first page only.
func recentByActivity(tx *bolt.Tx, after *ListCursor, skip func(key, reason string)) []recentHead {
	r := tx.Bucket(bucketRecent)
	if r == nil {
		return nil
	}
	var afterAt []byte
	if after != nil {
		afterAt = activityKey(after.LastActivity, "")
	}
	var out []recentHead
	_ = r.ForEach(func(k, v []byte) error {
		t, ok := headLastActivity(v)
		if !ok {
			if after == nil {
				_, _, err := decodeHead(v)
				skip(string(k), fmt.Sprintf("head unreadable: %v", err))
			}
			return nil
		}
		var at [8]byte
		binary.BigEndian.PutUint64(at[:], uint64(max(t.UnixNano(), 0))) // as activityKey
		if c := bytes.Compare(at[:], afterAt); after == nil || c < 0 || c == 0 && string(k) > after.Key {
			out = append(out, recentHead{key: k, at: at, v: v})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b recentHead) int {
		if c := bytes.Compare(b.at[:], a.at[:]); c != 0 {
			return c
		}
		return bytes.Compare(b.key, a.key)
	})
	return out
}

// recentListed returns the conversation of the recent head h, if owner's listing holds
// it.
func (s *Store) recentListed(h recentHead, owner string, skip func(key, reason string)) (Conversation, bool) {
	key := string(h.key)
	if !contextid.IsCurrentKey(key) {
		return Conversation{}, false
	}
	if s.quarantined(key) != nil {
		skip(key, "quarantined")
		return Conversation{}, false
	}
	m, _, err := decodeHead(h.v)
	if err != nil {
		skip(key, "head unreadable: "+err.Error())
		return Conversation{}, false
	}
	return listable(key, &m, owner, skip)
}

// listable returns the conversation of key's head m, if owner's listing holds it (a head
// that does not hash to its key is reported to skip).
func listable(key string, m *metaRecord, owner string, skip func(key, reason string)) (Conversation, bool) {
	if contextid.Key(m.Owner, m.ContextID) != key {
		skip(key, "head does not hash to the key")
		return Conversation{}, false
	}
	if owner != "" && m.Owner != owner {
		return Conversation{}, false
	}
	return m.conversation(key), true
}

// headLastActivity returns the LastActivity of head record v, decoding nothing after it.
func headLastActivity(v []byte) (time.Time, bool) {
	if len(v) == 0 || v[0] != headVersion {
		return time.Time{}, false
	}
	_, n := binary.Uvarint(v[1:])
	if n <= 0 || len(v) < 2+n || v[1+n] != metaVersion {
		return time.Time{}, false
	}
	d := metaDecoder{b: v[2+n:]}
	for range 5 { // last seq, epoch, entries, turns, tasks
		d.uvarint()
	}
	d.time() // created
	t := d.time()
	return t, d.err == nil
}

// activityScan reads the activity index from its newest end for listFrom.
type activityScan struct {
	s    *Store
	tx   *bolt.Tx
	opts ListOptions
	skip func(key, reason string)
	c    *bolt.Cursor
	k    []byte // the current key (nil: the end)
}

// peek returns the LastActivity part of the current key (nil at the end).
func (a *activityScan) peek() []byte {
	for a.k != nil && len(a.k) < 8 {
		a.k, _ = a.c.Prev()
	}
	if a.k == nil {
		return nil
	}
	return a.k[:8]
}

// next moves past the current key and returns its conversation, if it is listed: a key
// of a conversation whose head is in "v1.heads.recent", or whose head's LastActivity is
// not the key's (a stale key), is skipped silently.
func (a *activityScan) next() (Conversation, bool) {
	k := a.k
	a.k, _ = a.c.Prev()
	key := string(k[8:])
	if after := a.opts.After; after != nil && bytes.Equal(k[:8], activityKey(after.LastActivity, "")) && key <= after.Key {
		return Conversation{}, false // a tie of the cursor's that comes before it
	}
	if !contextid.IsCurrentKey(key) || a.tx.Bucket(bucketRecent).Get(k[8:]) != nil {
		return Conversation{}, false
	}
	if a.s.quarantined(key) != nil {
		a.skip(key, "quarantined")
		return Conversation{}, false
	}
	m, _, err := readHead(a.tx, key)
	switch {
	case err != nil:
		a.skip(key, err.Error())
	case bytes.Equal(k[:8], activityKey(m.LastActivity, "")): // else a stale key
		return listable(key, &m, a.opts.Owner, a.skip)
	}
	return Conversation{}, false
}

// startActivity positions c on the activity index's newest key that may follow the
// cursor after (nil: the newest key) and returns it: the last key of the cursor's
// LastActivity (its ties), or the newest before it.
func startActivity(c *bolt.Cursor, after *ListCursor) []byte {
	if after == nil {
		k, _ := c.Last()
		return k
	}
	if k, _ := c.Seek(activityKey(after.LastActivity.Add(time.Nanosecond), "")); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

// sortConversations orders out newest LastActivity first, ties by key.
func sortConversations(out []Conversation) {
	slices.SortFunc(out, func(a, b Conversation) int {
		if c := b.LastActivity.Compare(a.LastActivity); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
}
