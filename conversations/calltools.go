package conversations

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// resultCut is how many characters of a tool result a call tree shows.
const resultCut = 300

// outboundMeta is what a TOOL_CALL or TOOL_RESULT entry's metadata says (as package tools
// writes it, tools/record.go): the tool, the outcome, and for a peer_send that reached a
// peer, the peer and the outbound conversation's contextId and state. (Its
// outboundOwner is never read: the scope decides the owner.)
type outboundMeta struct {
	ToolName  string `json:"toolName"`
	Outcome   string `json:"outcome"`
	Peer      string `json:"peer"`
	ContextID string `json:"outboundContextId"`
	State     string `json:"state"`
}

func toolMetaOf(e *ledger.Entry) outboundMeta {
	var m outboundMeta
	if len(e.Metadata) > 0 && json.Unmarshal(e.Metadata, &m) != nil {
		return outboundMeta{}
	}
	return m
}

// resultLinks maps each tool call's entry id to what its result's metadata says (a
// result's CausationID is its call's entry id).
func resultLinks(entries []ledger.Entry) map[string]outboundMeta {
	out := map[string]outboundMeta{}
	for i := range entries {
		if e := &entries[i]; e.Kind == ledger.KindToolResult && e.CausationID != "" {
			out[e.CausationID] = toolMetaOf(e)
		}
	}
	return out
}

// toolCalls are the TOOL_CALL entries of entries with their results, oldest first (only
// the one whose entry id is only, when only is not ""). Names, arguments and results are
// redacted again on the way out, as every text the service shows.
func toolCalls(entries []ledger.Entry, only string) []ToolCall {
	results := map[string]*ledger.Entry{}
	for i := range entries {
		if e := &entries[i]; e.Kind == ledger.KindToolResult && e.CausationID != "" {
			results[e.CausationID] = e
		}
	}
	var out []ToolCall
	for i := range entries {
		e := &entries[i]
		if e.Kind != ledger.KindToolCall || (only != "" && e.ID != only) {
			continue
		}
		c := ToolCall{EntryID: e.ID, Seq: e.Seq, Name: redact.Text(toolMetaOf(e).ToolName), At: e.CreatedAt}
		c.Args, c.ArgsText = callArgs(partsText(e.Parts))
		if r := results[e.ID]; r != nil {
			c.Outcome = redact.Text(toolMetaOf(r).Outcome)
			c.Result = redact.Cut(redact.Text(partsText(r.Parts)), resultCut)
			c.LatencyMS = millis(r.CreatedAt.Sub(e.CreatedAt))
		}
		out = append(out, c)
	}
	return out
}

// partsText joins an entry's text parts.
func partsText(parts []ledger.Part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// callArgs reads a call's arguments (the JSON the model wrote): an object as its
// top-level keys in order, each value a string as it is or other JSON compacted (all
// redacted); anything else as its redacted text.
func callArgs(s string) ([]Arg, string) {
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, redact.Text(s)
	}
	var out []Arg
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var raw json.RawMessage
		if err != nil || !ok || dec.Decode(&raw) != nil {
			return nil, redact.Text(s)
		}
		out = append(out, Arg{Key: redact.Text(key), Value: redact.Text(argValue(raw))})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, redact.Text(s)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, redact.Text(s) // something after the object
	}
	if out == nil {
		out = []Arg{}
	}
	return out, ""
}

// argValue is a string value as it is, any other value as compact JSON.
func argValue(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
