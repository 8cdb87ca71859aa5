package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The storage format of a ledger file, format 2 (DESIGN D-7; format1.go has what is left
// of format 1, which only the upgrade reads): every entry of every conversation is stored
// once, in one append-ordered log, and a conversation reaches its entries from its head:
//
//	"v1.log"/                  position (8 bytes big-endian, from the bucket's sequence) →
//	                           log record: 0x01 ‖ sha256 of the conversation (the 32 bytes
//	                           its key names in hex) ‖ uvarint seq ‖ uvarint position of
//	                           the conversation's previous entry (0: none) ‖ entry JSON
//	"v1.heads"/                "v1/<64 hex>" → head record (headVersion ‖ uvarint position of
//	                           the last entry ‖ the metadata record's fields, see meta.go)
//	"v1.heads.recent"/         the same, for the heads written since the last checkpoint
//	"v1.seqidx"/               sha256 ‖ seq → position, for every seq that is a multiple of
//	                           seqIndexEvery (the sparse index)
//	"v1.activity"/             last activity (8 bytes big-endian Unix nanoseconds) ‖ key →
//	                           empty: the conversations of "v1.heads" by last activity
//	"v1.owners"/               owner → empty: every owner with a conversation (owners.go)
//	"v1.tasks"/                taskId → conversation key [‖ 0x00 ‖ previous taskId]: the
//	                           task's conversation and the task it started before it (keys.go);
//	                           taskId ‖ 0x00 ‖ seq → the log position of that entry of the task
//	"v1.artifacts"/            sha256 hex → content (written once)
//	"v1.byid"/                 sha256(contextId) ‖ conversation key → empty, for the
//	                           conversations opened before the file had "v1.owners" (byid.go)
//	"v1.quarantine"/           the conversations a salvage lost (quarantine.go)
//	"v1.push.configs", "v1.push.pending", "v1.running": outbox.go, running.go
//
// No other top-level name is ever read, listed or written.
//
// A commit appends at the right edge of the log (and, with time-ordered task ids, of the
// task index); the only keys it writes at random places are the heads of the
// conversations it touches (and the owner of a conversation it opens, the first time
// that owner has one). Those go to the small "v1.heads.recent", whose pages a busy
// conversation rewrites commit after commit, rather than to the big "v1.heads", whose
// leaves an idle conversation shares with others: a commit that finds more than
// recentMax heads there moves them all to "v1.heads" (the checkpoint; Close runs one too,
// and so does Open when a crash left heads there). A head is read from
// "v1.heads.recent" first, then "v1.heads", in one read transaction.
//
// The activity index is lazy: it holds one key per head of "v1.heads", with that head's
// LastActivity; a commit does not touch it (moving a conversation's key would rewrite a
// leaf of the index at a random place, and the branches above it, for the sake of an
// idle conversation). The checkpoint moves each moved conversation's key from the head
// it replaces to the moved head. List merges the heads of "v1.heads.recent" (read whole,
// sorted) with the index, skipping the index keys of conversations in "v1.heads.recent"
// (a file written by an earlier build, which indexed every head at its commit, has
// those) and the keys that do not match their head's LastActivity (stale: none is left
// behind, but List does not rely on that). Salvage and the upgrade from format 1 write
// every head to "v1.heads" with its key.
//
// A conversation's entries are reached backwards from its head (each record names the
// position of the one before it), so reading its last n entries reads n records; an
// entry by seq is found from the next indexed seq above it (at most seqIndexEvery-1
// records back) or from the head.
//
// The file's format is the task index's bucket sequence: layoutFormat2 (3) and
// layoutOwners (4, with "v1.owners") are format 2; below that, format 1 (format1.go).
var (
	bucketLog      = []byte("v1.log")
	bucketHeads    = []byte("v1.heads")
	bucketRecent   = []byte("v1.heads.recent")
	bucketSeqIdx   = []byte("v1.seqidx")
	bucketActivity = []byte("v1.activity")
)

// layoutFormat2 is the task index's bucket sequence in a format-2 file written before the
// owners list (layoutOwners, owners.go).
const layoutFormat2 = 3

// seqIndexEvery: seq multiples of it are in the sparse index.
const seqIndexEvery = 32

// recentMax is how many heads "v1.heads.recent" holds before a commit moves them to
// "v1.heads".
const recentMax = 256

// headVersion is the first byte of a head record.
const headVersion = 2

// logRecordVersion is the first byte of a log record.
const logRecordVersion = 1

// hashLen is the length of a conversation's hash in log records and the sparse index.
const hashLen = 32

// createLogBuckets creates the buckets of the log and its indexes that are missing.
func createLogBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketLog, bucketHeads, bucketRecent, bucketSeqIdx, bucketActivity, bucketOwners} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return setUpFileID(tx) // wal_ident.go
}

