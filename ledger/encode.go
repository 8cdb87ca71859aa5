package ledger

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/a2a-gateway/gateway/a2a"
)

// appendEntryJSON appends json.Marshal(e) to dst, byte for byte, without reflection:
// the field order and omitempty rules of Entry's and Part's tags, strings escaped as
// encoding/json escapes them (HTML-safe: <, >, & as \u003c, \u003e, \u0026; U+2028 and
// U+2029 escaped; invalid UTF-8 as \ufffd), JSON values (metadata, data) compacted and
// HTML-escaped, raw bytes in standard base64, createdAt through time.Time.MarshalJSON.
// It fails where json.Marshal fails (a JSON value that is not valid, a time whose year is
// outside 0..9999). TestAppendEntryJSON and FuzzAppendEntryJSON compare the two; Verify
// recomputes every stored hash with encoding/json, so a difference could not go
// unnoticed.
func appendEntryJSON(dst []byte, e *Entry) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = a2a.AppendJSONString(dst, e.ID)
	dst = append(dst, `,"contextId":`...)
	dst = a2a.AppendJSONString(dst, e.ContextID)
	dst = append(dst, `,"owner":`...)
	dst = a2a.AppendJSONString(dst, e.Owner)
	dst = appendOptString(dst, `,"taskId":`, e.TaskID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendUint(dst, e.Epoch, 10)
	dst = append(dst, `,"kind":`...)
	dst = a2a.AppendJSONString(dst, string(e.Kind))
	dst = append(dst, `,"trust":`...)
	dst = a2a.AppendJSONString(dst, string(e.Trust))
	dst = append(dst, `,"visibility":`...)
	dst = a2a.AppendJSONString(dst, string(e.Visibility))
	dst = appendOptString(dst, `,"actor":`, e.Actor)
	t, err := e.CreatedAt.MarshalJSON()
	if err != nil {
		return dst, err
	}
	dst = append(dst, `,"createdAt":`...)
	dst = append(dst, t...)
	dst = appendOptString(dst, `,"messageId":`, e.MessageID)
	dst = appendOptString(dst, `,"role":`, e.Role)
	dst = appendOptString(dst, `,"state":`, e.State)
	if len(e.Parts) > 0 {
		dst = append(dst, `,"parts":[`...)
		for i := range e.Parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendPartJSON(dst, &e.Parts[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	if dst, err = appendOptValue(dst, `,"metadata":`, e.Metadata); err != nil {
		return dst, err
	}
	dst = appendOptString(dst, `,"correlationId":`, e.CorrelationID)
	dst = appendOptString(dst, `,"causationId":`, e.CausationID)
	dst = appendOptString(dst, `,"prevHash":`, e.PrevHash)
	dst = appendOptString(dst, `,"hash":`, e.Hash)
	return append(dst, '}'), nil
}

func appendPartJSON(dst []byte, p *Part) ([]byte, error) {
	dst = append(dst, `{"kind":`...)
	dst = a2a.AppendJSONString(dst, p.Kind)
	dst = appendOptString(dst, `,"text":`, p.Text)
	var err error
	if dst, err = appendOptValue(dst, `,"data":`, p.Data); err != nil {
		return dst, err
	}
	if len(p.Raw) > 0 {
		dst = append(dst, `,"raw":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, p.Raw)
		dst = append(dst, '"')
	}
	dst = appendOptString(dst, `,"url":`, p.URL)
	dst = appendOptString(dst, `,"mediaType":`, p.MediaType)
	dst = appendOptString(dst, `,"filename":`, p.Filename)
	if dst, err = appendOptValue(dst, `,"metadata":`, p.Metadata); err != nil {
		return dst, err
	}
	dst = appendOptString(dst, `,"artifactRef":`, p.ArtifactRef)
	if p.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, p.Size, 10)
	}
	return append(dst, '}'), nil
}

// appendOptString appends key and s as a JSON string unless s is empty (omitempty).
func appendOptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return a2a.AppendJSONString(append(dst, key...), s)
}

// appendOptValue appends key and the JSON value v as encoding/json writes a
// json.RawMessage (compacted, HTML-escaped) unless v is empty (omitempty). An invalid
// value is an error, as json.Marshal reports it.
func appendOptValue(dst []byte, key string, v json.RawMessage) ([]byte, error) {
	if len(v) == 0 {
		return dst, nil
	}
	out, err := a2a.AppendJSONValue(append(dst, key...), v)
	if err != nil {
		return dst, err
	}
	return out, nil
}
