package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Storage layout (bbolt):
//
//	"v1/<64 hex>"        one top-level bucket per conversation, named conversations.Key(owner, contextId)
//	    "meta"           JSON record (metaRecord)
//	    "entries"/       8-byte big-endian seq → entry JSON
//	    "tasks"/         taskId ‖ 0x00 ‖ 8-byte seq → empty
//	"v1.tasks"/          taskId → conversation key (global task index)
//	"v1.artifacts"/      sha256 hex → content (written once)
//
// No other top-level name is ever read, listed or written.
var (
	bucketTasks     = []byte("v1.tasks")
	bucketArtifacts = []byte("v1.artifacts")

	keyMeta        = []byte("meta")
	subBucketItems = []byte("entries")
	subBucketTasks = []byte("tasks")
)

// seqLen is the length of an encoded sequence number.
const seqLen = 8

// encodeSeq returns the 8-byte big-endian form of seq, whose bytes.Compare order is the
// numeric order.
func encodeSeq(seq uint64) []byte {
	b := make([]byte, seqLen)
	binary.BigEndian.PutUint64(b, seq)
	return b
}

// decodeSeq is the inverse of encodeSeq; ok is false unless b is exactly 8 bytes.
func decodeSeq(b []byte) (seq uint64, ok bool) {
	if len(b) != seqLen {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// taskKey returns taskID ‖ 0x00 ‖ seq, the key of a conversation's "tasks" bucket. Task
// ids hold no control characters, so the 0x00 separator is unambiguous and all keys of
// one task sort together, in seq order.
func taskKey(taskID string, seq uint64) []byte {
	b := make([]byte, 0, len(taskID)+1+seqLen)
	b = append(b, taskID...)
	b = append(b, 0)
	return append(b, encodeSeq(seq)...)
}

// taskPrefix is the common prefix of every key of taskID in a "tasks" bucket.
func taskPrefix(taskID string) []byte {
	return append([]byte(taskID), 0)
}

// splitTaskKey is the inverse of taskKey.
func splitTaskKey(k []byte) (taskID string, seq uint64, ok bool) {
	if len(k) < seqLen+1 || k[len(k)-seqLen-1] != 0 {
		return "", 0, false
	}
	id := k[:len(k)-seqLen-1]
	if bytes.IndexByte(id, 0) >= 0 {
		return "", 0, false
	}
	seq, _ = decodeSeq(k[len(k)-seqLen:])
	return string(id), seq, true
}

const refPrefix = "sha256:"

// parseRef returns the hex digest of an artifact reference "sha256:<64 lowercase hex>".
func parseRef(ref string) (digest string, ok bool) {
	d, found := strings.CutPrefix(ref, refPrefix)
	if !found || len(d) != 64 || strings.ToLower(d) != d {
		return "", false
	}
	if _, err := hex.DecodeString(d); err != nil {
		return "", false
	}
	return d, true
}
