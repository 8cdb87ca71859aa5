package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// decodeInto decodes a stored entry (what appendEntryJSON wrote) into a zero e, as
// json.Unmarshal does, without reflection: reads decode every entry they return, and
// encoding/json's decoder was most of the cost of reading the last 20 entries. Anything
// it does not expect (an escaped string, null, an empty array, an unknown field) makes it
// fall back to json.Unmarshal, so the result is always json.Unmarshal's
// (FuzzDecodeStored compares the two). It reuses the strings of known (nil: none), with
// spans as the decoder's scratch, and returns the scratch as the entry left it.
func decodeInto(v []byte, e *Entry, known *knownStrings, spans []strSpan) ([]strSpan, error) {
	d := entryDecoder{b: v, known: known, spans: spans[:0]}
	if d.entry(e) && d.i == len(v) {
		return d.spans, nil
	}
	*e = Entry{}
	return d.spans, json.Unmarshal(v, e)
}

// knownStrings are strings a reader already holds that the fields of the entries it
// decodes often equal: the decoder reuses them rather than copy the bytes again.
type knownStrings struct {
	contextID, owner string    // the conversation's: every entry holds them
	link             [2]string // hash and prevHash of the entry decoded last: a neighbour's prevHash or hash
}

// entryReader decodes the entries one read of a conversation returns, checking each
// against its hash: the hash state, the decoder's scratch and the known strings go from one
// entry to the next.
type entryReader struct {
	key   string
	known knownStrings
	h     hash.Hash
	sum   [sha256.Size]byte
	hex   [2 * sha256.Size]byte
	spans []strSpan
}

// newEntryReader returns the reader of conversation key, whose head is m (nil: unknown).
// Release it when the read is done.
func newEntryReader(key string, m *metaRecord) *entryReader {
	r := readerPool.Get().(*entryReader)
	r.key = key
	if m != nil {
		r.known = knownStrings{contextID: m.ContextID, owner: m.Owner, link: [2]string{m.LastHash}}
	}
	return r
}

// release puts r back for another read; r must not be used after.
func (r *entryReader) release() {
	r.key, r.known = "", knownStrings{} // hold no entry's strings
	readerPool.Put(r)
}

var readerPool = sync.Pool{New: func() any { return &entryReader{h: sha256.New(), spans: make([]strSpan, 0, 32)} }}

// decode decodes the stored entry v at seq into e: the entry's bytes match its hash, it
// decodes, and it says seq. Errors: a [*ChainError] naming seq and what is wrong.
func (r *entryReader) decode(seq uint64, v []byte, e *Entry) error {
	if !r.hashMatches(v) {
		reason := entryBytesFault(v)
		if reason == "" {
			reason = "hash does not match the entry's bytes"
		}
		return &ChainError{Key: r.key, Seq: seq, Reason: reason}
	}
	var err error
	if r.spans, err = decodeInto(v, e, &r.known, r.spans); err != nil {
		return &ChainError{Key: r.key, Seq: seq, Reason: fmt.Sprintf("entry unreadable: %v", err)}
	}
	if e.Seq != seq {
		return &ChainError{Key: r.key, Seq: seq, Reason: fmt.Sprintf("entry says seq %d", e.Seq)}
	}
	r.known.link = [2]string{e.Hash, e.PrevHash}
	return nil
}

// hashMatches is entryBytesFault(v) == "" without allocating.
func (r *entryReader) hashMatches(v []byte) bool {
	_, _, ok := r.linkHashes(v)
	return ok
}

// linkHashes is entryHashes without allocating: the prevHash and hash v holds (aliasing
// it) and whether the hash, its last member, is sha256 of the prevHash, the bytes before
// the hash member and a closing brace. ok is false for an entry that does not end with
// its hash.
func (r *entryReader) linkHashes(v []byte) (prev, stored []byte, ok bool) {
	n := len(v) - hashSuffixLen
	if n < 1 || !bytes.HasPrefix(v[n:], []byte(hashField)) || !bytes.HasSuffix(v, []byte(`"}`)) {
		return nil, nil, false
	}
	stored = v[n+len(hashField) : len(v)-2]
	if p := n - len(prevHashField) - 64 - 1; p > 0 && bytes.HasPrefix(v[p:], []byte(prevHashField)) && v[n-1] == '"' {
		prev = v[p+len(prevHashField) : n-1]
	}
	r.h.Reset()
	r.h.Write(prev)
	r.h.Write(v[:n])
	r.h.Write(closingBrace)
	hex.Encode(r.hex[:], r.h.Sum(r.sum[:0]))
	return prev, stored, bytes.Equal(r.hex[:], stored)
}