// convHash returns the 32 bytes a current key names in hex (nil for another key).
func convHash(key string) []byte {
	if len(key) != 3+2*hashLen {
		return nil
	}
	h, err := hex.DecodeString(key[3:])
	if err != nil {
		return nil
	}
	return h
}

// appendHead appends the head record of m, whose last entry is at lastPos, to b.
func appendHead(b []byte, m *metaRecord, lastPos uint64) []byte {
	b = append(b, headVersion)
	b = binary.AppendUvarint(b, lastPos)
	return appendMeta(b, m)
}

// decodeHead is the inverse of appendHead.
func decodeHead(v []byte) (metaRecord, uint64, error) {
	if len(v) == 0 {
		return metaRecord{}, 0, errors.New("empty head record")
	}
	if v[0] != headVersion {
		return metaRecord{}, 0, fmt.Errorf("head record version %d, this build reads version %d", v[0], headVersion)
	}
	pos, n := binary.Uvarint(v[1:])
	if n <= 0 {
		return metaRecord{}, 0, errMetaTruncated
	}
	m, err := decodeMeta(v[1+n:])
	return m, pos, err
}

// headBytes returns the stored head record of key in tx (nil if none).
func headBytes(tx *bolt.Tx, key string) []byte {
	if r := tx.Bucket(bucketRecent); r != nil {
		if v := r.Get([]byte(key)); v != nil {
			return v
		}
	}
	if h := tx.Bucket(bucketHeads); h != nil {
		return h.Get([]byte(key))
	}
	return nil
}

// readHead returns the head of conversation key in tx: ErrNotFound if it has none, a
// *ChainError if it does not decode.
func readHead(tx *bolt.Tx, key string) (metaRecord, uint64, error) {
	v := headBytes(tx, key)
	if v == nil {
		return metaRecord{}, 0, ErrNotFound
	}
	m, pos, err := decodeHead(v)
	if err != nil {
		return metaRecord{}, 0, &ChainError{Key: key, Reason: "head unreadable: " + err.Error()}
	}
	return m, pos, nil
}

// logRecord is a decoded log record; entry aliases the stored bytes.
type logRecord struct {
	hash    []byte
	seq     uint64
	prevPos uint64
	entry   []byte
}

// appendLogRecord appends the log record of an entry to b.
func appendLogRecord(b, hash []byte, seq, prevPos uint64, entry []byte) []byte {
	b = append(b, logRecordVersion)
	b = append(b, hash...)
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, prevPos)
	return append(b, entry...)
}

// logRecordIn returns appendLogRecord(nil, hash, seq, prevPos, f.stored()), its prefix
// written in f's room (the encoding is not copied).
func logRecordIn(f frame, hash []byte, seq, prevPos uint64) []byte {
	var buf [1 + hashLen + 2*binary.MaxVarintLen64]byte
	prefix := appendLogRecord(buf[:0], hash, seq, prevPos, nil)
	start := frameRoom - len(prefix)
	copy(f.b[start:frameRoom], prefix)
	return f.b[start:]
}

