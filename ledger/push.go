package ledger

import (
	"bytes"
	"encoding/json"
	"time"
)

// Push notifications (issue #20) live in the ledger as entries of the task's
// conversation, so that they are durable, chained and committed with the events they
// report:
//
//   - a PUSH_CONFIG entry sets (or, with Deleted, removes) one push config of a task;
//   - a PUSH_OUTBOX entry is one notification to send, appended in the same Append as
//     the STATUS or artifact entry it reports; its entry ID is the stable event id;
//   - a PUSH_ATTEMPT entry records one delivery attempt of an outbox entry.
//
// All three are SYSTEM, AUDIT_ONLY, carry the task's id and hold their record (below) as
// the entry's Metadata. Each backend keeps two indexes next to the entries, updated in the
// commit that stores them (see [PushOps]): the live configs by (owner, task, config id),
// and the pending outbox entries, so that neither a task's configs nor the pending
// deliveries are found by scanning the ledger.

// The push entry kinds.
const (
	KindPushConfig  Kind = "PUSH_CONFIG"  // a task's push config set or deleted ([PushConfig])
	KindPushOutbox  Kind = "PUSH_OUTBOX"  // a notification to deliver ([PushOutbox])
	KindPushAttempt Kind = "PUSH_ATTEMPT" // one delivery attempt ([PushAttempt])
)

// isPush reports whether k is one of the push kinds.
func (k Kind) isPush() bool {
	return k == KindPushConfig || k == KindPushOutbox || k == KindPushAttempt
}

// PushConfig is the record of a PUSH_CONFIG entry.
type PushConfig struct {
	ID      string `json:"id"`                // the config's id, unique within the task
	Deleted bool   `json:"deleted,omitempty"` // the config with this id is removed
	// Dialect is the A2A version of the peer that set it ("1.0" or "0.3"): the
	// notifications are encoded in it.
	Dialect         string   `json:"dialect,omitempty"`
	URL             string   `json:"url,omitempty"`
	Token           string   `json:"token,omitempty"`
	AuthSchemes     []string `json:"authSchemes,omitempty"`
	AuthCredentials string   `json:"authCredentials,omitempty"`
}

// PushOutbox is the record of a PUSH_OUTBOX entry: what to send, and where.
type PushOutbox struct {
	ConfigID        string          `json:"configId"`
	URL             string          `json:"url"`
	Token           string          `json:"token,omitempty"`
	AuthScheme      string          `json:"authScheme,omitempty"`
	AuthCredentials string          `json:"authCredentials,omitempty"`
	ContentType     string          `json:"contentType"`
	Body            json.RawMessage `json:"body"` // the A2A payload (JSON)
}

// PushAttempt is the record of a PUSH_ATTEMPT entry.
type PushAttempt struct {
	OutboxSeq uint64    `json:"outboxSeq"` // the seq of the PUSH_OUTBOX entry in the conversation
	EventID   string    `json:"eventId"`   // its entry ID
	Attempt   int       `json:"attempt"`   // 1 for the first attempt
	Outcome   string    `json:"outcome"`   // push.Outcome: delivered, retry, refused, expired
	Final     bool      `json:"final,omitempty"`
	Status    int       `json:"status,omitempty"`    // HTTP status, 0 if none
	LatencyMs float64   `json:"latencyMs,omitempty"` // milliseconds
	Error     string    `json:"error,omitempty"`
	NextAt    time.Time `json:"nextAt,omitzero"` // when not final: the earliest next attempt
}

// PushRecord decodes e's push record into v (a *PushConfig, *PushOutbox or *PushAttempt
// matching e.Kind). Fields it does not know are ignored (a newer build may write more);
// Append refuses them.
func PushRecord(e *Entry, v any) error { return json.Unmarshal(e.Metadata, v) }

