package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// Hand-written encoders for the hot paths (a send's result, stream events, the ledger's
// entries): encoding/json's output byte for byte, without reflection. Their tests and
// fuzz targets compare them with json.Marshal.

// jsonSafe[b] is true for the ASCII bytes encoding/json writes unescaped in a string with
// HTML escaping on: 0x20..0x7f except ", \, <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as encoding/json encodes a string (with HTML escaping, as
// json.Marshal does): the same escapes in the same cases (", \, \b, \f, \n, \r, \t, other
// control bytes and <, >, & as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, each byte
// of invalid UTF-8 as \ufffd).
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none of them needs a look (most text).
		for i+8 <= len(s) && !mayEscape(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // the other control bytes, and <, >, &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load64 returns the 8 bytes of s at i as a little-endian word (one load on amd64).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// mayEscape reports whether a byte of w is one AppendJSONString does not copy as it is
// without a closer look: below 0x20, ", \, <, >, & or non-ASCII (bit tricks from
// "Bit Twiddling Hacks": a byte is zero, or less than n, exactly when the word has one).
func mayEscape(w uint64) bool {
	zero := func(v uint64) uint64 { return (v - lsb) &^ v & msb }
	return ((w-0x20*lsb)&^w|w)&msb|zero(w^('"'*lsb))|zero(w^('\\'*lsb))|
		zero(w^('<'*lsb))|zero(w^('>'*lsb))|zero(w^('&'*lsb)) != 0
}

// AppendJSONValue appends the JSON value v as json.Marshal writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped. An invalid value is an error (and
// dst comes back as it was).
func AppendJSONValue(dst []byte, v json.RawMessage) ([]byte, error) {
	start := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, v); err != nil {
		return dst[:start], err
	}
	dst = buf.Bytes()
	if bytes.ContainsAny(dst[start:], "<>&\u2028\u2029") {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, dst[start:])
		dst = append(dst[:start], esc.Bytes()...)
	}
	return dst, nil
}

// appendOptString appends key and s unless s is empty (omitempty).
func appendOptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return AppendJSONString(dst, s)
}

// appendOptValue appends key and v unless v is empty (omitempty of a json.RawMessage).
func appendOptValue(dst []byte, key string, v json.RawMessage) ([]byte, error) {
	if len(v) == 0 {
		return dst, nil
	}
	return AppendJSONValue(append(dst, key...), v)
}

// appendOptMap appends key and m (json.Marshal's encoding: keys sorted) unless m is
// empty (omitempty of a map).
func appendOptMap(dst []byte, key string, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return dst, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return dst, err
	}
	return append(append(dst, key...), b...), nil
}