var closingBrace = []byte{'}'}

// strSpan is a string field the decoder found (field, of part part for a part's): a
// value it already has (val), or the bytes b[start:end], which finish copies into the one
// string of all the entry's copied strings: one allocation per entry. It holds no
// pointer, so that the decoder's scratch costs the garbage collector nothing.
type strSpan struct {
	start, end int
	part       int32
	field      strField
	val        uint8 // valCopy, valEmpty, a known string, or valConst + an index in constants
}

// strField names a string field of an Entry or of a Part.
type strField uint8

const (
	fID strField = iota
	fContextID
	fOwner
	fTaskID
	fKind
	fTrust
	fVisibility
	fActor
	fMessageID
	fRole
	fState
	fCorrelationID
	fCausationID
	fTraceID
	fSpanID
	fPrevHash
	fHash
	fPartKind
	fPartText
	fPartURL
	fPartMediaType
	fPartFilename
	fPartArtifactRef
)

// strSpan.val
const (
	valCopy      = iota // the bytes
	valEmpty            // ""
	valContextID        // knownStrings.contextID
	valOwner            // knownStrings.owner
	valLink0            // knownStrings.link[0]
	valLink1            // knownStrings.link[1]
	valConst            // constants[val-valConst]
)

// ptr returns the field f of e (of its part part for a part's field).
func (f strField) ptr(e *Entry, part int32) *string {
	if f >= fPartKind {
		return f.partPtr(&e.Parts[part])
	}
	switch f {
	case fID:
		return &e.ID
	case fContextID:
		return &e.ContextID
	case fOwner:
		return &e.Owner
	case fTaskID:
		return &e.TaskID
	case fKind:
		return (*string)(&e.Kind)
	case fTrust:
		return (*string)(&e.Trust)
	case fVisibility:
		return (*string)(&e.Visibility)
	case fActor:
		return &e.Actor
	case fMessageID:
		return &e.MessageID
	case fRole:
		return &e.Role
	case fState:
		return &e.State
	case fCorrelationID:
		return &e.CorrelationID
	case fCausationID:
		return &e.CausationID
	case fTraceID:
		return &e.TraceID
	case fSpanID:
		return &e.SpanID
	case fPrevHash:
		return &e.PrevHash
	default:
		return &e.Hash
	}
}

func (f strField) partPtr(p *Part) *string {
	switch f {
	case fPartKind:
		return &p.Kind
	case fPartText:
		return &p.Text
	case fPartURL:
		return &p.URL
	case fPartMediaType:
		return &p.MediaType
	case fPartFilename:
		return &p.Filename
	default:
		return &p.ArtifactRef
	}
}

// entryDecoder reads one stored entry; every method returns false on anything unexpected.
type entryDecoder struct {
	b     []byte
	i     int
	known *knownStrings // nil: none
	spans []strSpan     // the strings found so far, set by finish
	total int           // the length of those to copy
}

