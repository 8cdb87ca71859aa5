package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeStored decodes a stored entry (what appendEntryJSON wrote) into e, as
// json.Unmarshal does, without reflection: reads decode every entry they return, and
// encoding/json's decoder was most of the cost of reading the last 20 entries. Anything
// it does not expect (an escaped string, null, an empty array, an unknown field) makes it
// fall back to json.Unmarshal, so the result is always json.Unmarshal's;
// FuzzDecodeStored compares the two.
func decodeStored(v []byte, e *Entry) error {
	var fast Entry
	if d := (entryDecoder{b: v}); d.entry(&fast) && d.i == len(v) {
		*e = fast
		return nil
	}
	return json.Unmarshal(v, e)
}

// entryDecoder reads one stored entry; every method returns false on anything unexpected.
type entryDecoder struct {
	b []byte
	i int
}

func (d *entryDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a JSON string without escapes.
func (d *entryDecoder) str() (string, bool) {
	raw, ok := d.rawStr()
	return string(raw), ok
}

// rawStr reads a JSON string without escapes and returns its bytes (aliasing d.b).
func (d *entryDecoder) rawStr() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	j := bytes.IndexByte(d.b[d.i:], '"')
	if j < 0 || bytes.IndexByte(d.b[d.i:d.i+j], '\\') >= 0 {
		return nil, false
	}
	s := d.b[d.i : d.i+j]
	ascii := true
	for _, c := range s {
		if c < 0x20 {
			return nil, false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(s) {
		return nil, false // json.Unmarshal replaces invalid UTF-8
	}
	d.i += j + 1
	return s, true
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

func (d *entryDecoder) entry(e *Entry) bool {
	return d.fields(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "id":
			e.ID, ok = d.str()
		case "contextId":
			e.ContextID, ok = d.str()
		case "owner":
			e.Owner, ok = d.str()
		case "taskId":
			e.TaskID, ok = d.str()
		case "seq":
			e.Seq, ok = d.uint()
		case "epoch":
			e.Epoch, ok = d.uint()
		case "kind":
			var s string
			s, ok = d.str()
			e.Kind = Kind(s)
		case "trust":
			var s string
			s, ok = d.str()
			e.Trust = Trust(s)
		case "visibility":
			var s string
			s, ok = d.str()
			e.Visibility = Visibility(s)
		case "actor":
			e.Actor, ok = d.str()
		case "createdAt":
			ok = d.time(e)
		case "messageId":
			e.MessageID, ok = d.str()
		case "role":
			e.Role, ok = d.str()
		case "state":
			e.State, ok = d.str()
		case "parts":
			ok = d.parts(e)
		case "metadata":
			e.Metadata, ok = d.value()
		case "correlationId":
			e.CorrelationID, ok = d.str()
		case "causationId":
			e.CausationID, ok = d.str()
		case "prevHash":
			e.PrevHash, ok = d.str()
		case "hash":
			e.Hash, ok = d.str()
		}
		return ok
	})
}

func (d *entryDecoder) uint() (uint64, bool) {
	digits := d.number()
	if len(digits) == 0 || digits[0] == '-' || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	return n, err == nil
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
		var p Part
		if !d.part(&p) {
			return false
		}
		e.Parts = append(e.Parts, p)
	}
	return true
}

func (d *entryDecoder) part(p *Part) bool {
	return d.fields(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "kind":
			p.Kind, ok = d.str()
		case "text":
			p.Text, ok = d.str()
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
			p.URL, ok = d.str()
		case "mediaType":
			p.MediaType, ok = d.str()
		case "filename":
			p.Filename, ok = d.str()
		case "metadata":
			p.Metadata, ok = d.value()
		case "artifactRef":
			p.ArtifactRef, ok = d.str()
		case "size":
			digits := d.number()
			n, err := strconv.ParseInt(string(digits), 10, 64)
			p.Size, ok = n, err == nil && len(digits) > 0 && digits[0] != '0' && !bytes.HasPrefix(digits, []byte("-0"))
		}
		return ok
	})
}
