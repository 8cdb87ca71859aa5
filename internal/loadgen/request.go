package loadgen

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// requestTemplate holds the constant pieces of a request body, JSON-encoded
// once per run so that a worker only splices in the ids. It is read-only
// after newRequestTemplate returns.
type requestTemplate struct {
	head   string // up to the value of "id"
	middle string // from after "id" up to the messageId value
	ctxKey string // from after the messageId value up to the contextId value
	tail   string // from after the contextId value to the end
	method string
	url    string // where the requests are POSTed
	noID   bool   // no JSON-RPC id: an HTTP+JSON body is the params alone
}

// newRequestTemplate builds the template for cfg's dialect, method and text.
func newRequestTemplate(cfg Config) requestTemplate {
	text, _ := json.Marshal(cfg.Message) // a string always marshals
	t := requestTemplate{head: `{"jsonrpc":"2.0","id":`, ctxKey: `","contextId":`, url: cfg.URL}
	if cfg.HTTPJSON {
		t.method, t.noID, t.head = "SendMessage", true, ""
		t.url = strings.TrimSuffix(cfg.URL, "/") + "/message:send"
		t.middle = `{"message":{"role":"ROLE_USER","messageId":"`
		t.tail = `,"parts":[{"text":` + string(text) + `}]}}`
		return t
	}
	switch {
	case cfg.Dialect == DialectV10 && cfg.Stream:
		t.method = "SendStreamingMessage"
	case cfg.Dialect == DialectV10:
		t.method = "SendMessage"
	case cfg.Stream:
		t.method = "message/stream"
	default:
		t.method = "message/send"
	}
	if cfg.Dialect == DialectV10 {
		t.middle = `,"method":"` + t.method + `","params":{"message":{"role":"ROLE_USER","messageId":"`
		t.tail = `,"parts":[{"text":` + string(text) + `}]}}}`
	} else {
		t.middle = `,"method":"` + t.method + `","params":{"message":{"kind":"message","role":"user","messageId":"`
		t.tail = `,"parts":[{"kind":"text","text":` + string(text) + `}]}}}`
	}
	return t
}

// appendBody appends the request with JSON-RPC id id (none over HTTP+JSON), a messageId derived
// from runRand and id, and the already JSON-quoted contextId ctxID.
func (t *requestTemplate) appendBody(dst []byte, id uint64, runRand uint64, ctxID []byte) []byte {
	if !t.noID {
		dst = append(dst, t.head...)
		dst = strconv.AppendUint(dst, id, 10)
	}
	dst = append(dst, t.middle...)
	dst = appendUUID(dst, runRand, id)
	dst = append(dst, t.ctxKey...)
	dst = append(dst, ctxID...)
	dst = append(dst, t.tail...)
	return dst
}

// appendUUID appends a version-4-shaped UUID made of hi and lo. It is unique
// per (hi, lo) as long as lo < 2^56.
func appendUUID(dst []byte, hi, lo uint64) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return append(dst, s[:]...)
}

// contextIndexes returns the contextId indexes worker uses, out of contexts
// ids shared by concurrency workers. With contexts >= concurrency the
// workers' sets are disjoint and together cover every index; otherwise
// worker uses the single index worker mod contexts.
func contextIndexes(contexts, concurrency, worker int) []int {
	if contexts < concurrency {
		return []int{worker % contexts}
	}
	idx := make([]int, 0, (contexts-worker+concurrency-1)/concurrency)
	for i := worker; i < contexts; i += concurrency {
		idx = append(idx, i)
	}
	return idx
}

// contextID is the i-th contextId of run runID.
func contextID(runID string, i int) string {
	return "bench-" + runID + "-" + strconv.Itoa(i)
}