func (d *entryDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a JSON string without escapes for field f (of part part, for a part's), which
// finish sets: to a string the decoder already has when it equals it (first names which
// to try: valContextID, valOwner, valLink0 for both hashes, valConst for the constants;
// valCopy for none), else to a copy.
func (d *entryDecoder) str(f strField, part int32, first uint8) bool {
	raw, ok := d.rawStr()
	if !ok {
		return false
	}
	s := strSpan{start: d.i - 1 - len(raw), end: d.i - 1, part: part, field: f, val: valCopy}
	switch {
	case len(raw) == 0:
		s.val = valEmpty
	case d.known != nil && first != valCopy:
		s.val = d.known.match(raw, first)
	case first == valConst:
		s.val = constant(raw)
	}
	if s.val == valCopy {
		d.total += len(raw)
	}
	d.spans = append(d.spans, s)
	return true
}

// match returns the val of the string first names (valLink0: either hash; valConst: any
// constant) if raw equals it, else valCopy.
func (k *knownStrings) match(raw []byte, first uint8) uint8 {
	switch first {
	case valContextID:
		if string(raw) == k.contextID {
			return valContextID
		}
	case valOwner:
		if string(raw) == k.owner {
			return valOwner
		}
	case valLink0:
		if string(raw) == k.link[0] {
			return valLink0
		}
		if string(raw) == k.link[1] {
			return valLink1
		}
	case valConst:
		return constant(raw)
	}
	return valCopy
}

// finish sets the fields of the strings found, in the order found (a field found twice
// keeps the last, as json.Unmarshal does), the copied ones cut from one string.
func (d *entryDecoder) finish(e *Entry) bool {
	var all string
	if d.total > 0 {
		var b strings.Builder
		b.Grow(d.total)
		for _, s := range d.spans {
			if s.val == valCopy {
				b.Write(d.b[s.start:s.end])
			}
		}
		all = b.String()
	}
	at := 0
	for _, s := range d.spans {
		var v string
		switch s.val {
		case valCopy:
			n := s.end - s.start
			v, at = all[at:at+n], at+n
		case valEmpty:
		case valContextID:
			v = d.known.contextID
		case valOwner:
			v = d.known.owner
		case valLink0:
			v = d.known.link[0]
		case valLink1:
			v = d.known.link[1]
		default:
			v = constants[s.val-valConst]
		}
		*s.field.ptr(e, s.part) = v
	}
	return true
}

// constants are the enumerations' values (kinds, trusts, visibilities, roles, part kinds):
// the decoder sets them without copying.
var constants = [...]string{
	string(KindUserMessage), string(KindAgentReply), string(KindReplyChunk), string(KindStatus),
	string(KindToolCall), string(KindToolResult), string(KindError), string(KindAudit),
	string(KindPushConfig), string(KindPushOutbox), string(KindPushAttempt),
	string(TrustPeerUntrusted), string(TrustOperator), string(TrustAgent), string(TrustSystem),
	string(VisibilityModel), string(VisibilityAudit), RoleUser, RoleAgent, PartText, PartData, PartFile,
	string(KindMemorySnapshot), string(TrustModel),
}

// constant returns valConst + the index in constants of the value raw spells (valCopy if
// none), without allocating.
func constant(raw []byte) uint8 {
	if len(raw) > 20 {
		return valCopy
	}
	for i, c := range constants {
		if string(raw) == c {
			return valConst + uint8(i)
		}
	}
	return valCopy
}

// rawStr reads a JSON string without escapes and returns its bytes (aliasing d.b).
func (d *entryDecoder) rawStr() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	b, start := d.b, d.i
	ascii := true
	for i := start; ; {
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i == len(b) {
			return nil, false
		}
		for end := min(i+8, len(b)); i < end; i++ {
			switch c := b[i]; {
			case c == '"':
				s := b[start:i]
				if !ascii && !utf8.Valid(s) {
					return nil, false // json.Unmarshal replaces invalid UTF-8
				}
				d.i = i + 1
				return s, true
			case c == '\\' || c < 0x20:
				return nil, false // an escape, or a control character JSON does not allow
			case c >= utf8.RuneSelf:
				ascii = false
			}
		}
	}
}

// special reports whether one of the eight bytes of x may be a quote, a backslash, a
// control character or not ASCII (it is exact for eight ASCII bytes): a byte below 0x20
// borrows when 0x20 is subtracted from it and sets its top bit (the lowest such byte
// whatever the bytes below it hold), a quote or backslash is a zero byte once x is xored
// with it (which borrows likewise), and a byte from 0x80 has its top bit set.
func special(x uint64) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	return ((x-0x20*ones)|((x^'"'*ones)-ones)|((x^'\\'*ones)-ones)|x)&tops != 0
}

// number reads the digits of a JSON number and returns them.
func (d *entryDecoder) number() []byte {
	start := d.i
	for d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] >= '0' && d.b[d.i] <= '9') {
		d.i++
	}
	return d.b[start:d.i]
}

// value reads a compact JSON value (object, array, string, number, literal) and returns
// a copy of its bytes.
func (d *entryDecoder) value() (json.RawMessage, bool) {
	start, depth := d.i, 0
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case '"':
			j := d.i + 1
			for j < len(d.b) && d.b[j] != '"' {
				if d.b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(d.b) {
				return nil, false
			}
			d.i = j + 1
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.done(start)
			}
			depth--
			d.i++
		case ',':
			if depth == 0 {
				return d.done(start)
			}
			d.i++
		default:
			d.i++
		}
		if depth == 0 && d.i < len(d.b) && (d.b[d.i] == ',' || d.b[d.i] == '}') {
			return d.done(start)
		}
	}
	return nil, false
}

func (d *entryDecoder) done(start int) (json.RawMessage, bool) {
	v := d.b[start:d.i]
	if len(v) == 0 || bytes.Equal(v, []byte("null")) || !json.Valid(v) {
		return nil, false
	}
	return bytes.Clone(v), true
}