// decodeLogRecord is the inverse of appendLogRecord.
func decodeLogRecord(v []byte) (logRecord, error) {
	if len(v) < 1+hashLen || v[0] != logRecordVersion {
		return logRecord{}, errors.New("malformed log record")
	}
	r := logRecord{hash: v[1 : 1+hashLen]}
	rest := v[1+hashLen:]
	seq, n := binary.Uvarint(rest)
	if n <= 0 {
		return logRecord{}, errors.New("malformed log record")
	}
	rest = rest[n:]
	prev, n := binary.Uvarint(rest)
	if n <= 0 {
		return logRecord{}, errors.New("malformed log record")
	}
	r.seq, r.prevPos, r.entry = seq, prev, rest[n:]
	return r, nil
}

// activityKey is the activity index's key of conversation key last active at t.
func activityKey(t time.Time, key string) []byte {
	ns := max(t.UnixNano(), 0)
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), uint64(ns))
	return append(b, key...)
}

// seqIdxKey is the sparse index's key of entry seq of the conversation of hash.
func seqIdxKey(hash []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, hashLen+seqLen), hash...), seq)
}

// convLog reads one conversation's entries inside a transaction.
type convLog struct {
	key     string
	m       *metaRecord // the head (names the conversation in errors); nil when unknown
	hash    []byte
	log     *bolt.Bucket
	idx     *bolt.Bucket
	lastSeq uint64
	lastPos uint64
	cur     *bolt.Cursor // on the log, reused by every read
	curPos  uint64       // the position cur is at (0: unknown)
	curVal  []byte       // and its record
}

// openLog returns the reader of conversation key in tx, whose head is m and lastPos.
func openLog(tx *bolt.Tx, key string, m *metaRecord, lastPos uint64) (*convLog, error) {
	l := &convLog{key: key, m: m, hash: convHash(key), log: tx.Bucket(bucketLog), idx: tx.Bucket(bucketSeqIdx),
		lastSeq: m.LastSeq, lastPos: lastPos}
	if l.hash == nil || l.log == nil || l.idx == nil {
		return nil, &ChainError{Key: key, Reason: "the log's buckets are missing"}
	}
	return l, nil
}

// record reads the record at pos, which must be entry seq of this conversation.
func (l *convLog) record(pos, seq uint64) (logRecord, error) {
	r, err := l.read(pos, seq)
	if ce, ok := err.(*ChainError); ok && l.m != nil {
		ce.ContextID, ce.Owner = l.m.ContextID, l.m.Owner
	}
	return r, err
}

func (l *convLog) read(pos, seq uint64) (logRecord, error) {
	v := l.at(pos)
	if v == nil {
		return logRecord{}, &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("log position %d missing", pos)}
	}
	r, err := decodeLogRecord(v)
	switch {
	case err != nil:
		return r, &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("log position %d: %v", pos, err)}
	case !bytes.Equal(r.hash, l.hash):
		return r, &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("log position %d holds another conversation's entry", pos)}
	case r.seq != seq:
		return r, &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("log position %d holds seq %d", pos, r.seq)}
	case seq == 1 && r.prevPos != 0, seq > 1 && (r.prevPos == 0 || r.prevPos >= pos):
		return r, &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("log position %d links to position %d", pos, r.prevPos)}
	}
	return r, nil
}

// maxStep is how many log positions away the cursor steps to a record rather than seek it
// from the root: a conversation's entries appended together are neighbours in the log.
const maxStep = 8

// at returns the record at log position pos (nil: none), moving the cursor there: record
// by record when it is at most maxStep positions away, else by a seek.
func (l *convLog) at(pos uint64) []byte {
	switch {
	case l.cur == nil:
		l.cur = l.log.Cursor()
	case l.curPos == 0:
	case pos == l.curPos:
		return l.curVal
	case pos < l.curPos && l.curPos-pos <= maxStep:
		for k, v := l.cur.Prev(); len(k) == seqLen; k, v = l.cur.Prev() {
			if p := binary.BigEndian.Uint64(k); p <= pos {
				return l.landed(p, pos, v)
			}
		}
	case pos > l.curPos && pos-l.curPos <= maxStep:
		for k, v := l.cur.Next(); len(k) == seqLen; k, v = l.cur.Next() {
			if p := binary.BigEndian.Uint64(k); p >= pos {
				return l.landed(p, pos, v)
			}
		}
	}
	var key [seqLen]byte
	binary.BigEndian.PutUint64(key[:], pos)
	k, v := l.cur.Seek(key[:])
	if !bytes.Equal(k, key[:]) {
		l.curPos = 0
		return nil
	}
	return l.landed(pos, pos, v)
}

