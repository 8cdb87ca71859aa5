package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Storage layout (bbolt), seq as 8 bytes big-endian:
//
//	"v1/<64 hex>"/             one flat bucket per conversation, named contextid.Key(owner, contextId)
//	    "e" ‖ seq              → entry JSON
//	    "m"                    → metadata (metaRecord, binary)
//	"v1.tasks"/                task index (its bucket sequence holds layoutVersion)
//	    taskId                 → conversation key [‖ 0x00 ‖ previous taskId]: the task's
//	                             conversation and the task the conversation started before it
//	    taskId ‖ 0x00 ‖ seq    → empty: entry seq of that conversation belongs to the task
//	"v1.artifacts"/            sha256 hex → content (written once)
//	"v1.byid"/                 sha256(contextId) ‖ conversation key → empty (byid.go)
//
// Every key an append writes lies at or next to the right edge of its tree, so a commit
// dirties few pages. In a conversation, new entries go next to the metadata that the
// append rewrites ("e" sorts before "m"), usually in one leaf page. Task ids hold no
// control characters, so a task's own key and those of its entries sort together, and
// time-ordered task ids (the gateway's UUIDv7) put the keys of new tasks at the right edge
// of the task index, where the appends of one commit share their pages. A conversation's
// tasks are listed by following the previous-task links back from the metadata's last
// task, one key per task, so the conversation itself keeps no list.
//
// Earlier builds (layout 1, task index sequence 0) kept each conversation's entries and
// task index in sub-buckets and its metadata as JSON: Open moves such a file to this
// layout (upgrade.go).
//
// No other top-level name is ever read, listed or written.
var (
	bucketTasks     = []byte("v1.tasks")
	bucketArtifacts = []byte("v1.artifacts")

	keyMeta = []byte{prefixMeta}
)

// layoutVersion is the storage layout this build reads and writes.
const layoutVersion = 2

// Key prefixes inside a conversation bucket.
const (
	prefixEntry = 'e'
	prefixMeta  = 'm'
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

// entryKey returns "e" ‖ seq, the key of entry seq in its conversation's bucket.
func entryKey(seq uint64) []byte {
	b := make([]byte, 1+seqLen)
	b[0] = prefixEntry
	binary.BigEndian.PutUint64(b[1:], seq)
	return b
}

// entrySeq is the inverse of entryKey; ok is false for any other key.
func entrySeq(k []byte) (seq uint64, ok bool) {
	if len(k) != 1+seqLen || k[0] != prefixEntry {
		return 0, false
	}
	return decodeSeq(k[1:])
}

// entryPrefix is the common prefix of every entry key.
var entryPrefix = []byte{prefixEntry}

// taskKey returns taskID ‖ 0x00 ‖ seq, the key of the global task index that says entry
// seq belongs to taskID. Task ids hold no control characters, so the 0x00 separator is
// unambiguous and all keys of one task sort together, in seq order, right after the
// task's own key.
func taskKey(taskID string, seq uint64) []byte {
	b := make([]byte, 0, len(taskID)+1+seqLen)
	b = append(b, taskID...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, seq)
}

// taskPrefix is the common prefix of every entry key of taskID in the global task index.
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

// taskHead returns the value of taskID's own key in the task index: the key of its
// conversation, and the task the conversation started before it ("" if none).
func taskHead(convKey, prevTaskID string) []byte {
	b := make([]byte, 0, len(convKey)+1+len(prevTaskID))
	b = append(b, convKey...)
	if prevTaskID != "" {
		b = append(b, 0)
		b = append(b, prevTaskID...)
	}
	return b
}

// splitTaskHead is the inverse of taskHead. Conversation keys and task ids hold no 0x00.
func splitTaskHead(v []byte) (convKey, prevTaskID string) {
	k, prev, _ := bytes.Cut(v, []byte{0})
	return string(k), string(prev)
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