// appendOptStrings appends key and ss unless ss is empty (omitempty of a slice).
func appendOptStrings(dst []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendOptList appends key and xs as a JSON array, each element by f, unless xs is
// empty (omitempty of a slice).
func appendOptList[T any](dst []byte, key string, xs []T, f func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if len(xs) == 0 {
		return dst, nil
	}
	dst = append(append(dst, key...), '[')
	for i := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = f(dst, &xs[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendOptBool appends key and *b unless b is nil (omitempty of a pointer).
func appendOptBool(dst []byte, key string, b *bool) []byte {
	if b == nil {
		return dst
	}
	dst = append(dst, key...)
	if *b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// The wire types, in their field order and with their tags' omitempty rules.

func appendWireFile(dst []byte, f *wireFile) []byte {
	dst = append(dst, '{')
	n := len(dst)
	if len(f.Bytes) > 0 {
		dst = append(dst, `,"bytes":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, f.Bytes)
		dst = append(dst, '"')
	}
	dst = appendOptString(dst, `,"uri":`, f.URI)
	dst = appendOptString(dst, `,"mimeType":`, f.MimeType)
	dst = appendOptString(dst, `,"name":`, f.Name)
	return closeObject(dst, n)
}

// closeObject ends an object whose members were appended after position n, each with a
// leading comma: the first comma goes.
func closeObject(dst []byte, n int) []byte {
	if len(dst) > n {
		dst = append(dst[:n], dst[n+1:]...)
	}
	return append(dst, '}')
}

func appendWirePart(dst []byte, p *wirePart) ([]byte, error) {
	dst = append(dst, '{')
	n := len(dst)
	dst = appendOptString(dst, `,"kind":`, p.Kind)
	if p.Text != nil {
		dst = append(dst, `,"text":`...)
		dst = AppendJSONString(dst, *p.Text)
	}
	if p.File != nil {
		dst = append(dst, `,"file":`...)
		dst = appendWireFile(dst, p.File)
	}
	var err error
	if dst, err = appendOptValue(dst, `,"raw":`, p.Raw); err != nil {
		return dst, err
	}
	if p.URL != nil {
		dst = append(dst, `,"url":`...)
		dst = AppendJSONString(dst, *p.URL)
	}
	if dst, err = appendOptValue(dst, `,"data":`, p.Data); err != nil {
		return dst, err
	}
	dst = appendOptString(dst, `,"mediaType":`, p.MediaType)
	dst = appendOptString(dst, `,"filename":`, p.Filename)
	if dst, err = appendOptMap(dst, `,"metadata":`, p.Metadata); err != nil {
		return dst, err
	}
	return closeObject(dst, n), nil
}

func appendWireParts(dst []byte, ps []wirePart) ([]byte, error) {
	if ps == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendWirePart(dst, &ps[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func appendWireMessage(dst []byte, m *wireMessage) ([]byte, error) {
	dst = append(dst, '{')
	n := len(dst)
	dst = appendOptString(dst, `,"kind":`, m.Kind)
	dst = append(dst, `,"messageId":`...)
	dst = AppendJSONString(dst, m.MessageID)
	dst = appendOptString(dst, `,"contextId":`, m.ContextID)
	dst = appendOptString(dst, `,"taskId":`, m.TaskID)
	dst = append(dst, `,"role":`...)
	dst = AppendJSONString(dst, m.Role)
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = appendWireParts(dst, m.Parts); err != nil {
		return dst, err
	}
	if dst, err = appendOptMap(dst, `,"metadata":`, m.Metadata); err != nil {
		return dst, err
	}
	dst = appendOptStrings(dst, `,"extensions":`, m.Extensions)
	dst = appendOptStrings(dst, `,"referenceTaskIds":`, m.ReferenceTaskIDs)
	return closeObject(dst, n), nil
}

func appendWireStatus(dst []byte, s *wireStatus) ([]byte, error) {
	dst = append(dst, `{"state":`...)
	dst = AppendJSONString(dst, s.State)
	if s.Message != nil {
		dst = append(dst, `,"message":`...)
		var err error
		if dst, err = appendWireMessage(dst, s.Message); err != nil {
			return dst, err
		}
	}
	dst = appendOptString(dst, `,"timestamp":`, s.Timestamp)
	return append(dst, '}'), nil
}

func appendWireArtifact(dst []byte, a *wireArtifact) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = AppendJSONString(dst, a.ArtifactID)
	dst = appendOptString(dst, `,"name":`, a.Name)
	dst = appendOptString(dst, `,"description":`, a.Description)
	dst = append(dst, `,"parts":`...)
	var err error
	if dst, err = appendWireParts(dst, a.Parts); err != nil {
		return dst, err
	}
	if dst, err = appendOptMap(dst, `,"metadata":`, a.Metadata); err != nil {
		return dst, err
	}
	dst = appendOptStrings(dst, `,"extensions":`, a.Extensions)
	return append(dst, '}'), nil
}

func appendWireTask(dst []byte, t *wireTask) ([]byte, error) {
	dst = append(dst, '{')
	n := len(dst)
	dst = appendOptString(dst, `,"kind":`, t.Kind)
	dst = append(dst, `,"id":`...)
	dst = AppendJSONString(dst, t.ID)
	dst = append(dst, `,"contextId":`...)
	dst = AppendJSONString(dst, t.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = appendWireStatus(dst, &t.Status); err != nil {
		return dst, err
	}
	if dst, err = appendOptList(dst, `,"artifacts":`, t.Artifacts, appendWireArtifact); err != nil {
		return dst, err
	}
	if dst, err = appendOptList(dst, `,"history":`, t.History, appendWireMessage); err != nil {
		return dst, err
	}
	if dst, err = appendOptMap(dst, `,"metadata":`, t.Metadata); err != nil {
		return dst, err
	}
	return closeObject(dst, n), nil
}

// appendUpdateHead opens an update event's object with its kind, taskId and contextId,
// and returns where its members start (for closeObject).
func appendUpdateHead(dst []byte, kind, taskID, contextID string) ([]byte, int) {
	dst = append(dst, '{')
	n := len(dst)
	dst = appendOptString(dst, `,"kind":`, kind)
	dst = AppendJSONString(append(dst, `,"taskId":`...), taskID)
	dst = AppendJSONString(append(dst, `,"contextId":`...), contextID)
	return dst, n
}

func appendWireStatusUpdate(dst []byte, u *wireStatusUpdate) ([]byte, error) {
	dst, n := appendUpdateHead(dst, u.Kind, u.TaskID, u.ContextID)
	dst = append(dst, `,"status":`...)
	var err error
	if dst, err = appendWireStatus(dst, &u.Status); err != nil {
		return dst, err
	}
	dst = appendOptBool(dst, `,"final":`, u.Final)
	if dst, err = appendOptMap(dst, `,"metadata":`, u.Metadata); err != nil {
		return dst, err
	}
	return closeObject(dst, n), nil
}

func appendWireArtifactUpdate(dst []byte, u *wireArtifactUpdate) ([]byte, error) {
	dst, n := appendUpdateHead(dst, u.Kind, u.TaskID, u.ContextID)
	dst = append(dst, `,"artifact":`...)
	var err error
	if dst, err = appendWireArtifact(dst, &u.Artifact); err != nil {
		return dst, err
	}
	dst = appendOptBool(dst, `,"append":`, u.Append)
	dst = appendOptBool(dst, `,"lastChunk":`, u.LastChunk)
	if dst, err = appendOptMap(dst, `,"metadata":`, u.Metadata); err != nil {
		return dst, err
	}
	return closeObject(dst, n), nil
}
