package ledger

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// lastBefore2 is LastBefore's read of a format-2 file: the newest n entries with
// seq < beforeSeq (0: no bound) that keep accepts, newest first. keep must not retain the
// entry it is given: a refused one's place is reused.
func lastBefore2(tx *bolt.Tx, key string, beforeSeq uint64, n int, keep func(*Entry) bool) ([]Entry, error) {
	m, lastPos, err := readHead2(tx, key)
	if err != nil {
		return nil, err
	}
	return lastBeforeHead(tx, key, m, lastPos, beforeSeq, n, keep)
}

// lastBeforeHead is lastBefore2 from the conversation's head m (its last entry at
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
		return nil, err // no entries: nil, as format 1 returns it
	}
	return out, nil
}

// range2 is Range's read of a format-2 file: entries afterSeq+1 .. afterSeq+limit (limit
// 0: all), ascending.
func range2(tx *bolt.Tx, key string, afterSeq uint64, limit int) ([]Entry, error) {
	m, lastPos, err := readHead2(tx, key)
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

// taskEntries2 is TaskEntries' read of a format-2 file: the entries of taskID, in seq
// order, that the task index idx places in the log (conversation key, whose head is m),
// read with one cursor and one entry reader.
func taskEntries2(tx *bolt.Tx, key string, m *metaRecord, idx *bolt.Bucket, taskID string) ([]Entry, error) {
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

// headKeys returns the keys of every conversation of a format-2 file, sorted.
func headKeys(tx *bolt.Tx) []string {
	var keys []string
	for _, name := range [][]byte{bucketHeads, bucketRecent} {
		if b := tx.Bucket(name); b != nil {
			_ = b.ForEach(func(k, _ []byte) error {
				keys = append(keys, string(k))
				return nil
			})
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// quickCheck2 is quickCheck for a format-2 file: the head reads and hashes to key, and
// walking back from it every entry matches its own hash and the link of the one after it,
// down to seq 1.
func quickCheck2(tx *bolt.Tx, key string) error {
	m, lastPos, err := readHead2(tx, key)
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

// walkConv2 is walkConv for a format-2 file: the head, each entry from seq 1 (found by
// walking back from the head), the sparse index and the task index's positions, then the
// head against what the entries hold.
func walkConv2(ctx context.Context, tx *bolt.Tx, key string, noIndex bool, cp *convCopy) error {
	m, lastPos, err := readHead2(tx, key)
	if err != nil {
		return err
	}
	w := &chainWalk{key: key, m: m, taskIndex: tx.Bucket(bucketTasks), artifacts: tx.Bucket(bucketArtifacts),
		want: 1, tasks: map[string]bool{}, noIndex: noIndex, copy: cp}
	if cp != nil {
		cp.meta = m
	}
	if got := contextid.Key(m.Owner, m.ContextID); got != key {
		return w.fail(0, "head (contextId %q, owner %q) hashes to %s, not to the key", m.ContextID, m.Owner, got)
	}
	l, err := openLog(tx, key, &m, lastPos)
	if err != nil {
		return err
	}
	pos, err := l.positions()
	if err != nil {
		return err
	}
	if err := checkSeqIdx(l, pos); err != nil {
		return err
	}
	for i, p := range pos {
		if i%verifyCheckEvery == verifyCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r, err := l.record(p, uint64(i)+1)
		if err != nil {
			return err
		}
		w.pos = p
		if err := w.entry(entryKey(uint64(i)+1), r.entry); err != nil {
			return err
		}
		if cp != nil {
			cp.kvs = append(cp.kvs, [2][]byte{entryKey(uint64(i) + 1), bytes.Clone(r.entry)})
		}
	}
	return w.finish()
}

// checkSeqIdx checks the sparse index of l's conversation against the entries' positions:
// exactly the multiples of seqIndexEvery are indexed, each at its entry's position.
func checkSeqIdx(l *convLog, pos []uint64) error {
	c := l.idx.Cursor()
	want := uint64(seqIndexEvery)
	for k, v := c.Seek(l.hash); k != nil && bytes.HasPrefix(k, l.hash); k, v = c.Next() {
		seq, _ := decodeSeq(k[hashLen:])
		p, ok := posValue(v)
		switch {
		case len(k) != hashLen+seqLen || seq != want || seq > uint64(len(pos)):
			return &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("the sparse index holds seq %d, expected %d", seq, want)}
		case !ok || p != pos[seq-1]:
			return &ChainError{Key: l.key, Seq: seq, Reason: "the sparse index points to the wrong log position"}
		}
		want += seqIndexEvery
	}
	if want <= uint64(len(pos)) {
		return &ChainError{Key: l.key, Seq: want, Reason: "missing from the sparse index"}
	}
	return nil
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
