package turn

import (
	"encoding/json"
	"slices"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/prompt"
)

// entry metadata keys the fold reads back.
const (
	metaArtifactID = "artifactId"
	metaPartial    = prompt.MetaPartial
	metaMessage    = "message" // AGENT_REPLY: the reply is a direct Message, not an artifact
)

// replyParts are the parts of a reply (or its last chunk): the text, then the agent's
// further parts. The text part is left out when it is empty and there are further parts.
func replyParts(text string, extra []ledger.Part) []ledger.Part {
	if text == "" && len(extra) > 0 {
		return extra
	}
	return append([]ledger.Part{{Kind: ledger.PartText, Text: text}}, extra...)
}

// directMessage reports whether the agent's reply is a direct Message: a task left
// waiting for input or rejected is answered as a task, whose state the caller needs.
func directMessage(res agent.Result) bool {
	return res.Message && !res.InputRequired && !res.Rejected
}

// isMessageReply reports whether an AGENT_REPLY entry's metadata marks a direct Message.
func isMessageReply(b json.RawMessage) bool {
	var m struct {
		Message bool `json:"message"`
	}
	return len(b) > 0 && json.Unmarshal(b, &m) == nil && m.Message
}

// findReply returns a copy of the AGENT_REPLY entry among stored, nil if there is none.
func findReply(stored []ledger.Entry) *ledger.Entry {
	for i := range stored {
		if stored[i].Kind == ledger.KindAgentReply {
			e := stored[i]
			return &e
		}
	}
	return nil
}

// replyMessage is the agent Message of an AGENT_REPLY entry of task taskID.
func replyMessage(e *ledger.Entry, contextID, taskID string) a2a.Message {
	return a2a.Message{MessageID: e.MessageID, ContextID: contextID, TaskID: taskID,
		Role: a2a.RoleAgent, Parts: fromLedgerParts(e.Parts)}
}

func toLedgerParts(ps []a2a.Part) []ledger.Part {
	out := make([]ledger.Part, len(ps))
	for i, p := range ps {
		out[i] = ledger.Part{
			Kind:      string(p.Kind),
			Text:      p.Text,
			Data:      p.Data,
			Raw:       p.Raw,
			URL:       p.URL,
			MediaType: p.MediaType,
			Filename:  p.Filename,
			Metadata:  marshalMeta(p.Metadata),
		}
	}
	return out
}

func fromLedgerParts(ps []ledger.Part) []a2a.Part {
	out := make([]a2a.Part, len(ps))
	for i, p := range ps {
		out[i] = a2a.Part{
			Kind:      a2a.PartKind(p.Kind),
			Text:      p.Text,
			Data:      p.Data,
			Raw:       p.Raw,
			URL:       p.URL,
			MediaType: p.MediaType,
			Filename:  p.Filename,
			Metadata:  unmarshalMeta(p.Metadata),
		}
	}
	return out
}

func marshalMeta(m map[string]any) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil { // decoded from JSON, so it re-encodes; drop rather than fail the turn
		return nil
	}
	return b
}

func unmarshalMeta(b json.RawMessage) map[string]any {
	if len(b) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

func metaString(b json.RawMessage, key string) string {
	if len(b) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// replyArtifactID reads the artifactId an AGENT_REPLY entry's metadata records.
func replyArtifactID(b json.RawMessage) string {
	var m struct {
		ArtifactID string `json:"artifactId"`
	}
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.ArtifactID
}

// foldTask rebuilds a task from its ledger entries (seq order): history from the visible
// user and agent messages, artifacts from the agent replies (all their parts; not from a
// direct Message reply), status from the last STATUS entry. It is the only way a task record is made.
func foldTask(conv ledger.Conversation, taskID string, entries []ledger.Entry) a2a.Task {
	t := a2a.Task{ID: taskID, ContextID: conv.ContextID, Status: a2a.TaskStatus{State: a2a.StateSubmitted}}
	for i := range entries {
		e := &entries[i]
		switch e.Kind {
		case ledger.KindUserMessage:
			if e.Visibility != ledger.VisibilityModel {
				continue
			}
			t.History = append(t.History, a2a.Message{
				MessageID: e.MessageID, ContextID: conv.ContextID, TaskID: taskID,
				Role: a2a.RoleUser, Parts: fromLedgerParts(e.Parts), Metadata: unmarshalMeta(e.Metadata),
			})
		case ledger.KindAgentReply:
			msg := replyMessage(e, conv.ContextID, taskID)
			t.History = append(t.History, msg)
			id := replyArtifactID(e.Metadata)
			i := slices.IndexFunc(t.Artifacts, func(a a2a.Artifact) bool { return a.ArtifactID == id })
			switch {
			case isMessageReply(e.Metadata): // a direct Message is no artifact
				if i >= 0 {
					t.Artifacts = slices.Delete(t.Artifacts, i, i+1) // its text was streamed first
				}
			case i >= 0: // the whole reply, in place of its chunks
				t.Artifacts[i].Parts = msg.Parts
			default:
				t.Artifacts = append(t.Artifacts, a2a.Artifact{ArtifactID: id, Name: "reply", Parts: msg.Parts})
			}
		case ledger.KindReplyChunk:
			t.Artifacts = addChunk(t.Artifacts, e)
		case ledger.KindStatus:
			st, ok := a2a.DecodeState(e.State)
			if !ok {
				st = a2a.StateUnknown
			}
			t.Status = a2a.TaskStatus{State: st, Timestamp: e.CreatedAt}
			if len(e.Parts) > 0 {
				t.Status.Message = &a2a.Message{
					MessageID: e.MessageID, ContextID: conv.ContextID, TaskID: taskID,
					Role: a2a.RoleAgent, Parts: fromLedgerParts(e.Parts),
				}
			}
		}
	}
	return t
}

// addChunk adds the text of the REPLY_CHUNK entry e to its reply's artifact in arts (a new
// one for the first chunk), so that the task of a turn still streaming shows the reply so
// far: a stream that begins with its snapshot (tasks/resubscribe, a retried send) and
// goes on with the later chunks (append: true) then carries the whole reply.
func addChunk(arts []a2a.Artifact, e *ledger.Entry) []a2a.Artifact {
	id := replyArtifactID(e.Metadata)
	var text string
	for _, p := range e.Parts {
		text += p.Text
	}
	i := slices.IndexFunc(arts, func(a a2a.Artifact) bool { return a.ArtifactID == id })
	if i < 0 {
		return append(arts, a2a.Artifact{ArtifactID: id, Name: "reply", Parts: []a2a.Part{a2a.TextPart(text)}})
	}
	parts := arts[i].Parts
	parts[len(parts)-1].Text += text
	return arts
}

// applyHistoryLength trims t's history as the spec says: nil keeps all, 0 drops the field,
// N keeps the N newest.
func applyHistoryLength(t *a2a.Task, n *int) {
	switch {
	case n == nil:
	case *n == 0:
		t.History = nil
	case len(t.History) > *n:
		t.History = t.History[len(t.History)-*n:]
	}
}
