package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// An entry's stored encoding and its hash, made in two steps: the canonical JSON of the
// entry without the fields only the write transaction knows (a template, encoded in the
// caller's goroutine by Append's prepare), then those fields spliced in and the hash
// computed (fill, in the committer).

// template is an entry's canonical JSON cut where the fields that only the write
// transaction knows (seq, epoch, prevHash, hash) go, so that the expensive encoding runs in
// the caller's goroutine and the committer only splices and hashes. The first fill splices
// in place and hands the buffer out in its frame; a later one (the head moved since the
// guess, heads.go) copies head and tail into a new buffer.
type template struct {
	b         []byte // frameRoom bytes of room, then the encoding
	head      int    // b[frameRoom:head] is {"id":…,"contextId":…,"owner":…[,"taskId":…]
	tail, end int    // b[tail:end] is ,"kind":… up to the last field before prevHash, without the closing brace
	used      bool   // b went out in a frame: fills copy
}

// frameRoom is the room in front of an entry's encoding in a frame: at least a log
// record's prefix (1+hashLen+2 uvarints: 53 bytes) and a prevHash (64 hex digits).
const frameRoom = 64

// fillRoom is what a fill adds to a template's encoding, at most: the digits of seq and
// epoch, the prevHash and hash members.
const fillRoom = 2*20 + len(prevHashField) + 64 + 1 + hashSuffixLen

// frame is an entry's stored encoding, b[frameRoom:], with room in front of it, where
// the log record's prefix is written so that the encoding is stored without a copy
// (logRecordIn).
type frame struct{ b []byte }

// stored returns the entry's stored encoding.
func (f frame) stored() []byte { return f.b[frameRoom:] }

// entrySizeHint is a capacity that usually holds e's encoding: its strings and part
// content, escaping aside, and the field names.
func entrySizeHint(e *Entry) int {
	n := 320 + len(e.ID) + len(e.ContextID) + len(e.Owner) + len(e.TaskID) + len(e.Actor) +
		len(e.MessageID) + len(e.State) + len(e.Metadata) + len(e.CorrelationID) + len(e.CausationID) +
		len(e.TraceID) + len(e.SpanID)
	for i := range e.Parts {
		p := &e.Parts[i]
		n += 120 + len(p.Text) + len(p.Data) + len(p.Raw)*4/3 + len(p.URL) + len(p.MediaType) +
			len(p.Filename) + len(p.Metadata) + len(p.ArtifactRef)
	}
	return n
}

// seqEpochZero is how encoding/json writes Seq and Epoch when both are zero. A JSON string
// never holds an unescaped quote, so its first occurrence is the fields themselves.
var seqEpochZero = []byte(`,"seq":0,"epoch":0`)

// newTemplate encodes e (whose Seq, Epoch, PrevHash and Hash must be zero) into a template.
func newTemplate(e *Entry) (template, error) {
	b, err := appendEntryJSON(make([]byte, frameRoom, frameRoom+entrySizeHint(e)+fillRoom), e)
	if err != nil {
		return template{}, err
	}
	enc := b[frameRoom:]
	i := bytes.Index(enc, seqEpochZero)
	if i < 0 || enc[len(enc)-1] != '}' {
		return template{}, fmt.Errorf("unexpected encoding %.80q", enc)
	}
	if int64(len(enc))+200 > bolt.MaxValueSize {
		return template{}, fmt.Errorf("%d bytes encoded, the limit is %d", len(enc), bolt.MaxValueSize)
	}
	return template{b: b, head: frameRoom + i, tail: frameRoom + i + len(seqEpochZero), end: len(b) - 1}, nil
}

// fill returns the stored JSON of the entry with seq, epoch and prevHash (hex, or "" for
// seq 1) set, in its frame, and its hash:
// hash = hex(sha256(prevHash ‖ canonical JSON with hash empty)), and the stored JSON is that
// canonical JSON with the "hash" member added. Both equal encoding/json's encoding of the
// entry (hash is Entry's last field, prevHash the one before it, both omitted when empty);
// the tests and Verify check it.
func (t *template) fill(seq, epoch uint64, prevHash string) (frame, string) {
	var buf [64]byte
	mid := append(buf[:0], `,"seq":`...)
	mid = strconv.AppendUint(mid, seq, 10)
	mid = append(mid, `,"epoch":`...)
	mid = strconv.AppendUint(mid, epoch, 10)
	tailLen := t.end - t.tail
	n := t.head + len(mid) + tailLen
	size := n + len(prevHashField) + len(prevHash) + 1 + hashSuffixLen
	var b []byte
	if !t.used && size <= cap(t.b) { // in place: the tail moves right to make room for the digits
		b = t.b[:n]
		copy(b[t.head+len(mid):], t.b[t.tail:t.end])
		copy(b[t.head:], mid)
	} else {
		b = make([]byte, frameRoom, size)
		b = append(b, t.b[frameRoom:t.head]...)
		b = append(b, mid...)
		b = append(b, t.b[t.tail:t.end]...)
	}
	if !t.used { // b is the template's buffer from now on; nothing writes its head or tail again
		t.b, t.tail, t.end, t.used = b, t.head+len(mid), n, true
	}
	if prevHash != "" {
		b = append(b, prevHashField...)
		b = append(b, prevHash...)
		b = append(b, '"')
	}
	sum := canonicalSum(b, prevHash)
	b = append(b, hashField...)
	at := len(b)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, `"}`...)
	return frame{b}, string(b[at : at+2*sha256.Size])
}

// canonicalSum returns sha256(prevHash ‖ b[frameRoom:] ‖ "}"), b being a frame's canonical
// JSON without its closing brace and with room for it: in one piece, prevHash copied into
// the room right before the encoding and the brace after it, where the hash member goes
// next.
func canonicalSum(b []byte, prevHash string) [sha256.Size]byte {
	if len(prevHash) > frameRoom || len(b) == cap(b) {
		var sum [sha256.Size]byte
		h := sha256.New()
		h.Write([]byte(prevHash))
		h.Write(b[frameRoom:])
		h.Write([]byte{'}'})
		return [sha256.Size]byte(h.Sum(sum[:0]))
	}
	start := frameRoom - len(prevHash)
	copy(b[start:frameRoom], prevHash)
	b = append(b, '}')
	return sha256.Sum256(b[start:])
}

// chainHash is hex(sha256(prevHash ‖ canonical)).
func chainHash(prevHash string, canonical []byte) string {
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}
