package turn

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/a2a"
)

// ListTasks pages by cursor (a2a-spec v1.0 §3.1.4: "MUST use cursor-based pagination"):
// tasks are listed newest status first, ties by task id, and a page token is the
// position of the last task of its page in that order. The next page holds the tasks
// after that position in the listing as it stands when the page is asked for. So:
//
//   - a task that exists, unchanged, across the reads of two pages is on exactly one of
//     them: inserting or updating other tasks between the reads never repeats it or
//     skips it (an offset did: a task inserted between two pages moved every later one);
//   - a task created between the reads has the newest status, before the cursor: this
//     pass does not show it (the next pass from the first page does);
//   - a task whose status changes between the reads moves to the front: if it was not
//     listed yet it is not on this pass's later pages either. The spec leaves that open;
//     a client that must see every change lists again from the first page, or with
//     statusTimestampAfter set to the time its previous pass began;
//   - TotalSize counts every task that passes the filters when the page is read.
//
// A token is opaque to the client: base64url of pageTokenVersion, the status timestamp
// (Unix seconds, nanoseconds), a hash of the filters it was issued for (contextId,
// status, statusTimestampAfter: a token is for the query that issued it; pageSize may
// change between pages) and the task id. One that does not decode as such, or comes with
// other filters, is refused with -32602 naming pageToken, and nothing is read.

// defaultPageSize is the page size of a ListTasks that names none (the wire decoder
// fills in the spec's 50 itself).
const defaultPageSize = 50

// pageTokenVersion is the first byte of a page token.
const pageTokenVersion = 1

// maxTokenTaskID bounds the task id a page token holds.
const maxTokenTaskID = 1024

// pageCursor is a position in the listing: the status timestamp and id of a task.
type pageCursor struct {
	ts time.Time
	id string
}

// cursorOf is the position of task t.
func cursorOf(t *a2a.Task) pageCursor { return pageCursor{ts: t.Status.Timestamp, id: t.ID} }

// compareListed orders tasks as ListTasks lists them: newest status first, then by id.
func compareListed(a, b pageCursor) int {
	if c := b.ts.Compare(a.ts); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// filterSum is the hash of the filters of p that a page token is bound to.
func filterSum(p *a2a.ListTasksParams) [8]byte {
	h := sha256.New()
	h.Write([]byte(p.ContextID))
	h.Write([]byte{0})
	h.Write([]byte(p.Status))
	h.Write([]byte{0})
	h.Write([]byte(p.StatusTimestampAfter.UTC().Format(time.RFC3339Nano)))
	var sum [8]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// encodePageToken is the token of the page after cursor c for the query p.
func encodePageToken(c pageCursor, p *a2a.ListTasksParams) string {
	b := []byte{pageTokenVersion}
	b = binary.BigEndian.AppendUint64(b, uint64(c.ts.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.ts.Nanosecond()))
	sum := filterSum(p)
	b = append(b, sum[:]...)
	b = append(b, c.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken returns the cursor of p.PageToken (nil: the first page), or the
// -32602 refusal of a token this server did not issue for this query.
func decodePageToken(p *a2a.ListTasksParams) (*pageCursor, error) {
	if p.PageToken == "" {
		return nil, nil
	}
	const head = 1 + 8 + 4 + 8
	b, err := base64.RawURLEncoding.DecodeString(p.PageToken)
	if err != nil || len(b) <= head || len(b) > head+maxTokenTaskID || b[0] != pageTokenVersion ||
		binary.BigEndian.Uint32(b[9:]) >= uint32(time.Second) || !utf8.Valid(b[head:]) {
		return nil, &paramError{Field: "pageToken", Reason: "is not a page token this server issued (pass the nextPageToken of the previous page as it was, or none for the first page)"}
	}
	if sum := filterSum(p); string(b[13:head]) != string(sum[:]) {
		return nil, &paramError{Field: "pageToken", Reason: "was issued for other filters: contextId, status and statusTimestampAfter must stay those of the first page"}
	}
	ts := time.Unix(int64(binary.BigEndian.Uint64(b[1:])), int64(binary.BigEndian.Uint32(b[9:])))
	return &pageCursor{ts: ts, id: string(b[head:])}, nil
}

// pageOf returns the page of at most size tasks of sorted (in listing order) that
// follows after (nil: from the first), and the cursor of the page after it (nil: none).
func pageOf(sorted []a2a.Task, after *pageCursor, size int) ([]a2a.Task, *pageCursor) {
	start := 0
	if after != nil {
		for start < len(sorted) && compareListed(cursorOf(&sorted[start]), *after) <= 0 {
			start++
		}
	}
	end := min(start+size, len(sorted))
	if end == len(sorted) {
		return sorted[start:end], nil
	}
	next := cursorOf(&sorted[end-1])
	return sorted[start:end], &next
}