// fields reads the members of an object, calling field for each key, up to its '}'.
func (d *entryDecoder) fields(field func(key []byte) bool) bool {
	if !d.byte('{') {
		return false
	}
	for first := true; !d.byte('}'); first = false {
		if !first && !d.byte(',') {
			return false
		}
		key, ok := d.rawStr()
		if !ok || !d.byte(':') || !field(key) {
			return false
		}
	}
	return true
}

// entry reads the entry into e (whose strings are set once all of it is read).
func (d *entryDecoder) entry(e *Entry) bool {
	return d.fields(func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.str(fID, 0, valCopy)
		case "contextId":
			return d.str(fContextID, 0, valContextID)
		case "owner":
			return d.str(fOwner, 0, valOwner)
		case "taskId":
			return d.str(fTaskID, 0, valCopy)
		case "seq":
			return d.uint(&e.Seq)
		case "epoch":
			return d.uint(&e.Epoch)
		case "kind":
			return d.str(fKind, 0, valConst)
		case "trust":
			return d.str(fTrust, 0, valConst)
		case "visibility":
			return d.str(fVisibility, 0, valConst)
		case "actor":
			return d.str(fActor, 0, valCopy)
		case "createdAt":
			return d.time(e)
		case "messageId":
			return d.str(fMessageID, 0, valCopy)
		case "role":
			return d.str(fRole, 0, valConst)
		case "state":
			return d.str(fState, 0, valCopy)
		case "parts":
			return d.parts(e)
		case "metadata":
			var ok bool
			e.Metadata, ok = d.value()
			return ok
		case "correlationId":
			return d.str(fCorrelationID, 0, valCopy)
		case "causationId":
			return d.str(fCausationID, 0, valCopy)
		case "traceId":
			return d.str(fTraceID, 0, valCopy)
		case "spanId":
			return d.str(fSpanID, 0, valCopy)
		case "prevHash":
			return d.str(fPrevHash, 0, valLink0)
		case "hash":
			return d.str(fHash, 0, valLink0)
		}
		return false
	}) && d.finish(e)
}

// uint reads a JSON unsigned integer (no sign, no leading zero, no fraction) into *n.
func (d *entryDecoder) uint(n *uint64) bool {
	digits := d.number()
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	var v uint64
	for _, c := range digits {
		if c < '0' || c > '9' || v > (math.MaxUint64-uint64(c-'0'))/10 {
			return false // a sign, or over 64 bits
		}
		v = v*10 + uint64(c-'0')
	}
	*n = v
	return true
}

func (d *entryDecoder) time(e *Entry) bool {
	start := d.i
	if _, ok := d.rawStr(); !ok {
		return false
	}
	return e.CreatedAt.UnmarshalJSON(d.b[start:d.i]) == nil
}

func (d *entryDecoder) parts(e *Entry) bool {
	if !d.byte('[') || d.i < len(d.b) && d.b[d.i] == ']' {
		return false
	}
	for first := true; !d.byte(']'); first = false {
		if !first && !d.byte(',') {
			return false
		}
		e.Parts = append(e.Parts, Part{})
		if !d.part(e, len(e.Parts)-1) {
			return false
		}
	}
	return true
}

// part reads part i of e.
func (d *entryDecoder) part(e *Entry, i int) bool {
	return d.fields(func(key []byte) bool {
		p := &e.Parts[i]
		var ok bool
		switch string(key) {
		case "kind":
			ok = d.str(fPartKind, int32(i), valConst)
		case "text":
			ok = d.str(fPartText, int32(i), valCopy)
		case "data":
			p.Data, ok = d.value()
		case "raw":
			var s []byte
			if s, ok = d.rawStr(); ok {
				p.Raw = make([]byte, base64.StdEncoding.DecodedLen(len(s)))
				n, err := base64.StdEncoding.Decode(p.Raw, s)
				p.Raw, ok = p.Raw[:n], err == nil && n > 0
			}
		case "url":
			ok = d.str(fPartURL, int32(i), valCopy)
		case "mediaType":
			ok = d.str(fPartMediaType, int32(i), valCopy)
		case "filename":
			ok = d.str(fPartFilename, int32(i), valCopy)
		case "metadata":
			p.Metadata, ok = d.value()
		case "artifactRef":
			ok = d.str(fPartArtifactRef, int32(i), valCopy)
		case "size":
			digits := d.number()
			n, err := strconv.ParseInt(string(digits), 10, 64)
			p.Size, ok = n, err == nil && len(digits) > 0 && digits[0] != '0' && !bytes.HasPrefix(digits, []byte("-0"))
		}
		return ok
	})
}
