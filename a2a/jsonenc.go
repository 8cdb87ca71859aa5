package a2a

import (
	"encoding/base64"
	"encoding/json"

	"github.com/a2a-gateway/gateway/internal/jsonenc"
)

// Hand-written encoders for the hot paths (a send's result, stream events): encoding/json's
// output byte for byte, without reflection, over the string and value appenders of
// internal/jsonenc (which the ledger's entry encoder shares). Their tests and fuzz targets
// compare them with json.Marshal.

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
		dst = jsonenc.AppendString(dst, s)
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
	dst = jsonenc.AppendOptString(dst, `,"uri":`, f.URI)
	dst = jsonenc.AppendOptString(dst, `,"mimeType":`, f.MimeType)
	dst = jsonenc.AppendOptString(dst, `,"name":`, f.Name)
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
	dst = jsonenc.AppendOptString(dst, `,"kind":`, p.Kind)
	if p.Text != nil {
		dst = append(dst, `,"text":`...)
		dst = jsonenc.AppendString(dst, *p.Text)
	}
	if p.File != nil {
		dst = append(dst, `,"file":`...)
		dst = appendWireFile(dst, p.File)
	}
	var err error
	if dst, err = jsonenc.AppendOptValue(dst, `,"raw":`, p.Raw); err != nil {
		return dst, err
	}
	if p.URL != nil {
		dst = append(dst, `,"url":`...)
		dst = jsonenc.AppendString(dst, *p.URL)
	}
	if dst, err = jsonenc.AppendOptValue(dst, `,"data":`, p.Data); err != nil {
		return dst, err
	}
	dst = jsonenc.AppendOptString(dst, `,"mediaType":`, p.MediaType)
	dst = jsonenc.AppendOptString(dst, `,"filename":`, p.Filename)
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
	dst = jsonenc.AppendOptString(dst, `,"kind":`, m.Kind)
	dst = append(dst, `,"messageId":`...)
	dst = jsonenc.AppendString(dst, m.MessageID)
	dst = jsonenc.AppendOptString(dst, `,"contextId":`, m.ContextID)
	dst = jsonenc.AppendOptString(dst, `,"taskId":`, m.TaskID)
	dst = append(dst, `,"role":`...)
	dst = jsonenc.AppendString(dst, m.Role)
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
	dst = jsonenc.AppendString(dst, s.State)
	if s.Message != nil {
		dst = append(dst, `,"message":`...)
		var err error
		if dst, err = appendWireMessage(dst, s.Message); err != nil {
			return dst, err
		}
	}
	dst = jsonenc.AppendOptString(dst, `,"timestamp":`, s.Timestamp)
	return append(dst, '}'), nil
}

func appendWireArtifact(dst []byte, a *wireArtifact) ([]byte, error) {
	dst = append(dst, `{"artifactId":`...)
	dst = jsonenc.AppendString(dst, a.ArtifactID)
	dst = jsonenc.AppendOptString(dst, `,"name":`, a.Name)
	dst = jsonenc.AppendOptString(dst, `,"description":`, a.Description)
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
	dst = jsonenc.AppendOptString(dst, `,"kind":`, t.Kind)
	dst = append(dst, `,"id":`...)
	dst = jsonenc.AppendString(dst, t.ID)
	dst = append(dst, `,"contextId":`...)
	dst = jsonenc.AppendString(dst, t.ContextID)
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
	dst = jsonenc.AppendOptString(dst, `,"kind":`, kind)
	dst = jsonenc.AppendString(append(dst, `,"taskId":`...), taskID)
	dst = jsonenc.AppendString(append(dst, `,"contextId":`...), contextID)
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
