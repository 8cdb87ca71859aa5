package ledger

import (
	"encoding/base64"
	"strconv"

	"github.com/a2a-gateway/gateway/internal/jsonenc"
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
	dst = jsonenc.AppendString(dst, e.ID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonenc.AppendString(dst, e.ContextID)
	dst = append(dst, `,"owner":`...)
	dst = jsonenc.AppendString(dst, e.Owner)
	dst = jsonenc.AppendOptString(dst, `,"taskId":`, e.TaskID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendUint(dst, e.Epoch, 10)
	dst = append(dst, `,"kind":`...)
	dst = jsonenc.AppendString(dst, string(e.Kind))
	dst = append(dst, `,"trust":`...)
	dst = jsonenc.AppendString(dst, string(e.Trust))
	dst = append(dst, `,"visibility":`...)
	dst = jsonenc.AppendString(dst, string(e.Visibility))
	dst = jsonenc.AppendOptString(dst, `,"actor":`, e.Actor)
	t, err := e.CreatedAt.MarshalJSON()
	if err != nil {
		return dst, err
	}
	dst = append(dst, `,"createdAt":`...)
	dst = append(dst, t...)
	dst = jsonenc.AppendOptString(dst, `,"messageId":`, e.MessageID)
	dst = jsonenc.AppendOptString(dst, `,"role":`, e.Role)
	dst = jsonenc.AppendOptString(dst, `,"state":`, e.State)
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
	if dst, err = jsonenc.AppendOptValue(dst, `,"metadata":`, e.Metadata); err != nil {
		return dst, err
	}
	dst = jsonenc.AppendOptString(dst, `,"correlationId":`, e.CorrelationID)
	dst = jsonenc.AppendOptString(dst, `,"causationId":`, e.CausationID)
	dst = jsonenc.AppendOptString(dst, `,"traceId":`, e.TraceID)
	dst = jsonenc.AppendOptString(dst, `,"spanId":`, e.SpanID)
	dst = jsonenc.AppendOptString(dst, `,"prevHash":`, e.PrevHash)
	dst = jsonenc.AppendOptString(dst, `,"hash":`, e.Hash)
	return append(dst, '}'), nil
}

func appendPartJSON(dst []byte, p *Part) ([]byte, error) {
	dst = append(dst, `{"kind":`...)
	dst = jsonenc.AppendString(dst, p.Kind)
	dst = jsonenc.AppendOptString(dst, `,"text":`, p.Text)
	var err error
	if dst, err = jsonenc.AppendOptValue(dst, `,"data":`, p.Data); err != nil {
		return dst, err
	}
	if len(p.Raw) > 0 {
		dst = append(dst, `,"raw":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, p.Raw)
		dst = append(dst, '"')
	}
	dst = jsonenc.AppendOptString(dst, `,"url":`, p.URL)
	dst = jsonenc.AppendOptString(dst, `,"mediaType":`, p.MediaType)
	dst = jsonenc.AppendOptString(dst, `,"filename":`, p.Filename)
	if dst, err = jsonenc.AppendOptValue(dst, `,"metadata":`, p.Metadata); err != nil {
		return dst, err
	}
	dst = jsonenc.AppendOptString(dst, `,"artifactRef":`, p.ArtifactRef)
	if p.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, p.Size, 10)
	}
	return append(dst, '}'), nil
}
