package ledger

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The writes of a commit to the log (log.go): the entries at the log's right edge, the
// heads of the conversations they continue, and the checkpoint that moves those heads
// from "v1.heads.recent" to "v1.heads".

// logTx holds the buckets a write transaction uses.
type logTx struct {
	log, heads, recent, seqIdx, activity, tasks, artifacts wbucket
	newRecent                                              int // heads added to recent in this tx
}

// logBuckets returns the buckets of tx an append writes, their writes recorded in r
// (nil: not), or an error if one is missing.
func logBuckets(tx *bolt.Tx, r *redo) (*logTx, error) {
	b := &logTx{log: wb(tx, r, bucketLog), heads: wb(tx, r, bucketHeads), recent: wb(tx, r, bucketRecent),
		seqIdx: wb(tx, r, bucketSeqIdx), activity: wb(tx, r, bucketActivity),
		tasks: wb(tx, r, bucketTasks), artifacts: wb(tx, r, bucketArtifacts)}
	if b.log.Bucket == nil || b.heads.Bucket == nil || b.recent.Bucket == nil || b.seqIdx.Bucket == nil ||
		b.activity.Bucket == nil || b.tasks.Bucket == nil || b.artifacts.Bucket == nil {
		return nil, fmt.Errorf("ledger: the log's buckets are missing")
	}
	// Everything but the heads grows at its right edge: fill the leaves left behind.
	b.log.FillPercent, b.seqIdx.FillPercent, b.activity.FillPercent, b.tasks.FillPercent = 1, 0.9, 0.9, 0.9
	return b, nil
}

// putEntries appends the encoded entries to the log after m's last seq, each linked to
// the one before (lastPos), indexes every seqIndexEvery-th seq and the entries of a task,
// and advances m's last seq and counters. It returns the last entry's position.
func (b *logTx) putEntries(key string, entries []Entry, encoded []frame, m *metaRecord, lastPos uint64) (uint64, error) {
	hash := convHash(key)
	positions := make([]byte, 0, seqLen*len(entries)) // the indexes' values, kept by bbolt until the commit
	var kb [hashLen + seqLen + 64]byte                // the keys of the indexes: bbolt copies a key
	for i := range entries {
		e := &entries[i]
		seq := m.LastSeq + uint64(i) + 1
		pos, err := b.log.NextSequence()
		if err != nil {
			return 0, fmt.Errorf("next log position: %w", err)
		}
		positions = binary.BigEndian.AppendUint64(positions, pos)
		posValue := positions[len(positions)-seqLen:]
		if err := b.log.Put(posValue, logRecordIn(encoded[i], hash, seq, lastPos)); err != nil {
			return 0, fmt.Errorf("put log record: %w", err)
		}
		if seq%seqIndexEvery == 0 {
			k := binary.BigEndian.AppendUint64(append(kb[:0], hash...), seq)
			if err := b.seqIdx.Put(k, posValue); err != nil {
				return 0, fmt.Errorf("put sparse index: %w", err)
			}
		}
		if e.TaskID != "" {
			k := binary.BigEndian.AppendUint64(append(append(kb[:0], e.TaskID...), 0), seq) // taskKey
			if err := b.tasks.Put(k, posValue); err != nil {
				return 0, fmt.Errorf("put task index: %w", err)
			}
		}
		m.Counters.Entries++
		if CountsAsTurn(e) {
			m.Counters.Turns++
		}
		lastPos = pos
	}
	m.LastSeq += uint64(len(entries))
	return lastPos, nil
}

// putHead writes the head to "v1.heads.recent". The activity index is left alone: it
// indexes the heads of "v1.heads", and the checkpoint that moves this head there moves
// its key (moveRecent).
func (b *logTx) putHead(key string, m *metaRecord, lastPos uint64) error {
	if b.recent.Get([]byte(key)) == nil {
		b.newRecent++
	}
	if err := b.recent.Put([]byte(key), appendHead(nil, m, lastPos)); err != nil {
		return fmt.Errorf("put head: %w", err)
	}
	return nil
}

// checkpoint moves every head of "v1.heads.recent" to "v1.heads" when it holds more than
// recentMax, in tx (the commit's own transaction).
func (s *Store) checkpoint(tx *bolt.Tx) error {
	if s.recentN.Load() <= recentMax {
		return nil
	}
	return s.moveRecent(tx)
}

// checkpointNow moves the heads of "v1.heads.recent" to "v1.heads" in a transaction of
// its own: at Close, so that the next Open starts with none there, and at Open, when a
// crash (or an earlier build's Close) left some there. A failure is logged: the heads
// stay where they are, as good (List reads them from there).
func (s *Store) checkpointNow(when string) {
	if s.readOnly || s.recentN.Load() == 0 {
		return
	}
	if err := s.safeUpdate(s.moveRecent); err != nil {
		s.logger.Warn("ledger: moving the recent heads failed; they stay in v1.heads.recent", "at", when, "err", err)
	}
}

// moveRecent moves every head of "v1.heads.recent" to "v1.heads" in tx, and each moved
// conversation's activity index key from the head it replaces to its own.
func (s *Store) moveRecent(tx *bolt.Tx) error {
	recent, heads, activity := tx.Bucket(bucketRecent), wb(tx, s.redo, bucketHeads), wb(tx, s.redo, bucketActivity)
	activity.FillPercent = 0.9 // its new keys are the newest
	moved := 0
	err := recent.ForEach(func(k, v []byte) error {
		moved++
		if err := moveActivity(activity, k, heads.Get(k), v); err != nil {
			return err
		}
		return heads.Put(k, v)
	})
	if err != nil {
		return fmt.Errorf("checkpoint heads: %w", err)
	}
	if err := clearBucket(tx, s.redo, bucketRecent); err != nil {
		return fmt.Errorf("checkpoint heads: %w", err)
	}
	tx.OnCommit(func() { s.recentN.Add(-int64(moved)) })
	return nil
}

// moveActivity replaces the activity index key of conversation key's head old (nil: none)
// with the key of its head head. A head that does not decode keeps the old key, so that
// List finds it and reports it unreadable.
func moveActivity(activity wbucket, key, old, head []byte) error {
	at, ok := headActivity(head)
	if !ok {
		return nil
	}
	if oldAt, oldOK := headActivity(old); oldOK && !oldAt.Equal(at) {
		if err := activity.Delete(activityKey(oldAt, string(key))); err != nil {
			return fmt.Errorf("activity index: %w", err)
		}
	}
	if err := activity.Put(activityKey(at, string(key)), nil); err != nil {
		return fmt.Errorf("activity index: %w", err)
	}
	return nil
}

// headActivity returns the LastActivity of head record v (false: nil or undecodable).
func headActivity(v []byte) (time.Time, bool) {
	if v == nil {
		return time.Time{}, false
	}
	m, _, err := decodeHead(v)
	return m.LastActivity, err == nil
}

// countRecent returns how many heads "v1.heads.recent" holds.
func countRecent(tx *bolt.Tx) int64 {
	r := tx.Bucket(bucketRecent)
	if r == nil {
		return 0
	}
	return int64(r.Stats().KeyN)
}

// posValue decodes a task index or sparse index value (a log position).
func posValue(v []byte) (uint64, bool) {
	if len(v) != seqLen {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}
