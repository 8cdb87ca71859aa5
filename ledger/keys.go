package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// Keys shared by the layout (log.go) and its indexes: sequence numbers, the task index,
// artifact references. Task ids hold no control characters, so a task's own key and
// those of its entries sort together, and time-ordered task ids (the gateway's UUIDv7)
// put the keys of new tasks at the right edge of the task index, where the appends of one
// commit share their pages. A conversation's tasks are listed by following the
// previous-task links back from its head's last task, one key per task, so the head keeps
// no list.
var (
	bucketTasks     = []byte("v1.tasks")
	bucketArtifacts = []byte("v1.artifacts")
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