// landed records that the cursor is at position p (record v) and returns v if p is pos.
func (l *convLog) landed(p, pos uint64, v []byte) []byte {
	if p != pos {
		l.curPos = 0
		return nil
	}
	l.curPos, l.curVal = p, v
	return v
}

// seek returns the position of entry seq (1 ≤ seq ≤ lastSeq): from the next indexed seq at
// or above it, or from the head, walking back.
func (l *convLog) seek(seq uint64) (uint64, error) {
	at, pos := l.lastSeq, l.lastPos
	if l.lastSeq-seq < seqIndexEvery { // as near from the head as from any indexed seq
		return l.walkBack(at, pos, seq)
	}
	k, v := l.idx.Cursor().Seek(seqIdxKey(l.hash, seq))
	if len(k) == hashLen+seqLen && bytes.HasPrefix(k, l.hash) {
		if s, _ := decodeSeq(k[hashLen:]); s <= l.lastSeq {
			p, ok := decodeSeq(v)
			if !ok {
				return 0, &ChainError{Key: l.key, Seq: s, Reason: "malformed sparse index value"}
			}
			at, pos = s, p
		}
	}
	return l.walkBack(at, pos, seq)
}

// walkBack returns the position of entry seq, walking back from entry at (at pos).
func (l *convLog) walkBack(at, pos, seq uint64) (uint64, error) {
	for ; at > seq; at-- {
		r, err := l.record(pos, at)
		if err != nil {
			return 0, err
		}
		pos = r.prevPos
	}
	return pos, nil
}

// back calls fn with entries from seq down to 1 (record bytes alias the transaction)
// until fn returns false.
func (l *convLog) back(seq uint64, fn func(seq uint64, r logRecord) (bool, error)) error {
	if seq == 0 {
		return nil
	}
	pos, err := l.seek(seq)
	if err != nil {
		return err
	}
	for ; seq >= 1; seq-- {
		r, err := l.record(pos, seq)
		if err != nil {
			return err
		}
		more, err := fn(seq, r)
		if err != nil || !more {
			return err
		}
		pos = r.prevPos
	}
	return nil
}

// positions returns the log position of every entry, index seq-1.
func (l *convLog) positions() ([]uint64, error) {
	out := make([]uint64, l.lastSeq)
	pos := l.lastPos
	for seq := l.lastSeq; seq >= 1; seq-- {
		r, err := l.record(pos, seq)
		if err != nil {
			return nil, err
		}
		out[seq-1] = pos
		pos = r.prevPos
	}
	return out, nil
}

// headKeys returns the keys of every conversation (its head), sorted.
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

// errFormat1 refuses to serve a format-1 file (format1.go), which Open upgrades first.
var errFormat1 = errors.New("the file is in format 1 (earlier builds), which this build only upgrades (gateway ledger upgrade)")

// setUp creates the buckets of the log and of the indexes that are missing and records
// the layout in the task index's bucket sequence: a new file gets layoutOwners, a file of
// layoutFormat2 (written before the owners list) gets an empty list and layoutOwners
// (owners.go). It refuses a format-1 file (errFormat1: Open upgrades one before it gets
// here) and a file of a newer layout.
func setUp(tx *bolt.Tx) error {
	fresh := tx.Bucket(bucketTasks) == nil
	tasks, err := tx.CreateBucketIfNotExists(bucketTasks)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketTasks, err)
	}
	if _, err := tx.CreateBucketIfNotExists(bucketArtifacts); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketArtifacts, err)
	}
	switch v := tasks.Sequence(); {
	case fresh, v == layoutFormat2:
		if err := tasks.SetSequence(layoutOwners); err != nil {
			return err
		}
	case v > layoutOwners:
		return fmt.Errorf("the file has storage layout %d, written by a newer build; this build reads layouts up to %d", v, layoutOwners)
	case v < layoutFormat2:
		return errFormat1
	}
	return createLogBuckets(tx)
}
