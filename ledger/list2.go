package ledger

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/conversations/contextid"
)

// list2 is List's read of a format-2 file. It merges two streams, newest first: the
// conversations whose head is in "v1.heads.recent" (the whole bucket is read: it is
// small), and the activity index from its newest end, which indexes the heads of
// "v1.heads" (see log2.go). It stops when limit (0: all) conversations of owner ("": any)
// are found and the next one is older than the last found: the page holds every tie of
// its last LastActivity (List sorts the ties by key and cuts at limit).
func (s *Store) list2(tx *bolt.Tx, opts ListOptions, skip func(key, reason string)) ([]Conversation, error) {
	idx := tx.Bucket(bucketActivity)
	if idx == nil {
		return nil, &ChainError{Key: string(bucketActivity), Reason: "the activity index is missing"}
	}
	recent := s.recentListed(tx, opts, skip)
	a := &activityScan{s: s, tx: tx, opts: opts, skip: skip, c: idx.Cursor()}
	a.k = startActivity(a.c, opts.After)
	var out []Conversation
	for {
		at := a.peek()
		fromRecent := len(recent) > 0 && (at == nil || bytes.Compare(activityKey(recent[0].LastActivity, ""), at) >= 0)
		if fromRecent {
			at = activityKey(recent[0].LastActivity, "")
		}
		if at == nil {
			return out, nil
		}
		if opts.Limit > 0 && len(out) >= opts.Limit && !bytes.Equal(at, activityKey(out[len(out)-1].LastActivity, "")) {
			return out, nil
		}
		if fromRecent {
			out, recent = append(out, recent[0]), recent[1:]
		} else if c, ok := a.next(); ok {
			out = append(out, c)
		}
	}
}

// recentListed returns the conversations of "v1.heads.recent" that List lists after the
// cursor, newest first (ties by key, descending). A head it cannot list is reported to
// skip on the first page only (it has no place in the listing order).
func (s *Store) recentListed(tx *bolt.Tx, opts ListOptions, skip func(key, reason string)) []Conversation {
	r := tx.Bucket(bucketRecent)
	if r == nil {
		return nil
	}
	report := func(key, reason string) {
		if opts.After == nil {
			skip(key, reason)
		}
	}
	var out []Conversation
	_ = r.ForEach(func(k, v []byte) error {
		key := string(k)
		if !contextid.IsCurrentKey(key) {
			return nil
		}
		if s.quarantined(key) != nil {
			report(key, "quarantined")
			return nil
		}
		m, _, err := decodeHead(v)
		switch {
		case err != nil:
			report(key, "head unreadable: "+err.Error())
		case contextid.Key(m.Owner, m.ContextID) != key:
			report(key, "head does not hash to the key")
		case opts.Owner == "" || m.Owner == opts.Owner:
			if c := m.conversation(key); opts.After.Before(&c) {
				out = append(out, c)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Conversation) int {
		if c := b.LastActivity.Compare(a.LastActivity); c != 0 {
			return c
		}
		return cmp.Compare(b.Key, a.Key)
	})
	return out
}

// activityScan reads the activity index from its newest end for list2.
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
	m, _, err := readHead2(a.tx, key)
	switch {
	case err != nil:
		a.skip(key, err.Error())
	case !bytes.Equal(k[:8], activityKey(m.LastActivity, "")):
		// stale
	case contextid.Key(m.Owner, m.ContextID) != key:
		a.skip(key, "head does not hash to the key")
	case a.opts.Owner == "" || m.Owner == a.opts.Owner:
		return m.conversation(key), true
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
