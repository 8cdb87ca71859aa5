package turn

import (
	"encoding/json"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/redact"
)

// redactParts returns ps with the credentials in their text, in the strings of their
// data, in file URLs, names and media types, in a file's inline bytes when they are text
// (redact.File: a text/* media type, or valid UTF-8), and in their metadata replaced (X-3: the
// ledger never holds a pasted secret in clear), and how many parts changed. Each run of
// consecutive text parts is also redacted as the one text the agent reads
// (redact.Texts): a credential split across two parts is recognised. ps is not modified.
func redactParts(ps []a2a.Part) ([]a2a.Part, int) {
	out := append([]a2a.Part(nil), ps...)
	changed := make([]bool, len(ps))
	// The runs of text parts as one text first (a key whose first part alone looks
	// complete still takes its rest from the next part), then each part on its own (a
	// credential the joint text hides, "x" + "sk-…" read as "xsk-…", is still found).
	for start := 0; start < len(out); start++ {
		end := start
		for end < len(out) && out[end].Kind == a2a.PartText {
			end++
		}
		if end-start < 2 {
			continue
		}
		texts := make([]string, 0, end-start)
		for _, p := range out[start:end] {
			texts = append(texts, p.Text)
		}
		for k, t := range redact.Texts(texts) {
			if t != texts[k] {
				out[start+k].Text, changed[start+k] = t, true
			}
		}
		start = end
	}
	n := 0
	for i := range out {
		var c bool
		out[i], c = redactPart(out[i])
		changed[i] = changed[i] || c
		if changed[i] {
			n++
		}
	}
	if n == 0 {
		return ps, 0
	}
	return out, n
}

// redactPart returns p with the credentials in its free-text fields replaced, and
// whether anything changed.
func redactPart(p a2a.Part) (a2a.Part, bool) {
	orig := p
	p.Text = redact.Text(p.Text)
	var metaChanged bool
	p.Metadata, metaChanged = redactMeta(p.Metadata)
	p.URL = redact.Text(p.URL)
	p.Filename = redact.Text(p.Filename)
	p.MediaType = redact.Text(p.MediaType)
	if len(p.Data) > 0 {
		p.Data = redactJSON(p.Data)
	}
	p.Raw, _ = redact.File(orig.MediaType, p.Raw)
	return p, p.Text != orig.Text || p.URL != orig.URL || p.Filename != orig.Filename ||
		p.MediaType != orig.MediaType || string(p.Data) != string(orig.Data) || metaChanged ||
		string(p.Raw) != string(orig.Raw)
}

// credentialIDs refuses a message whose contextId, messageId or taskId holds what looks
// like a credential: an id is the conversation's (or message's, task's) identity, stored
// and echoed as it is, so it is refused rather than rewritten (-32602 naming the field;
// nothing is stored, not even an audit entry).
func credentialIDs(m *a2a.Message) error {
	for _, id := range []struct{ field, v string }{
		{"message.contextId", m.ContextID}, {"message.messageId", m.MessageID}, {"message.taskId", m.TaskID},
	} {
		if _, n := redact.TextCount(id.v); n > 0 {
			return &paramError{Field: id.field, Reason: "looks like a credential; use an id that holds no secret (nothing was stored)"}
		}
	}
	return nil
}

// redactJSON redacts every string (keys included) of a JSON document; a document that does
// not decode is redacted as text.
func redactJSON(b json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return json.RawMessage(redact.Text(string(b)))
	}
	v, changed := redactValue(v)
	if !changed {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(redact.Text(string(b)))
	}
	return out
}

func redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		r := redact.Text(x)
		return r, r != x
	case []any:
		changed := false
		for i := range x {
			var c bool
			x[i], c = redactValue(x[i])
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, val := range x {
			nv, c := redactValue(val)
			nk := redact.Text(k)
			out[nk] = nv
			changed = changed || c || nk != k
		}
		return out, changed
	}
	return v, false
}

// redactMeta returns metadata with the credentials in its strings (keys included)
// replaced, and whether anything changed; m itself is not modified.
func redactMeta(m map[string]any) (map[string]any, bool) {
	if len(m) == 0 {
		return m, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m, false
	}
	var cp map[string]any
	if json.Unmarshal(b, &cp) != nil {
		return m, false
	}
	v, changed := redactValue(cp)
	if !changed {
		return m, false
	}
	out, _ := v.(map[string]any)
	return out, true
}
