package turn

import (
	"encoding/json"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/redact"
)

// redactParts returns ps with the credentials in their text, in the strings of their
// data, and in file URLs replaced (X-3: the ledger never holds a pasted secret in clear),
// and how many parts changed. ps is not modified.
func redactParts(ps []a2a.Part) ([]a2a.Part, int) {
	var out []a2a.Part
	changed := 0
	for i := range ps {
		p := ps[i]
		orig := p
		p.Text = redact.Text(p.Text)
		var metaChanged bool
		p.Metadata, metaChanged = redactMeta(p.Metadata)
		p.URL = redact.Text(p.URL)
		if len(p.Data) > 0 {
			p.Data = redactJSON(p.Data)
		}
		if p.Text != orig.Text || p.URL != orig.URL || string(p.Data) != string(orig.Data) || metaChanged {
			if out == nil {
				out = append([]a2a.Part(nil), ps...)
			}
			out[i] = p
			changed++
		}
	}
	if out == nil {
		return ps, 0
	}
	return out, changed
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
