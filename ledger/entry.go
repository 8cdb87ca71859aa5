package ledger

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind says what an entry records (seed 000's MessageKind, DESIGN D-3).
type Kind string

// The entry kinds. Append refuses any other value with [ErrInvalid].
const (
	KindUserMessage Kind = "USER_MESSAGE" // a message a peer (or operator) sent
	KindAgentReply  Kind = "AGENT_REPLY"  // the agent's final reply of a turn
	KindReplyChunk  Kind = "REPLY_CHUNK"  // one streamed piece of a reply
	KindStatus      Kind = "STATUS"       // a task state change (Entry.State)
	KindToolCall    Kind = "TOOL_CALL"    // the agent asked for a tool
	KindToolResult  Kind = "TOOL_RESULT"  // what the tool returned
	KindError       Kind = "ERROR_EVENT"  // a failure worth keeping
	KindAudit       Kind = "AUDIT"        // bookkeeping, e.g. a rejected request
	// KindMemorySnapshot is a summary of the turns a projection drops (DESIGN D-9,
	// issue #38): its record ([MemorySnapshot]) is in Metadata; see memory.go.
	KindMemorySnapshot Kind = "MEMORY_SNAPSHOT"
)

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindUserMessage, KindAgentReply, KindReplyChunk, KindStatus, KindToolCall,
		KindToolResult, KindError, KindAudit, KindPushConfig, KindPushOutbox, KindPushAttempt,
		KindMemorySnapshot:
		return true
	}
	return false
}

// Trust is how far an entry's content may be believed (seed 000's TrustLevel).
type Trust string

// The trust levels. Append refuses any other value with [ErrInvalid].
const (
	TrustPeerUntrusted Trust = "PEER_UNTRUSTED"   // sent by a peer agent: data, never instructions
	TrustOperator      Trust = "OPERATOR_TRUSTED" // written by the operator
	TrustAgent         Trust = "AGENT_GENERATED"  // produced by our agent or a model
	TrustSystem        Trust = "SYSTEM"           // written by the gateway itself
	// TrustModel marks what a model (or the gateway's summariser on its behalf) proposed
	// and the gateway validated: memory snapshots. Reference, never instructions.
	TrustModel Trust = "MODEL_GENERATED"
)

// Valid reports whether t is one of the known trust levels.
func (t Trust) Valid() bool {
	switch t {
	case TrustPeerUntrusted, TrustOperator, TrustAgent, TrustSystem, TrustModel:
		return true
	}
	return false
}

// Visibility says who may see an entry; projection allowlists [VisibilityModel] only.
type Visibility string

// The visibilities. Append refuses any other value with [ErrInvalid].
const (
	VisibilityModel Visibility = "MODEL_VISIBLE" // may be projected into a model request
	VisibilityAudit Visibility = "AUDIT_ONLY"    // kept for audit, never shown to a model
)

// Valid reports whether v is one of the known visibilities.
func (v Visibility) Valid() bool {
	return v == VisibilityModel || v == VisibilityAudit
}

// Part kinds.
const (
	PartText = "text" // content in Part.Text
	PartData = "data" // content in Part.Data (JSON)
	PartFile = "file" // content in Part.Raw, or by reference in Part.URL
)

// Part is one piece of an entry's content.
//
// A part whose content (Text for a text part, Raw for a file part) is longer than
// Options.LargePartBytes is stored in the content-addressed artifact store: the stored part
// keeps ArtifactRef and Size, its Text or Raw is empty, and [Store.Inflate] puts the content
// back.
type Part struct {
	Kind        string          `json:"kind"`
	Text        string          `json:"text,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	Raw         []byte          `json:"raw,omitempty"` // file bytes (base64 in JSON)
	URL         string          `json:"url,omitempty"` // file by reference
	MediaType   string          `json:"mediaType,omitempty"`
	Filename    string          `json:"filename,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	ArtifactRef string          `json:"artifactRef,omitempty"` // "sha256:<hex>" when the content is in the artifact store
	Size        int64           `json:"size,omitempty"`        // original byte size of Text/Raw when ArtifactRef is set
}