// strictRecord decodes a push record of a request, refusing unknown fields.
func strictRecord(e *Entry, v any) error {
	d := json.NewDecoder(bytes.NewReader(e.Metadata))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// validatePush checks a push entry of a request: task id, trust, visibility, and a
// record that decodes and has its required fields.
func validatePush(i int, e *Entry) error {
	switch {
	case e.TaskID == "":
		return invalidEntry(i, "taskId", "a %s entry needs its task", e.Kind)
	case e.Trust != TrustSystem:
		return invalidEntry(i, "trust", "a %s entry is %s", e.Kind, TrustSystem)
	case e.Visibility != VisibilityAudit:
		return invalidEntry(i, "visibility", "a %s entry is %s", e.Kind, VisibilityAudit)
	case len(e.Metadata) == 0:
		return invalidEntry(i, "metadata", "a %s entry holds its record", e.Kind)
	}
	var reason string
	switch e.Kind {
	case KindPushConfig:
		var c PushConfig
		reason = decodeReason(strictRecord(e, &c), c.ID == "" || (!c.Deleted && c.URL == ""), "id and url are required")
	case KindPushOutbox:
		var o PushOutbox
		reason = decodeReason(strictRecord(e, &o), o.ConfigID == "" || o.URL == "" || o.ContentType == "" || !json.Valid(o.Body),
			"configId, url, contentType and a JSON body are required")
	case KindPushAttempt:
		var a PushAttempt
		reason = decodeReason(strictRecord(e, &a), a.OutboxSeq == 0 || a.Outcome == "" || a.Attempt < 1,
			"outboxSeq, outcome and attempt ≥ 1 are required")
	}
	if reason != "" {
		return invalidEntry(i, "metadata", "%s record: %s", e.Kind, reason)
	}
	return nil
}

func decodeReason(err error, missing bool, what string) string {
	switch {
	case err != nil:
		return err.Error()
	case missing:
		return what
	}
	return ""
}

// PushOpKind says what a [PushOp] does to the push indexes.
type PushOpKind int

// The push index operations.
const (
	PushConfigPut    PushOpKind = iota + 1 // index config (Owner, TaskID, ConfigID) at (ConvKey, Seq)
	PushConfigDelete                       // drop config (Owner, TaskID, ConfigID)
	PushOutboxAdd                          // the outbox entry (ConvKey, Seq) is pending
	PushAttemptRetry                       // the outbox entry (ConvKey, Seq) had Attempts attempts; next at NextAt
	PushAttemptFinal                       // the outbox entry (ConvKey, Seq) is done: no longer pending
)

// PushOp is one change of the push indexes that a committed entry makes. Backends apply
// the ops of an Append's stored entries, in order, in the transaction that stores them.
type PushOp struct {
	Op                      PushOpKind
	ConvKey                 string
	Owner, TaskID, ConfigID string
	Seq                     uint64 // the config or outbox entry's seq
	Created                 time.Time
	Attempts                int
	NextAt                  time.Time
}

// PushOps returns the index operations of entries (as stored, with their seqs) of the
// conversation at key. Entries that are not push entries make none.
func PushOps(key string, entries []Entry) []PushOp {
	var ops []PushOp
	for i := range entries {
		e := &entries[i]
		if !e.Kind.isPush() {
			continue
		}
		op := PushOp{ConvKey: key, Owner: e.Owner, TaskID: e.TaskID, Seq: e.Seq, Created: e.CreatedAt}
		switch e.Kind {
		case KindPushConfig:
			var c PushConfig
			_ = PushRecord(e, &c) // validated by prepare
			op.Op, op.ConfigID = PushConfigPut, c.ID
			if c.Deleted {
				op.Op = PushConfigDelete
			}
		case KindPushOutbox:
			op.Op = PushOutboxAdd
		case KindPushAttempt:
			var a PushAttempt
			_ = PushRecord(e, &a)
			op.Op, op.Seq, op.Attempts, op.NextAt = PushAttemptRetry, a.OutboxSeq, a.Attempt, a.NextAt
			if a.Final {
				op.Op = PushAttemptFinal
			}
		}
		ops = append(ops, op)
	}
	return ops
}

// PendingPush is an outbox entry not yet delivered or given up, with its delivery state.
type PendingPush struct {
	Entry    Entry     // the PUSH_OUTBOX entry
	Attempts int       // attempts recorded so far
	NextAt   time.Time // earliest next attempt (zero: now)
}

// pendingState is the value of a pending outbox entry in an index.
type pendingState struct {
	TaskID   string    `json:"t"`
	Created  time.Time `json:"c"`
	Attempts int       `json:"a,omitempty"`
	NextAt   time.Time `json:"n,omitzero"`
}
