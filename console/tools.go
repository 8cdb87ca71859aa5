package console

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// toolMeta is the metadata of a TOOL_CALL or TOOL_RESULT entry as tools/record.go writes
// it; the outbound fields are set on the result of a peer_send that made (or continued)
// an outbound conversation, whose owner and contextId they are.
type toolMeta struct {
	ToolCallID        string `json:"toolCallId"`
	ToolName          string `json:"toolName"`
	Outcome           string `json:"outcome"`
	Peer              string `json:"peer"`
	OutboundOwner     string `json:"outboundOwner"`
	OutboundContextID string `json:"outboundContextId"`
	RemoteTaskID      string `json:"remoteTaskId"`
	State             string `json:"state"`
}

// toolView is how the timeline shows a tool call or result: the tool's name, the call's
// arguments readably (Args: " → carol: \"hello…\"" for peer_send, "(contextId: \"x\",
// limit: 5)" otherwise), the result's outcome, and the outbound conversation a peer_send
// made, on the call and on its result.
type toolView struct {
	Call         bool
	Name         string
	Args         string
	Outcome      string
	OutcomeClass string       // ok, refused, failed or other (a CSS class)
	Outbound     template.URL // the query naming the outbound conversation ("": none)
	OutboundID   string       // its contextId
	OutboundPeer string
}

// outboundOf maps each tool call's entry id to the outbound conversation its result
// names (a result's CausationID is its call's entry id).
func outboundOf(entries []ledger.Entry) map[string]toolMeta {
	out := map[string]toolMeta{}
	for _, e := range entries {
		if m, ok := readToolMeta(e); ok && e.Kind == ledger.KindToolResult && m.OutboundContextID != "" && e.CausationID != "" {
			out[e.CausationID] = m
		}
	}
	return out
}

func readToolMeta(e ledger.Entry) (toolMeta, bool) {
	var m toolMeta
	if e.Kind != ledger.KindToolCall && e.Kind != ledger.KindToolResult {
		return m, false
	}
	if len(e.Metadata) > 0 && json.Unmarshal(e.Metadata, &m) != nil {
		m = toolMeta{}
	}
	return m, true
}

// toolViewOf is e's tool view (nil for an entry that is neither a tool call nor a
// result); outbound is [outboundOf] the conversation's entries.
func toolViewOf(e ledger.Entry, outbound map[string]toolMeta) *toolView {
	m, ok := readToolMeta(e)
	if !ok {
		return nil
	}
	v := &toolView{Call: e.Kind == ledger.KindToolCall, Name: redact.Text(m.ToolName)}
	if v.Name == "" {
		v.Name = "(unnamed tool)"
	}
	if v.Call {
		v.Args = redact.Text(callArgs(m.ToolName, entryText(e)))
		m = outbound[e.ID]
	} else {
		v.Outcome, v.OutcomeClass = m.Outcome, "other"
		switch m.Outcome {
		case "ok", "refused", "failed":
			v.OutcomeClass = m.Outcome
		}
	}
	if m.OutboundContextID != "" {
		v.Outbound = convQuery(m.OutboundContextID, m.OutboundOwner)
		v.OutboundID, v.OutboundPeer = m.OutboundContextID, m.Peer
		if v.OutboundPeer == "" {
			v.OutboundPeer = m.OutboundOwner
		}
	}
	return v
}

// argCut is how many characters of one argument a tool call's line shows.
const argCut = 120

// callArgs renders a call's arguments (its entry's text: the JSON the model wrote,
// redacted when stored): a peer_send as " → target: \"message\"", any other object as
// "(key: value, …)" in the model's order, anything else as "(text)"; each value cut at
// argCut characters.
func callArgs(name, args string) string {
	fields, ok := objectFields(args)
	if !ok {
		return "(" + cut(strings.TrimSpace(args)) + ")"
	}
	if name == "peer_send" {
		if s, ok := peerSendArgs(fields); ok {
			return s
		}
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = bare(f.key) + ": " + f.show()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// peerSendArgs renders peer_send's {"target", "message", "contextId"?}; false for any
// other shape.
func peerSendArgs(fields []field) (string, bool) {
	var target, message, contextID *string
	for _, f := range fields {
		var s string
		if len(f.raw) == 0 || f.raw[0] != '"' || json.Unmarshal(f.raw, &s) != nil {
			return "", false // peer_send's arguments are strings
		}
		switch f.key {
		case "target":
			target = &s
		case "message":
			message = &s
		case "contextId":
			contextID = &s
		default:
			return "", false
		}
	}
	if target == nil || message == nil {
		return "", false
	}
	in := ""
	if contextID != nil && *contextID != "" {
		in = " (in " + strconv.Quote(cut(*contextID)) + ")"
	}
	return " → " + bare(*target) + in + ": " + strconv.Quote(cut(*message)), true
}

// field is one key of a JSON object and its raw value.
type field struct {
	key string
	raw json.RawMessage
}

// show is the value as a call's line shows it: a string quoted, anything else as JSON;
// cut.
func (f field) show() string {
	var s string
	if len(f.raw) > 0 && f.raw[0] == '"' && json.Unmarshal(f.raw, &s) == nil {
		return strconv.Quote(cut(s))
	}
	var b bytes.Buffer
	if json.Compact(&b, f.raw) != nil {
		return cut(string(f.raw))
	}
	return cut(b.String())
}

// objectFields reads s as one JSON object, its keys in order; false when it is not one.
func objectFields(s string) ([]field, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, false
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return nil, false
		}
		out = append(out, field{key: key, raw: raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // something after the object
	}
	return out, true
}

// bare is s as it is when it reads unambiguously (printable, no space, quote, colon or
// comma), else quoted.
func bare(s string) string {
	if s != "" && strconv.Quote(s) == `"`+s+`"` && !strings.ContainsAny(s, " :,()→") {
		return s
	}
	return strconv.Quote(s)
}

// cut shortens s to argCut characters and an ellipsis, never inside a redaction
// placeholder (the page marks whole placeholders only).
func cut(s string) string { return redact.Cut(s, argCut) }

// originView links an outbound message to the tool call that sent it: the conversation
// whose turn made the call (Link names it) and the call's entry (Anchor, the fragment of
// its row there).
type originView struct {
	Link      template.URL
	Anchor    string
	ContextID string
	Owner     string
}

// originOf is the origin of an outbound USER_MESSAGE that a tool call sent
// (conversations.OriginKey in its metadata), or nil.
func originOf(e ledger.Entry) *originView {
	if e.Kind != ledger.KindUserMessage || len(e.Metadata) == 0 {
		return nil
	}
	var m map[string]conversations.Origin
	if json.Unmarshal(e.Metadata, &m) != nil {
		return nil
	}
	o, ok := m[conversations.OriginKey]
	if !ok || o.ContextID == "" || o.Owner == "" {
		return nil
	}
	v := &originView{Link: convQuery(o.ContextID, o.Owner), ContextID: o.ContextID, Owner: o.Owner}
	if o.EntryID != "" {
		v.Anchor = "e-" + o.EntryID
	}
	return v
}