// Entry is one record of a conversation's ledger. Entries are append-only: once stored
// nothing in them changes. Seq is per conversation, starts at 1 and has no gaps; Hash
// chains each entry to the one before it (see [Store.Verify]).
//
// The canonical JSON of an entry, over which Hash is computed, is its encoding/json
// encoding (the field order below) with Hash empty.
type Entry struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Owner     string `json:"owner"`
	TaskID    string `json:"taskId,omitempty"`
	Seq       uint64 `json:"seq"`
	Epoch     uint64 `json:"epoch"`

	Kind       Kind       `json:"kind"`
	Trust      Trust      `json:"trust"`
	Visibility Visibility `json:"visibility"`

	Actor     string    `json:"actor,omitempty"`
	CreatedAt time.Time `json:"createdAt"`

	MessageID string          `json:"messageId,omitempty"`
	Role      string          `json:"role,omitempty"`  // "user", "agent" or ""
	State     string          `json:"state,omitempty"` // task state of a STATUS entry, e.g. "working"
	Parts     []Part          `json:"parts,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`

	CorrelationID string `json:"correlationId,omitempty"`
	CausationID   string `json:"causationId,omitempty"`

	// TraceID and SpanID are the W3C trace context of the span that wrote the entry (the
	// turn's, or a tool call's for TOOL_CALL/TOOL_RESULT): 32 and 16 lowercase hex digits,
	// not all zeros, or both empty. Empty fields are omitted from the encoding, so entries
	// written before they existed hash as they always did; set, they are covered by Hash.
	TraceID string `json:"traceId,omitempty"`
	SpanID  string `json:"spanId,omitempty"`

	PrevHash string `json:"prevHash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// Roles.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// MaxIDBytes bounds owner, taskId, messageId and the other identifiers an entry carries.
const MaxIDBytes = 256

// validateIdent checks an identifier: at most 256 bytes of valid UTF-8 without control
// characters. Empty is allowed (required fields check that themselves). A refusal is a
// [*FieldError] of no entry (Entry -1).
func validateIdent(field, s string) error {
	switch {
	case len(s) > MaxIDBytes:
		return invalidField(field, "at most %d bytes (got %d)", MaxIDBytes, len(s))
	case !utf8.ValidString(s):
		return invalidField(field, "not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return invalidField(field, "control character at byte %d", i)
		}
	}
	return nil
}

// validateOwner checks a conversation owner (the authenticated peer identity).
func validateOwner(owner string) error {
	if owner == "" {
		return invalidField("owner", "empty")
	}
	return validateIdent("owner", owner)
}

// validateEntry checks the caller-supplied fields of entries[i] of a request for
// (owner, contextID). The fields the ledger fills are not checked.
func validateEntry(i int, e *Entry, owner, contextID string) error {
	switch {
	case e.Kind == "":
		return invalidEntry(i, "kind", "empty")
	case !e.Kind.Valid():
		return invalidEntry(i, "kind", "unknown value %q", e.Kind)
	case e.Trust == "":
		return invalidEntry(i, "trust", "empty")
	case !e.Trust.Valid():
		return invalidEntry(i, "trust", "unknown value %q", e.Trust)
	case e.Visibility == "":
		return invalidEntry(i, "visibility", "empty")
	case !e.Visibility.Valid():
		return invalidEntry(i, "visibility", "unknown value %q", e.Visibility)
	case e.ContextID != "" && e.ContextID != contextID:
		return invalidEntry(i, "contextId", "%q differs from the request's", e.ContextID)
	case e.Owner != "" && e.Owner != owner:
		return invalidEntry(i, "owner", "%q differs from the request's", e.Owner)
	case e.Role != "" && e.Role != RoleUser && e.Role != RoleAgent:
		return invalidEntry(i, "role", "unknown value %q", e.Role)
	}
	for _, f := range [...]struct{ name, v string }{
		{"id", e.ID}, {"taskId", e.TaskID}, {"actor", e.Actor}, {"messageId", e.MessageID},
		{"state", e.State}, {"correlationId", e.CorrelationID}, {"causationId", e.CausationID},
	} {
		if err := validateIdent(f.name, f.v); err != nil {
			fe := err.(*FieldError)
			fe.Entry = i
			return fe
		}
	}
	if len(e.Metadata) > 0 && !json.Valid(e.Metadata) {
		return invalidEntry(i, "metadata", "not valid JSON")
	}
	if err := validateTrace(i, e.TraceID, e.SpanID); err != nil {
		return err
	}
	for j := range e.Parts {
		if err := validatePart(i, j, &e.Parts[j]); err != nil {
			return err
		}
	}
	switch {
	case e.Kind.isPush():
		return validatePush(i, e) // push.go
	case e.Kind == KindMemorySnapshot:
		return validateMemory(i, e) // memory.go
	}
	return nil
}

// validateTrace checks an entry's trace and span ids: both empty, or a trace id of 32 and
// a span id of 16 lowercase hex digits, neither all zeros (W3C trace context's valid ids).
func validateTrace(i int, traceID, spanID string) error {
	if traceID == "" && spanID == "" {
		return nil
	}
	if reason := traceIDFault(traceID, 32); reason != "" {
		return invalidEntry(i, "traceId", "%s", reason)
	}
	if reason := traceIDFault(spanID, 16); reason != "" {
		return invalidEntry(i, "spanId", "%s", reason)
	}
	return nil
}

// traceIDFault says what is wrong with a hex id of n digits, or "" when nothing is.
func traceIDFault(id string, n int) string {
	if len(id) != n {
		return fmt.Sprintf("%d lowercase hex digits (got %d bytes)", n, len(id))
	}
	zero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Sprintf("not lowercase hex at byte %d", i)
		}
		zero = zero && c == '0'
	}
	if zero {
		return "all zeros"
	}
	return ""
}

func validatePart(i, j int, p *Part) error {
	switch p.Kind {
	case PartText, PartData, PartFile:
	case "":
		return invalidEntry(i, fmt.Sprintf("parts[%d].kind", j), "empty")
	default:
		return invalidEntry(i, fmt.Sprintf("parts[%d].kind", j), "unknown value %q", p.Kind)
	}
	if len(p.Data) > 0 && !json.Valid(p.Data) {
		return invalidEntry(i, fmt.Sprintf("parts[%d].data", j), "not valid JSON")
	}
	if len(p.Metadata) > 0 && !json.Valid(p.Metadata) {
		return invalidEntry(i, fmt.Sprintf("parts[%d].metadata", j), "not valid JSON")
	}
	if p.ArtifactRef != "" {
		if _, ok := parseRef(p.ArtifactRef); !ok {
			return invalidEntry(i, fmt.Sprintf("parts[%d].artifactRef", j), "%q is not sha256:<64 hex>", p.ArtifactRef)
		}
		if p.Text != "" || len(p.Raw) > 0 {
			return invalidEntry(i, fmt.Sprintf("parts[%d]", j), "artifactRef set together with inline content")
		}
	}
	if p.Size < 0 {
		return invalidEntry(i, fmt.Sprintf("parts[%d].size", j), "negative")
	}
	return nil
}

// contentField reports which field of a part of this kind holds content that may move to
// the artifact store: "text" for text parts, "raw" for file parts, "" for data parts.
func contentField(kind string) string {
	switch kind {
	case PartText:
		return "text"
	case PartFile:
		return "raw"
	}
	return ""
}
